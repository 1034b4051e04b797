"""The watch index port: what every active incident watches in the lineage graph (DESIGN §3, live re-evaluation).

Written by the incidents role (an incident opened or updated: its watch set replaced; resolved: removed), read by
the lineage role on every batch to decide which lineage changes concern an active incident
(:mod:`pareis.core.watch`). The read is made cheap for the hot path: the index carries a *revision* that moves on
every write, and :meth:`WatchStore.index` returns None when the caller already holds the current revision, so a
lineage role re-reads the whole index only after the incidents role changed it.

Rules, identical in every implementation (``tests/unit/test_watch_store.py`` pins them):

* ``put`` replaces the watch set of each dataset given, as one atomic unit; an empty set removes the dataset.
* The revision is an opaque string; it differs after every ``put`` that changes something, and an index read
  returns the watch sets as of exactly its revision.

Implementations: :class:`MemoryWatchStore` and :class:`pareis.store.watch_redis.RedisWatchStore`. Errors are
:class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from typing import Protocol

from pareis.core.watch import WatchIndex


class WatchStore(Protocol):
    def put(self, watches: Mapping[str, Collection[str]]) -> None:
        """Replace the watch set of each incident dataset in ``watches`` (empty: remove it). One round trip."""
        ...

    def index(self, known: str | None = None) -> WatchIndex | None:
        """The whole index, or None when its revision is ``known`` (one small read; the whole index otherwise)."""
        ...

    def watches(self) -> dict[str, tuple[str, ...]]:
        """Every incident dataset's watch set (sorted), by dataset: for tests and the benchmark."""
        ...


class MemoryWatchStore:
    """:class:`WatchStore` in process memory; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[str, tuple[str, ...]] = {}
        self._revision = 0

    def put(self, watches: Mapping[str, Collection[str]]) -> None:
        with self._lock:
            changed = False
            for dataset, entities in watches.items():
                new = tuple(sorted(set(entities)))
                if self._sets.get(dataset, ()) == new:
                    continue
                changed = True
                if new:
                    self._sets[dataset] = new
                else:
                    self._sets.pop(dataset, None)
            if changed:
                self._revision += 1

    def index(self, known: str | None = None) -> WatchIndex | None:
        with self._lock:
            revision = str(self._revision)
            if revision == known:
                return None
            return WatchIndex.of(self._sets, revision)

    def watches(self) -> dict[str, tuple[str, ...]]:
        with self._lock:
            return dict(sorted(self._sets.items()))
