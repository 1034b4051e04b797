"""The reach index port: which incidents reached each model group, and how (DESIGN §2.3, the recommendation "over
every incident that reached the group").

The incidents role is partitioned by dataset: analysing one dataset's incident, it cannot analyse the others'. So
every incident it opens, updates or resolves leaves here, per affected group, its reach
(:class:`~pareis.core.serving.Reach`: blind window, heal, the group's versions in its blast radius;
:func:`pareis.core.analysis.reaches_of`), and the next analysis of any incident reaching that group reads them
(:attr:`pareis.core.analysis.AnalysisInputs.reaches`). The read side reads them too, instead of analysing every
incident (:mod:`pareis.answers.decisions`).

Rules, identical in every implementation (``tests/unit/test_reach_store.py`` pins them):

* ``put`` replaces, per incident given, its reaches as one unit: a group it no longer reaches loses it; an empty
  mapping removes the incident. Putting the same value again changes nothing (a redo rewrites what it wrote).
* ``of_groups`` returns every reach stored for each group asked, by incident URN; a group nobody reached → ``()``.

Implementations: :class:`MemoryReachStore` and :class:`pareis.store.reaches_redis.RedisReachStore`. Errors are
:class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Protocol

from pareis.core.serving import Reach

Reaches = Mapping[str, Mapping[str, Reach]]
"""Incident URN → group → that incident's reach of the group."""


class ReachStore(Protocol):
    def put(self, reaches: Reaches) -> None:
        """Replace the reaches of each incident in ``reaches`` (see the module docstring). One round trip."""
        ...

    def of_groups(self, groups: Iterable[str]) -> dict[str, tuple[Reach, ...]]:
        """Every stored reach of each of ``groups``, by incident URN. One round trip."""
        ...


class MemoryReachStore:
    """:class:`ReachStore` in process memory; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[str, dict[str, Reach]] = {}
        self._of: dict[str, frozenset[str]] = {}  # incident → the groups it reaches

    def put(self, reaches: Reaches) -> None:
        with self._lock:
            for incident, by_group in sorted(reaches.items()):
                for group in self._of.pop(incident, frozenset()) - set(by_group):
                    self._groups[group].pop(incident, None)
                    if not self._groups[group]:
                        del self._groups[group]
                for group, reach in by_group.items():
                    self._groups.setdefault(group, {})[incident] = _keyed(incident, reach)
                if by_group:
                    self._of[incident] = frozenset(by_group)

    def of_groups(self, groups: Iterable[str]) -> dict[str, tuple[Reach, ...]]:
        with self._lock:
            out = {}
            for group in sorted(set(groups)):
                found = self._groups.get(group, {})
                out[group] = tuple(found[i] for i in sorted(found))
            return out


def _keyed(incident: str, reach: Reach) -> Reach:
    """``reach`` under the incident it is stored for (a reach is keyed by its incident, as on Redis)."""
    if reach.incident == incident:
        return reach
    return Reach(incident, reach.last_success_ms, reach.healed_ms, reach.in_blast, reach.first_failure_ms)
