"""The lineage role's watch: which applied lineage updates touch an active incident, as lineage signals on
``pareis.signals.v1`` (DESIGN §3, live re-evaluation; the rule is :mod:`pareis.core.watch`).

Per batch: the watch index is re-read only when its revision moved (:meth:`~pareis.store.watch.WatchStore.index`:
one small read otherwise); each update the lineage store *applied* (an unchanged restatement or a stale update
changes no answer) is checked by its subjects; every incident dataset hit gets one signal per batch, naming the
changed entities and stamped with the latest change's time (its aspect stamp: the MCL's ``created.time``). With no
active incident the updates are not looked at.

The answer is always the index as read *after* the store applied the batch (an incident that wrote its watch set
while the batch was applied is not missed). A handler that streams its batch to the store (:meth:`LineageWatch.check`)
may still fold early: what an update touches does not depend on the store's outcome, so it is found under the index
read at the batch's start while the server applies the chunks still queued (time the handler would otherwise spend
waiting for replies), and found again only if the index moved by the end (rare: an incident opened, updated or
resolved meanwhile). The early fold also covers updates the store then finds unchanged or stale; they are dropped
at the end as before.

At-least-once like the rest of the lineage role: a redone batch sends its signals again, and the incidents role's
recomputation is idempotent (an unchanged answer writes nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pareis.contracts.lineage import LineageUpdate, Outcome
from pareis.contracts.records import OutRecord
from pareis.core.watch import WatchIndex
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
        check = WatchCheck(self, None)
        check.see(updates)
        return check.signals(outcomes)

    def check(self) -> WatchCheck:
        """A check of one batch whose updates are seen (:meth:`WatchCheck.see`) as they are sent to the store, and
        whose signals are asked once the store's outcomes are known; reads the index now (one small read) and again
        at the end."""
        return WatchCheck(self, self.current())

    def current(self) -> WatchIndex:
        """The index as of now (re-read only when its revision moved)."""
        fresh = self.store.index(self.index.revision or None)
        if fresh is not None:
            self.index = fresh
        return self.index


class WatchCheck:
    """One batch's watch check: the datasets each update touches under ``early`` (the index at the batch's start;
    None: nothing folded before the end), then the signals under the index read at the end."""

    def __init__(self, watch: LineageWatch, early: WatchIndex | None) -> None:
        self._watch = watch
        self._early = early
        self._updates: list[LineageUpdate] = []
        self._touched: list[tuple[str, ...]] = []

    def see(self, updates: Sequence[LineageUpdate]) -> None:
        """Take the next updates of the batch (in the order the store is given them)."""
        self._updates.extend(updates)
        early = self._early
        if early:
            self._touched.extend(_touched(early, u) for u in updates)

    def signals(self, outcomes: Sequence[Outcome]) -> list[OutRecord]:
        """The signals of the updates seen, with the store's ``outcomes`` (one per update), sorted by dataset."""
        watch = self._watch
        index = watch.current()
        if not index:
            return []
        early = self._touched if index is self._early else None
        touched: dict[str, tuple[set[str], int]] = {}
        for i, (update, outcome) in enumerate(zip(self._updates, outcomes, strict=True)):
            if not outcome.effective:  # a repeated update's signals may never have been delivered: due again
                continue
            for dataset in _touched(index, update) if early is None else early[i]:
                entities, logged = touched.setdefault(dataset, (set(), update.stamp.time_ms))
                entities.add(update.entity)
                touched[dataset] = (entities, max(logged, update.stamp.time_ms))
        out = []
        for dataset, (entities, logged) in sorted(touched.items()):
            signal = LineageSignal(dataset, tuple(sorted(entities)[:MAX_SIGNAL_ENTITIES]), logged)
            out.append(OutRecord(watch.topic, dataset.encode("utf-8"), encode(signal)))
        watch.signalled += len(out)
        return out


def _touched(index: WatchIndex, update: LineageUpdate) -> tuple[str, ...]:
    """The incident datasets ``update`` touches under ``index``, sorted."""
    return index.touched(update.entity, () if update.facts is None else update.facts.edges)
