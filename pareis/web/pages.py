"""The pages and their JSON twins: each handler asks one answer (``pareis.answers.*``, through
:class:`~pareis.web.context.Context`) and renders it — as HTML from a template, or under ``/api/…`` as the answer's
own ``to_json()`` (the same JSON the CLI's ``--json`` prints).

An answer that can't be given is a 404 page (:class:`~pareis.answers.sources.CannotEvaluate`), a 503
(:class:`~pareis.answers.sources.SourceUnavailable`) or, for a filter value the page does not know, a 400 that says
which — never a traceback, never a silently ignored parameter. A dataset or assertion URN where an incident URN is
expected leads to that dataset's (that assertion's) incident: the active one, else the latest.

The retrain gate (``pareis.answers.gate``, per model group) and reliability (``pareis.answers.reliability``:
``pareis protect`` over every model) are rendered from their JSON; each is evaluated at the app's clock (the wall
clock for ``pareis serve``; ``--at``, or the newest time in the files for ``serve --metadata``; the demo's final
simulated time for ``pareis demo --serve``). On a page the gate is fetched apart (``/fragments/gate``): on a large
graph it takes seconds, and the decision above it must not wait.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from pareis.answers.incidents import IncidentSummary
from pareis.answers.listing import SEVERITIES, STATES, IncidentFilter, matching
from pareis.answers.sources import CannotEvaluate, SourceUnavailable
from pareis.web import present
from pareis.web.context import Context, translated

if TYPE_CHECKING:
    from pareis.answers.dossier import IncidentDossier

PAGE_ROWS = 100
"""Rows the Incidents page shows before "show all": active incidents come first, so they are what is shown."""


class BadFilter(ValueError):
    """A query parameter with a value the page does not know (the message says which, and what it accepts)."""


def _here(request: Request) -> str:
    """The page's own address: what its live re-fetch asks for."""
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def _json(obj: object) -> Response:
    return Response(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS), media_type="application/json")


def _error(ctx: Context, request: Request, status: int, reason: str) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": reason}, status)
    return ctx.html("error.html", status, reason=reason, status=status, page="")


Handler = Callable[[Context, Request], Awaitable[Response]]
"""A page or API route over the shared :class:`~pareis.web.context.Context`."""


def answering(handler: Handler) -> Handler:
    """Turns CannotEvaluate into 404, BadFilter into 400 and SourceUnavailable into 503, as HTML or JSON by route."""

    async def wrapped(ctx: Context, request: Request) -> Response:
        try:
            return await handler(ctx, request)
        except CannotEvaluate as exc:
            status, reason = 404, str(exc)
        except BadFilter as exc:
            status, reason = 400, str(exc)
        except SourceUnavailable as exc:
            status, reason = 503, f"a source is unavailable: {exc}"
        return _error(ctx, request, status, reason)

    return wrapped


async def not_found(ctx: Context, request: Request, exc: HTTPException) -> Response:
    """Starlette's own 404 and 405 (no such route, a method other than GET) as a page that says what was asked."""
    if exc.status_code == 404:
        reason = f"There is no page at {request.url.path}."
    else:
        reason = f"{request.method} is not answered here: Mission Control only reads (GET)."
    return _error(ctx, request, exc.status_code, reason)


# -- Incidents ---------------------------------------------------------------------------------------------------


def _filters(request: Request) -> tuple[dict[str, str], list[str]]:
    """The list's filters, and one sentence per value it does not know (that filter is then not applied)."""
    q = request.query_params
    filters = {
        "state": q.get("state", "").strip().upper(),
        "severity": q.get("severity", "").strip().upper(),
        "q": q.get("q", "").strip(),
        "dataset": q.get("dataset", "").strip(),
        "model": q.get("model", "").strip(),
        "all": q.get("all", ""),
    }
    errors = []
    for name, allowed in (("state", STATES), ("severity", SEVERITIES)):
        if filters[name] and filters[name] not in allowed:
            errors.append(f"{name} {q.get(name)!r} is not one of {', '.join(allowed)}: not applied")
            filters[name] = ""
    if filters["all"] not in ("", "1"):
        errors.append(f"all {filters['all']!r} is not 1: not applied")
        filters["all"] = ""
    return filters, errors


