"""The Mission Control application: routes, static files, the live follower, probes and metrics.

Routes (read-only; every one answers GET only)::

    /                          → /incidents
    /incidents                 Incidents page (filters: ?state=ACTIVE|RESOLVED&severity=HIGH|…&q=text)
    /incidents/table           its table alone (what the page re-fetches on a live update)
    /incidents/{urn}           Incident page: the decision per affected group first (recommendation, gate, owners,
                               next step), then severity, window, failed rows, then the evidence (blast graph and
                               its text, timeline, verdicts, writes, postmortem); a dataset or assertion URN
                               redirects to its incident
    /fragments/gate?model=URN  one group's retrain gate (what the incident and Models pages fetch apart)
    /models                    Models page: groups, versions, verdicts, rollback targets, gate checks
    /protect                   Protect page: reliability scores, ranked gaps, dbt YAML
    /api/incidents[/{urn}]     JSON twins (the answers' to_json(); /api/models, /api/protect alike)
    /api/gate?model=URN[&at=]  the retrain gate exactly as ``pareis gate --json`` prints it (continuous learners)
    /events                    server-sent events: ``incidents`` whenever the incident store changes
    /healthz  /readyz  /metrics

Every page follows changes over ``/events`` (the Incidents page re-fetches its table, the others their ``<main>``,
swapped in only when it changed) and says so in its header: live, reconnecting, or stale since the stream broke;
a page over files (no incident store) says it is a snapshot, and at what time it is evaluated. An unknown route is
a 404 page that names what was asked for.

``/readyz`` reads the change token, so it fails while Redis is unreachable; ``/healthz`` only says the process
serves. Metrics: ``pareis_web_requests_total{route,status}``, ``pareis_web_request_seconds{route}`` and
``pareis_web_streams`` (open event streams), in a registry of the app's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from pareis.answers.changes import incidents_revision
from pareis.answers.sources import Sources, SourceUnavailable
from pareis.web import pages
from pareis.web.context import HERE, Context
from pareis.web.guard import TokenGuard
from pareis.web.live import Follower


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


def fixed_clock(at_ms: int) -> Callable[[], int]:
    """A clock that always reads ``at_ms`` (``serve --at``, a snapshot's newest time)."""
    return lambda: at_ms


def create_app(
    sources: Sources,
    *,
    token: str | None = None,
    clock: Callable[[], int] = wall_clock_ms,
    guard: contextlib.AbstractContextManager[object] | None = None,
    poll_s: float = 0.25,
    collapse_over: int | None = None,
    list_ttl_s: float = 30.0,
    clock_fixed: bool = False,
) -> Starlette:
    """Mission Control over ``sources`` (opened and closed by the caller).

    ``token``: required on every page and API call when given (:mod:`pareis.web.guard`). ``clock``: the evaluation
    time of the gate and reliability answers (ms); ``clock_fixed``: it is a time given (``--at``, a snapshot's
    newest time), which every page then states. ``guard``: held around every answer (see :mod:`pareis.web.pages`).
    ``poll_s``: how often the live follower reads the change token. ``collapse_over``: columns past which the blast
    graph is drawn by dataset (default :data:`pareis.answers.graph.COLLAPSE_OVER`). ``list_ttl_s``: how old the kept
    incident list may get before the follower recomputes it (:meth:`pareis.web.context.Context.incidents`; 0: pages
    compute it on every request).
    """

    def revision() -> str:
        if guard is None:
            return incidents_revision(sources)
        with guard:
            return incidents_revision(sources)

    ctx = Context(sources, clock, guard, collapse_over, list_ttl_s=list_ttl_s, clock_fixed=clock_fixed)

    async def changed() -> None:
        if ctx.list_ttl_s > 0:
            with contextlib.suppress(SourceUnavailable):  # the pages report it; the stream goes on
                await ctx.refresh()

    async def tick() -> None:
        if ctx.list_ttl_s > 0:
            await ctx.expire()

    follower = Follower(revision, interval_s=poll_s, on_change=changed, on_tick=tick)
    ctx.token = lambda: str(follower.seq)
    registry = CollectorRegistry()
    requests = Counter("pareis_web_requests", "HTTP requests served", ["route", "status"], registry=registry)
    seconds = Histogram("pareis_web_request_seconds", "Time to answer a request", ["route"], registry=registry)
    streams = Gauge("pareis_web_streams", "Open event streams", registry=registry)

    def page(handler: pages.Handler, name: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            response = await handler(ctx, request)
            seconds.labels(name).observe(time.perf_counter() - started)
            requests.labels(name, str(response.status_code)).inc()
            return response

        return endpoint

    async def events(request: Request) -> Response:
        since = request.query_params.get("since")

        async def stream() -> AsyncIterator[dict[str, str]]:
            streams.inc()
            try:
                async for token in follower.changes(since):
                    yield {"event": "incidents", "data": token}
            finally:
                streams.dec()

        return EventSourceResponse(stream(), ping=15)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True, "details": {"web": "ok"}})

    async def readyz(request: Request) -> Response:
        try:
            await run_in_threadpool(revision)
        except SourceUnavailable as exc:
            return JSONResponse({"ok": False, "details": {"sources": str(exc)}}, 503)
        return JSONResponse({"ok": True, "details": {"sources": "ok"}})

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    async def home(request: Request) -> Response:
        return RedirectResponse("/incidents", 303)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await follower.start()
        warming = asyncio.create_task(changed())  # the first list, computed while the server already answers
        try:
            yield
        finally:
            warming.cancel()
            await follower.stop()

    routes = [
        Route("/", home),
        Route("/incidents", page(pages.incidents_page, "incidents")),
        Route("/incidents/table", page(pages.incidents_table, "incidents_table")),
        Route("/incidents/{urn:path}", page(pages.incident_page, "incident")),
        Route("/fragments/gate", page(pages.gate_fragment, "gate_fragment")),
        Route("/models", page(pages.models_page, "models")),
        Route("/protect", page(pages.protect_page, "protect")),
        Route("/api/incidents", page(pages.incidents_api, "api_incidents")),
        Route("/api/incidents/{urn:path}", page(pages.incident_api, "api_incident")),
        Route("/api/models", page(pages.models_api, "api_models")),
        Route("/api/protect", page(pages.protect_api, "api_protect")),
        Route("/api/gate", page(pages.gate_api, "api_gate")),
        Route("/events", events),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]

    async def missing(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        response = await pages.not_found(ctx, request, exc)
        requests.labels("not_found", str(response.status_code)).inc()
        return response

    middleware = [Middleware(TokenGuard, token=token)] if token else []
    handlers = {404: missing, 405: missing}
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan, exception_handlers=handlers)
    app.state.follower = follower
    return app
