"""The lineage role's watch: which applied lineage updates touch an active incident, as lineage signals on
``pareis.signals.v1`` (DESIGN §3, live re-evaluation; the rule is :mod:`pareis.core.watch`).

Per batch: the watch index is re-read only when its revision moved (:meth:`~pareis.store.watch.WatchStore.index`:
one small read otherwise); each update the lineage store *applied* (an unchanged restatement or a stale update
changes no answer) is checked by its subjects; every incident dataset hit gets one signal per batch, naming the
changed entities and stamped with the latest change's time (its aspect stamp: the MCL's ``created.time``). With no
active incident the updates are not looked at.

At-least-once like the rest of the lineage role: a redone batch sends its signals again, and the incidents role's
recomputation is idempotent (an unchanged answer writes nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pareis.core.watch import WatchIndex
from pareis.model.lineage import LineageUpdate, Outcome
from pareis.model.records import OutRecord
from pareis.roles.messages import MAX_SIGNAL_ENTITIES, LineageSignal, encode
from pareis.store.watch import WatchStore


@dataclass
class LineageWatch:
    """Lineage signals to ``topic`` for the updates that touch an incident of ``store``'s index."""

    store: WatchStore
    topic: str
    index: WatchIndex = field(default_factory=WatchIndex)
    signalled: int = 0
    """Signals produced so far (for logs and tests)."""

    def signals(self, updates: Sequence[LineageUpdate], outcomes: Sequence[Outcome]) -> list[OutRecord]:
        """The signals of ``updates`` (with the store's ``outcomes``, one per update), sorted by dataset."""
        fresh = self.store.index(self.index.revision or None)
        if fresh is not None:
            self.index = fresh
        index = self.index
        if not index:
            return []
        touched: dict[str, tuple[set[str], int]] = {}
        for update, outcome in zip(updates, outcomes, strict=True):
            if outcome is not Outcome.APPLIED:
                continue
            for dataset in index.touched(update.entity, () if update.facts is None else update.facts.edges):
                entities, logged = touched.setdefault(dataset, (set(), update.stamp.time_ms))
                entities.add(update.entity)
                touched[dataset] = (entities, max(logged, update.stamp.time_ms))
        out = []
        for dataset, (entities, logged) in sorted(touched.items()):
            signal = LineageSignal(dataset, tuple(sorted(entities)[:MAX_SIGNAL_ENTITIES]), logged)
            out.append(OutRecord(self.topic, dataset.encode("utf-8"), encode(signal)))
        self.signalled += len(out)
        return out