async def _matching(ctx: Context, filters: dict[str, str]) -> list[IncidentSummary]:
    """The listed incidents the filters keep (:func:`pareis.answers.listing.matching`: the CLI's and MCP's filter)."""
    chosen = IncidentFilter(
        state=filters["state"] or None,
        severity=filters["severity"] or None,
        dataset=filters["dataset"] or None,
        model=filters["model"] or None,
        text=filters["q"] or None,
    )
    rows = await ctx.incidents()
    return await ctx.ask(translated(lambda: matching(ctx.sources, rows, chosen)))


async def _table(ctx: Context, request: Request) -> dict[str, Any]:
    """What the incident table shows: the matching rows (the first :data:`PAGE_ROWS` unless ``all``), each with the
    decision per affected group, its contaminated versions and the versions it put at risk."""
    filters, errors = _filters(request)
    rows = await _matching(ctx, filters)
    shown = rows if filters["all"] else rows[:PAGE_ROWS]
    board = await ctx.shown_rows(shown, _row_view)
    return {
        "rows": shown,
        "board": board,
        "total": len(rows),
        "filters": filters,
        "errors": errors,
        "query": request.url.query,
        "now_ms": ctx.clock(),
    }


def _row_view(s: IncidentSummary, groups: list[dict[str, Any]], at_ms: int) -> dict[str, Any]:
    """What the list shows of one incident beyond its summary: the decision per affected group, its contaminated
    versions and, apart, the versions it put at risk."""
    return {
        "recommendations": [d.to_json() for d in s.decisions],
        "contaminated": present.contaminated(groups),
        "at_risk": present.at_risk(s.models, groups, s.healed_ms),
    }


@answering
async def incidents_page(ctx: Context, request: Request) -> Response:
    token = ctx.token()  # read before the answer: a change after this point still reaches the page
    table = await _table(ctx, request)
    status = 400 if table["errors"] else 200
    return ctx.html(
        "incidents.html", status, **table, token=token, severities=SEVERITIES, states=STATES, page="incidents"
    )


@answering
async def incidents_table(ctx: Context, request: Request) -> Response:
    table = await _table(ctx, request)
    return ctx.html("incidents_table.html", 400 if table["errors"] else 200, **table)


@answering
async def incidents_api(ctx: Context, request: Request) -> Response:
    filters, errors = _filters(request)
    if errors:
        raise BadFilter("; ".join(errors))
    return _json([s.to_json() for s in await _matching(ctx, filters)])


# -- Incident ----------------------------------------------------------------------------------------------------


async def _incident_of(ctx: Context, urn: str) -> str | None:
    """The incident a dataset or assertion URN stands for (its active one, else its latest; CannotEvaluate when it
    has none); None for any other URN (taken as an incident URN)."""
    if not urn.startswith(("urn:li:dataset:", "urn:li:assertion:")):
        return None
    rows = await ctx.incidents()
    listed = next((s.urn for s in rows if urn == s.dataset or urn in s.assertions), None)
    if listed is not None:
        return listed
    from pareis.answers.incidents import analysis  # a sibling of the incident's key, or an assertion not listed

    if urn.startswith("urn:li:dataset:"):
        found = await ctx.ask(translated(lambda: analysis(ctx.sources, dataset=urn)))
    else:
        found = await ctx.ask(translated(lambda: analysis(ctx.sources, assertion=urn)))
    return found.facts.urn


def _redirect(request: Request, urn: str) -> Response:
    prefix = "/api/incidents/" if request.url.path.startswith("/api/") else "/incidents/"
    return RedirectResponse(prefix + present.link(urn), 303)


@answering
async def incident_page(ctx: Context, request: Request) -> Response:
    token = ctx.token()
    urn = request.path_params["urn"]
    if (incident := await _incident_of(ctx, urn)) is not None:
        return _redirect(request, incident)
    shown = await ctx.view(urn, _incident_view)
    return ctx.html("incident.html", **shown, token=token, here=_here(request), page="incidents")


def _incident_view(d: IncidentDossier, at_ms: int) -> dict[str, Any]:
    """What the incident page shows of a dossier: the decision per group first, then the facts and the evidence."""
    facts = d.answer.facts
    answer = d.answer.to_json()
    return {
        "d": d,
        "s": d.summary,
        "facts": facts,
        "answer": answer,
        "decisions": present.decisions(answer["decisions"], answer["owners"]["models"]),
        "retrain": {u: status.value for u, status in facts.retrain},
        "graph_json": orjson.dumps(d.graph.to_json()).decode(),
        "layers": present.layers(d.graph),
        "timeline": present.timeline(facts),
    }


