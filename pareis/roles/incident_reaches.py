"""The incidents role's side of the reach index (:mod:`pareis.store.reaches`): the recommendation of an incident
counts every other incident that reached its groups (DESIGN §2.3), although the role only analyses its own
datasets' incidents.

* **Read**, once per batch: :class:`BatchReaches` asks the index for the groups the batch is expected to meet (the
  groups its datasets' incidents last published, and those of the blast radius the batch walked together) in one
  round trip, then for any other group a step meets (one more round trip each time). Every step of a batch sees the
  index as it stood before the batch: reaches the batch itself writes count from the next batch on.
* **Written**, once per batch, before the step journal (as the watch index is): per intent the batch produced, its
  incident's reaches (:func:`pareis.core.analysis.reaches_of`), the last intent of an incident standing. A crash
  before the journal makes the redo recompute and rewrite them; after it, the redo replays the journal and the index
  already holds what it wrote. A put of the same reaches again changes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from pareis.core.analysis import reaches_of
from pareis.core.intents import Intent
from pareis.core.lifecycle import IncidentState
from pareis.core.serving import Reach
from pareis.store.reaches import ReachStore


class BatchReaches:
    """The reaches one batch reads (see the module docstring); call it with groups."""

    def __init__(self, store: ReachStore, expected: Iterable[str] = ()) -> None:
        self._store = store
        self._known: dict[str, tuple[Reach, ...]] = {}
        self._read(expected)

    def __call__(self, groups: Collection[str]) -> dict[str, tuple[Reach, ...]]:
        self._read(groups)
        return {g: self._known[g] for g in sorted(groups)}

    def _read(self, groups: Iterable[str]) -> None:
        missing = sorted(set(groups) - self._known.keys())
        if missing:
            self._known.update(self._store.of_groups(missing))


def published_groups(states: Iterable[IncidentState]) -> set[str]:
    """The groups the incidents of ``states`` last published a rollback (and a decision) for: every affected group."""
    return {group for s in states if s.incident is not None for group, _ in s.incident.published.rollback}


def intent_reaches(intents: Iterable[Intent]) -> dict[str, Mapping[str, Reach]]:
    """Per incident, its reaches as the last of ``intents`` about it says (what the batch writes to the index)."""
    return {intent.facts.urn: reaches_of(intent.facts) for intent in intents}
