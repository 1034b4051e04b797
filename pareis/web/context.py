"""What every page handler shares: the sources, the clock, the templates and the answers kept between requests.

Answers are blocking calls; they run in a worker thread (:meth:`Context.ask`), inside the app's ``guard`` when it has
one (a lock that an in-process writer — ``pareis demo --serve``, the tests — holds while it changes in-memory
stores), with store errors translated by the composition root (Retriable/Fatal → SourceUnavailable).

Kept between requests, all dropped together whenever the incident list is recomputed (:meth:`Context.refresh`):
the incident list, the dossiers of the last :data:`DOSSIERS` incidents opened and what their page shows of them,
what the list shows of each listed incident (from its verdicts) and the retrain gates asked for. The gate is
evaluated at most :data:`GATES_AT_ONCE` at a time: on a large graph one takes seconds, and the pages ask for it
apart from the page (``/fragments/gate``), so it must not take every worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse

from pareis.answers.sources import CannotEvaluate, Sources
from pareis.web import present

if TYPE_CHECKING:
    from pareis.answers.dossier import IncidentDossier
    from pareis.answers.incidents import IncidentSummary

T = TypeVar("T")
HERE = Path(__file__).parent
DOSSIERS = 16
"""How many incident dossiers a server keeps; all are dropped whenever the list is recomputed."""
GATES_AT_ONCE = 2
"""Retrain gates evaluated at the same time; further requests wait their turn."""
DIGEST = 'data-digest=""'
"""The placeholder in ``<main>`` that :meth:`Context.html` fills with a digest of the page's content: a live
re-fetch that brings the same content is not swapped in (the graph is not redrawn, nothing the reader opened closes)."""


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
    env.filters.update(
        short=present.short,
        named=present.named,
        when=present.when,
        duration=present.duration,
        link=present.link,
        tickets=present.tickets,
        action=present.action,
        check_name=present.check_name,
        unknown=present.unknown,
        shorten_urns=present.shorten_urns,
    )
    return env


def translated(question: Callable[[], T]) -> Callable[[], T]:
    """``question`` with store errors translated by the composition root (Retriable/Fatal → SourceUnavailable)."""
    from pareis.compose.sources import reading

    def read() -> T:
        with reading():
            return question()

    return read


@dataclass
class Context:
    """The sources, how to serialise access to them, the clock (``clock_fixed``: a time given, not the wall clock)
    and the templates, with the answers kept between requests."""

    sources: Sources
    clock: Callable[[], int]
    guard: contextlib.AbstractContextManager[Any] | None = None
    collapse_over: int | None = None
    token: Callable[[], str] = field(default=lambda: "")
    list_ttl_s: float = 30.0
    clock_fixed: bool = False
    env: Environment = field(default_factory=environment)
    listed: tuple[float, list[IncidentSummary]] | None = None
    dossiers: dict[str, tuple[float, IncidentDossier]] = field(default_factory=dict)
    views: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    gates: dict[str, dict[str, Any]] = field(default_factory=dict)
    gating: asyncio.Semaphore | None = None

    @property
    def snapshot(self) -> bool:
        """True when the sources are a snapshot (files): nothing changes while the server runs."""
        return self.sources.incidents is None

    @property
    def keeps(self) -> bool:
        return self.list_ttl_s > 0

    async def incidents(self) -> list[IncidentSummary]:
        """:func:`~pareis.answers.incidents.incident_list`, answered from memory once computed: the live follower
        recomputes it when the incident store's change token moves (:meth:`refresh`, before it tells the pages) and
        when it is older than ``list_ttl_s`` (:meth:`expire`). The list still reads the whole run history (and
        analyses every incident the incident store does not hold), so pages and live re-fetches between two changes
        share one computation, and a slow recomputation never holds a page up. ``list_ttl_s`` 0: computed for every
        request (nothing kept)."""
        listed = self.listed
        if listed is not None and self.keeps:
            return listed[1]
        return await self.refresh()

    async def refresh(self) -> list[IncidentSummary]:
        """Recompute the incident list now and keep it (and drop every other kept answer: it may have changed)."""
        from pareis.answers.incidents import incident_list

        rows = await self.ask(translated(lambda: incident_list(self.sources)))
        if self.keeps:
            self.listed = (time.monotonic(), rows)
            self.dossiers.clear()
            self.views.clear()
            self.rows.clear()
            self.gates.clear()
        return rows

    async def expire(self) -> None:
        """Refresh the list when it is older than ``list_ttl_s`` (what the change token can't see: lineage changes
        to resolved incidents); a source that went away keeps the last list."""
        from pareis.answers.sources import SourceUnavailable

        listed = self.listed
        if listed is not None and time.monotonic() - listed[0] >= self.list_ttl_s:
            try:
                await self.refresh()
            except SourceUnavailable:
                self.listed = (time.monotonic(), listed[1])

    async def dossier(self, urn: str) -> IncidentDossier:
        """The dossier of incident ``urn`` (CannotEvaluate when the list holds no such incident)."""
        from pareis.answers.dossier import dossier_of

        kept = self.dossiers.get(urn)
        if kept is not None and self.keeps:
            return kept[1]
        summary = next((s for s in await self.incidents() if s.urn == urn), None)
        if summary is None:
            raise CannotEvaluate(f"no incident {urn} in the run history")
        found = await self.ask(translated(lambda: dossier_of(self.sources, summary, collapse_over=self.collapse_over)))
        if self.keeps:
            if len(self.dossiers) >= DOSSIERS:
                oldest = min(self.dossiers, key=lambda u: self.dossiers[u][0])
                self.dossiers.pop(oldest)
                self.views.pop(oldest, None)
            self.dossiers[urn] = (time.monotonic(), found)
        return found

    async def view(self, urn: str, show: Callable[[IncidentDossier, int], dict[str, Any]]) -> dict[str, Any]:
        """What a page shows of incident ``urn``: ``show(dossier, clock)``, kept as long as its dossier is (what the
        incident page derives from a large dossier — its JSON, decisions, the graph as text — costs milliseconds
        per request otherwise)."""
        kept = self.views.get(urn)
        if kept is not None and self.keeps and urn in self.dossiers:
            return kept
        shown = show(await self.dossier(urn), self.clock())
        if self.keeps and urn in self.dossiers:
            self.views[urn] = shown
        return shown

    async def shown_rows(
        self,
        rows: Sequence[IncidentSummary],
        show: Callable[[IncidentSummary, list[dict[str, Any]], int], dict[str, Any]],
    ) -> dict[str, dict[str, Any]]:
        """What the list shows of each of ``rows``: ``show(row, its verdicts, clock)`` (the verdicts:
        :mod:`pareis.answers.listed_verdicts`, read for the rows not kept yet in one call), kept per incident."""
        from pareis.answers.listed_verdicts import listed_verdicts

        missing = [r for r in rows if r.urn not in self.rows]
        found = await self.ask(translated(lambda: listed_verdicts(self.sources, missing))) if missing else {}
        at_ms = self.clock()
        shown = {r.urn: show(r, found[r.urn], at_ms) for r in missing}
        if self.keeps:
            self.rows.update(shown)
        return {r.urn: shown[r.urn] if r.urn in shown else self.rows[r.urn] for r in rows}

    async def gate(self, model: str) -> dict[str, Any]:
        """The retrain gate's JSON for ``model`` at the clock (:func:`pareis.answers.gate.gate`; the exit-2 form when
        it cannot evaluate), kept per model; at most :data:`GATES_AT_ONCE` evaluated at once."""
        from pareis.answers.gate import cannot_evaluate_json, gate

        kept = self.gates.get(model)
        if kept is not None and self.keeps:
            return kept
        if self.gating is None:
            self.gating = asyncio.Semaphore(GATES_AT_ONCE)
        at_ms = self.clock()

        def evaluate() -> dict[str, Any]:
            try:
                return gate(self.sources, model=model, at_ms=at_ms).to_json()
            except CannotEvaluate as exc:
                return {**cannot_evaluate_json(model, str(exc)), "checks": [], "evaluated_at_ms": at_ms}

        async with self.gating:
            answer = await self.ask(translated(evaluate))
        if self.keeps:
            self.gates[model] = answer
        return answer

    async def ask(self, question: Callable[[], T]) -> T:
        def guarded() -> T:
            if self.guard is None:
                return question()
            with self.guard:
                return question()

        return await run_in_threadpool(guarded)

    def html(self, template: str, http_status: int = 200, **values: Any) -> HTMLResponse:
        """``template`` rendered with what every page shows (origin, mode, clock); its ``<main>`` digest filled.
        ``token`` (in ``values``): the change number the page's answers were read at, taken before reading them —
        the page follows changes from there; none: the page does not follow changes (an error page)."""
        page = self.env.get_template(template).render(
            origin=self.sources.origin,
            snapshot=self.snapshot,
            clock_fixed=self.clock_fixed,
            at_ms=self.clock(),
            **values,
        )
        start = page.find(DIGEST)
        if start >= 0:
            end = page.find("</main>", start)
            digest = hashlib.sha256(page[start:end].encode()).hexdigest()[:16]
            page = page[:start] + f'data-digest="{digest}"' + page[start + len(DIGEST) :]
        return HTMLResponse(page, http_status)
