"""The published-score ledger: the last reliability score Pareis wrote for each entity, and when (DESIGN §2.5).

The incidents role writes ``io.pareis.reliability_score`` only when an entity's value changes; this remembers what
it last wrote. A write is recorded with the input position (partition, offset) of the batch that made it, so a
batch redone after an aborted Kafka transaction (whose writes never became visible) recognises its own entries —
same partition, offset at or after the batch's first — and writes again.

Implementations: :class:`MemoryScoreLedger` and :class:`pareis.store.scores_redis.RedisScoreLedger`; both pass
``tests/unit/test_score_ledger.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import NamedTuple, Protocol


class Published(NamedTuple):
    """A score as written: its value, the time of the write, and the last input position of its batch."""

    score: float
    at_ms: int
    partition: int = -1
    offset: int = -1


class ScoreLedger(Protocol):
    """Errors are :class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`."""

    def get(self, urns: Iterable[str]) -> dict[str, Published]:
        """The recorded write of each URN that has one (one round trip)."""
        ...

    def put(self, writes: Mapping[str, Published]) -> None:
        """Record ``writes``, replacing earlier entries (one round trip)."""
        ...


class MemoryScoreLedger:
    """:class:`ScoreLedger` in a dict; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, Published] = {}

    def get(self, urns: Iterable[str]) -> dict[str, Published]:
        with self._lock:
            return {u: self._entries[u] for u in sorted(set(urns)) if u in self._entries}

    def put(self, writes: Mapping[str, Published]) -> None:
        with self._lock:
            self._entries.update(writes)
