"""What the read side reads (DESIGN §6): a lineage view, a run history and, when live, the incident state and the
effect ledger's ticket refs.

A :class:`Sources` value is opened by the composition root (:func:`pareis.compose.sources.open_sources`) from
DataHub file-format files, the live Redis index or a GMS, and closed by whoever opened it. The answers read it only
through the store ports, so every answer is the same whichever backend it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

from pareis.core.serving import DEFAULT_SERVING_ALIASES

if TYPE_CHECKING:
    from pareis.contracts.ledger import LedgerValues
    from pareis.core.upstream import ModelUpstream
    from pareis.core.walk_cache import WalkCache
    from pareis.store.exposure import ExposureIndex
    from pareis.store.incidents import IncidentStore
    from pareis.store.lineage import LineageStore
    from pareis.store.reaches import ReachStore
    from pareis.store.runs import RunHistory


class CannotEvaluate(Exception):
    """The question can't be answered from the input (an unknown URN, an unreadable file, nothing failed).

    The message is the one-line reason a surface shows (the CLI exits 2)."""


class SourceUnavailable(Exception):
    """A dependency the sources read (Redis, GMS) is down or refuses; the message names it (the CLI exits 1)."""


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class Sources:
    """The inputs of every answer.

    ``lineage`` is the lineage index (the core's :class:`~pareis.core.graph.LineageView` plus enumeration),
    ``runs`` the assertion run history, ``incidents`` the live incident state the incidents role keeps (None when
    opened from files: incidents are then derived from the runs alone), ``tickets`` the effect ledger the ticket
    delivery keeps each incident's ticket refs in (:func:`pareis.contracts.ledger.ticket_key`; None when opened from
    files: no tickets), ``origin`` what the sources were opened from (for headers and provenance), ``exposure`` the
    exposure index the running service keeps (None: protect and the gate walk the lineage instead;
    :mod:`pareis.answers.exposure`), ``reaches`` the reach index the incidents role keeps (None: the recommendations
    analyse every incident instead; :mod:`pareis.answers.decisions`), ``serving_aliases`` the version aliases that
    mean a version serves (the setting ``datahub.serving_aliases``), ``walks`` what walks of the lineage a
    long-lived reader keeps from one view of it to the next of the same generation (the scores role's gate: blast
    radii and upstreams, :class:`~pareis.core.walk_cache.WalkCache`; None: each view walks its own). Use as a context
    manager, or call :meth:`close`.
    """

    lineage: LineageStore
    runs: RunHistory
    incidents: IncidentStore | None = None
    origin: str = "memory"
    tickets: LedgerValues | None = None
    _close: Callable[[], None] = field(default=_nothing, repr=False, compare=False)
    exposure: ExposureIndex | None = None
    reaches: ReachStore | None = None
    serving_aliases: tuple[str, ...] = DEFAULT_SERVING_ALIASES
    walks: WalkCache[ModelUpstream] | None = field(default=None, compare=False)

    def close(self) -> None:
        """Let go of connections (idempotent)."""
        self._close()

    def __enter__(self) -> Sources:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
