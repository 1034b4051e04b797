"""The pages and their JSON twins: each handler asks one answer (``pareis.answers.*``) and renders it — as HTML from a
template, or under ``/api/…`` as the answer's own ``to_json()`` (the same JSON the CLI's ``--json`` prints).

Answers are blocking calls; they run in a worker thread, inside the app's ``guard`` when it has one (a lock that an
in-process writer — ``pareis demo --serve``, the tests — holds while it changes in-memory stores). An answer that
can't be given is a 404 page (:class:`~pareis.answers.sources.CannotEvaluate`) or a 503
(:class:`~pareis.answers.sources.SourceUnavailable`), never a traceback.

The retrain gate (``pareis.answers.gate``, per model group) and reliability (``pareis.answers.reliability``:
``pareis protect`` over every model) are rendered from their JSON; each is evaluated at the app's clock (the wall
clock for ``pareis serve``, the demo's final simulated time for ``pareis demo --serve``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from pareis.answers.incidents import IncidentSummary
from pareis.answers.sources import CannotEvaluate, Sources, SourceUnavailable
from pareis.web import present

if TYPE_CHECKING:
    from pareis.answers.dossier import IncidentDossier

T = TypeVar("T")
HERE = Path(__file__).parent
SEVERITIES = ("HIGH", "MEDIUM", "LOW", "NONE")
STATES = ("ACTIVE", "RESOLVED")


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
    env.filters.update(
        short=present.short,
        named=present.named,
        when=present.when,
        duration=present.duration,
        link=present.link,
        tickets=present.tickets,
    )
    return env


DOSSIERS = 16
"""How many incident dossiers a server keeps; all are dropped whenever the list is recomputed."""


@dataclass
class Context:
    """What every handler needs: the sources, how to serialise access to them, the clock and the templates."""

    sources: Sources
    clock: Callable[[], int]
    guard: contextlib.AbstractContextManager[object] | None = None
    collapse_over: int | None = None
    token: Callable[[], str] = field(default=lambda: "")
    list_ttl_s: float = 30.0
    env: Environment = field(default_factory=environment)
    _listed: tuple[str, float, list[IncidentSummary]] | None = None
    _dossiers: dict[str, tuple[str, float, IncidentDossier]] = field(default_factory=dict)

    async def incidents(self) -> list[IncidentSummary]:
        """:func:`~pareis.answers.incidents.incident_list`, answered from memory once computed: the live follower
        recomputes it when the incident store's change token moves (:meth:`refresh`, before it tells the pages) and
        when it is older than ``list_ttl_s`` (:meth:`expire`). The list still reads the whole run history (and
        analyses every incident the incident store does not hold), so pages and live re-fetches between two changes
        share one computation, and a slow recomputation never holds a page up. ``list_ttl_s`` 0: computed for every
        request (nothing kept)."""
        listed = self._listed
        if listed is not None and self.list_ttl_s > 0:
            return listed[2]
        return await self.refresh()

    async def refresh(self) -> list[IncidentSummary]:
        """Recompute the incident list now and keep it (and drop the dossiers: they may have changed too)."""
        from pareis.answers.incidents import incident_list

        rows = await self.ask(_reading(lambda: incident_list(self.sources)))
        if self.list_ttl_s > 0:
            self._listed = ("", time.monotonic(), rows)
            self._dossiers.clear()
        return rows

    async def expire(self) -> None:
        """Refresh the list when it is older than ``list_ttl_s`` (what the change token can't see: lineage changes
        to resolved incidents); a source that went away keeps the last list."""
        listed = self._listed
        if listed is not None and time.monotonic() - listed[1] >= self.list_ttl_s:
            try:
                await self.refresh()
            except SourceUnavailable:
                self._listed = (listed[0], time.monotonic(), listed[2])

    async def dossier(self, urn: str) -> IncidentDossier:
        """The dossier of incident ``urn``, kept (up to :data:`DOSSIERS`, the oldest dropped first) until the list is
        recomputed; CannotEvaluate when the list has no such incident."""
        from pareis.answers.dossier import dossier_of

        cached = self._dossiers.get(urn)
        if cached is not None and self.list_ttl_s > 0:
            return cached[2]
        summary = next((s for s in await self.incidents() if s.urn == urn), None)
        if summary is None:
            raise CannotEvaluate(f"no incident {urn} in the run history")
        found = await self.ask(_reading(lambda: dossier_of(self.sources, summary, collapse_over=self.collapse_over)))
        if len(self._dossiers) >= DOSSIERS:
            self._dossiers.pop(min(self._dossiers, key=lambda u: self._dossiers[u][1]))
        if self.list_ttl_s > 0:
            self._dossiers[urn] = ("", time.monotonic(), found)
        return found

    async def ask(self, question: Callable[[], T]) -> T:
        def guarded() -> T:
            if self.guard is None:
                return question()
            with self.guard:
                return question()

        return await run_in_threadpool(guarded)

    def html(self, template: str, http_status: int = 200, **values: Any) -> HTMLResponse:
        page = self.env.get_template(template).render(origin=self.sources.origin, **values)
        return HTMLResponse(page, http_status)


def _json(obj: object) -> Response:
    return Response(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS), media_type="application/json")


Handler = Callable[[Context, Request], Awaitable[Response]]
"""A page or API route over the shared :class:`Context`."""


def answering(handler: Handler) -> Handler:
    """Turns CannotEvaluate into 404 and SourceUnavailable into 503, as HTML or JSON by the route."""

    async def wrapped(ctx: Context, request: Request) -> Response:
        api = request.url.path.startswith("/api/")
        try:
            return await handler(ctx, request)
        except CannotEvaluate as exc:
            status, reason = 404, str(exc)
        except SourceUnavailable as exc:
            status, reason = 503, f"a source is unavailable: {exc}"
        if api:
            return JSONResponse({"error": reason}, status)
        return ctx.html("error.html", status, reason=reason, status=status, page="")

    return wrapped


def _reading(question: Callable[[], T]) -> Callable[[], T]:
    """``question`` with store errors translated by the composition root (Retriable/Fatal → SourceUnavailable)."""
    from pareis.compose.sources import reading

    def read() -> T:
        with reading():
            return question()

    return read


# -- Incidents ---------------------------------------------------------------------------------------------------


PAGE_ROWS = 100
"""Rows the Incidents page shows before "show all": active incidents come first, so they are what is shown."""


def _filters(request: Request) -> dict[str, str]:
    q = request.query_params
    return {
        "state": q.get("state", "") if q.get("state", "") in STATES else "",
        "severity": q.get("severity", "") if q.get("severity", "") in SEVERITIES else "",
        "q": q.get("q", "").strip(),
        "all": "1" if q.get("all") == "1" else "",
    }


def _shown(rows: list[IncidentSummary], filters: dict[str, str]) -> list[IncidentSummary]:
    return rows if filters["all"] else rows[:PAGE_ROWS]


def _matching(rows: list[IncidentSummary], filters: dict[str, str]) -> list[IncidentSummary]:
    text = filters["q"].casefold()
    return [
        s
        for s in rows
        if (not filters["state"] or s.state == filters["state"])
        and (not filters["severity"] or s.severity == filters["severity"])
        and (not text or text in s.dataset.casefold() or any(text in m.casefold() for m in s.models))
    ]


async def _incident_rows(ctx: Context, request: Request) -> tuple[list[IncidentSummary], dict[str, str]]:
    rows = await ctx.incidents()
    filters = _filters(request)
    return _matching(rows, filters), filters


@answering
async def incidents_page(ctx: Context, request: Request) -> Response:
    token = ctx.token()  # read before the answer: a change after this point still reaches the page
    rows, filters = await _incident_rows(ctx, request)
    return ctx.html(
        "incidents.html",
        rows=_shown(rows, filters),
        total=len(rows),
        filters=filters,
        query=request.url.query,
        token=token,
        now_ms=ctx.clock(),
        severities=SEVERITIES,
        states=STATES,
        page="incidents",
    )


@answering
async def incidents_table(ctx: Context, request: Request) -> Response:
    rows, filters = await _incident_rows(ctx, request)
    return ctx.html(
        "incidents_table.html",
        rows=_shown(rows, filters),
        total=len(rows),
        filters=filters,
        query=request.url.query,
        now_ms=ctx.clock(),
    )


@answering
async def incidents_api(ctx: Context, request: Request) -> Response:
    rows, _ = await _incident_rows(ctx, request)
    return _json([s.to_json() for s in rows])


# -- Incident ----------------------------------------------------------------------------------------------------


@answering
async def incident_page(ctx: Context, request: Request) -> Response:
    d = await ctx.dossier(request.path_params["urn"])
    facts = d.answer.facts
    answer = d.answer.to_json()
    retrain = dict(facts.retrain)
    return ctx.html(
        "incident.html",
        d=d,
        s=d.summary,
        facts=facts,
        answer=answer,
        retrain={urn: status.value for urn, status in retrain.items()},
        graph_json=orjson.dumps(d.graph.to_json()).decode(),
        timeline=present.timeline(facts),
        now_ms=ctx.clock(),
        page="incidents",
    )


@answering
async def incident_api(ctx: Context, request: Request) -> Response:
    return _json((await ctx.dossier(request.path_params["urn"])).to_json())


# -- Models ------------------------------------------------------------------------------------------------------


def _models_answer(ctx: Context) -> dict[str, Any]:
    from pareis.answers.gate import cannot_evaluate_json, gate
    from pareis.answers.models import models

    answer = models(ctx.sources).to_json()
    at_ms = ctx.clock()
    gates: dict[str, Any] = {}
    for group in answer["groups"]:
        model = group["model"]
        try:
            gates[model] = gate(ctx.sources, model=model, at_ms=at_ms).to_json()
        except CannotEvaluate as exc:
            gates[model] = {**cannot_evaluate_json(model, str(exc)), "checks": []}
    return {"evaluated_at_ms": at_ms, "gates": gates, **answer}


# -- Protect -----------------------------------------------------------------------------------------------------


def _protect_answer(ctx: Context) -> dict[str, Any]:
    from pareis.answers.reliability import protect

    answer = protect(ctx.sources, at_ms=ctx.clock())
    return {**answer.to_json(), "yaml": answer.yaml}


def _whole_answer(question: Callable[[Context], dict[str, Any]], name: str) -> tuple[Handler, Handler]:
    """The page (``<name>.html`` over the answer) and its JSON twin of an answer that takes no argument."""

    @answering
    async def html(ctx: Context, request: Request) -> Response:
        answer = await ctx.ask(_reading(lambda: question(ctx)))
        return ctx.html(f"{name}.html", answer=answer, page=name)

    @answering
    async def api(ctx: Context, request: Request) -> Response:
        return _json(await ctx.ask(_reading(lambda: question(ctx))))

    return html, api


models_page, models_api = _whole_answer(_models_answer, "models")
protect_page, protect_api = _whole_answer(_protect_answer, "protect")