@answering
async def incident_api(ctx: Context, request: Request) -> Response:
    urn = request.path_params["urn"]
    if (incident := await _incident_of(ctx, urn)) is not None:
        return _redirect(request, incident)
    return _json((await ctx.dossier(urn)).to_json())


# -- The retrain gate, apart -------------------------------------------------------------------------------------


@answering
async def gate_fragment(ctx: Context, request: Request) -> Response:
    """``/fragments/gate?model=URN[&view=full]``: one group's retrain gate, as the decision panel (the decision and
    the failing checks in words) or the Models page (``full``: every check as well) shows it. A source that is
    down is said in the fragment itself (a page swaps in only a 200)."""
    model = request.query_params.get("model", "")
    if not model:
        raise BadFilter("model is required: the URN of a model group or version")
    full = request.query_params.get("view") == "full"
    try:
        answer = await ctx.gate(model)
    except SourceUnavailable as exc:
        answer = {"decision": "UNAVAILABLE", "reason": f"a source is unavailable: {exc}", "checks": []}
    return ctx.html("gate.html", gate=answer, model=model, full=full)


async def gate_api(ctx: Context, request: Request) -> Response:
    """``/api/gate?model=URN[&at=TIME]``: the retrain gate for continuous learners (DESIGN §2.4), the bytes ``pareis
    gate --model URN --at TIME --json`` prints (:func:`pareis.compose.gates.decision`; ``at``: ISO-8601 or epoch ms,
    default the app's clock), evaluated on each request. 200 for GO and NO-GO; when it cannot evaluate, the CLI's
    exit-2 object with 400 (no model, a bad ``at``), 404 (a model it cannot evaluate) or 503 (a source is down: the
    gate cannot answer, so do not train)."""
    from pareis.answers.times import at_ms
    from pareis.compose.gates import CANNOT_EVALUATE, cannot_evaluate, decision

    model = request.query_params.get("model", "")
    now = ctx.clock()
    try:
        if not model:
            raise CannotEvaluate("model is required: the URN of a model group or version")
        when = at_ms(request.query_params.get("at"), now)
    except CannotEvaluate as exc:
        status, answer = 400, cannot_evaluate(model, exc, now)
    else:
        try:
            answer = await ctx.ask(translated(lambda: decision(ctx.sources, model, when)))
        except SourceUnavailable as exc:
            answer = cannot_evaluate(model, f"{exc} — the gate cannot answer, so do not train", when)
            status = 503
        else:
            status = 404 if answer.decision == CANNOT_EVALUATE else 200
    return Response(answer.text + "\n", status, media_type="application/json")


# -- Models ------------------------------------------------------------------------------------------------------


def _models(ctx: Context) -> dict[str, Any]:
    from pareis.answers.models import models

    return models(ctx.sources).to_json()


def _whole_page(question: Callable[[Context], dict[str, Any]], name: str) -> Handler:
    """The page ``<name>.html`` over an answer that takes no argument."""

    @answering
    async def html(ctx: Context, request: Request) -> Response:
        token = ctx.token()
        answer = await ctx.ask(translated(lambda: question(ctx)))
        return ctx.html(f"{name}.html", answer=answer, token=token, here=_here(request), page=name)

    return html


@answering
async def models_api(ctx: Context, request: Request) -> Response:
    answer = await ctx.ask(translated(lambda: _models(ctx)))
    at_ms = ctx.clock()
    gates = {group["model"]: await ctx.gate(group["model"]) for group in answer["groups"]}
    return _json({"evaluated_at_ms": at_ms, "gates": gates, **answer})


# -- Protect -----------------------------------------------------------------------------------------------------


def _protect(ctx: Context) -> dict[str, Any]:
    from pareis.answers.reliability import protect

    answer = protect(ctx.sources, at_ms=ctx.clock())
    return {**answer.to_json(), "yaml": answer.yaml}


@answering
async def protect_api(ctx: Context, request: Request) -> Response:
    return _json(await ctx.ask(translated(lambda: _protect(ctx))))


models_page = _whole_page(_models, "models")
protect_page = _whole_page(_protect, "protect")
