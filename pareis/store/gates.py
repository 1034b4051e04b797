"""The published-gate ledger: the retrain gate's decision the scores role last published on ``pareis.gate.v1`` for
each model URN (a version or a group), and when (DESIGN §1, §2.4).

The scores role publishes a model's gate answer only when its decision changes; this remembers what it last
published. As :mod:`pareis.store.scores` does for scores, an entry carries the input position (partition, offset)
of the batch that published it, so that a batch redone after a crash (whose records may never have been delivered)
recognises its own entries and publishes them again.

Implementations: :class:`MemoryGateLedger` and :class:`pareis.store.gates_redis.RedisGateLedger`; both pass
``tests/unit/test_gate_ledger.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import NamedTuple, Protocol


class Decided(NamedTuple):
    """A gate answer as published: its decision (``GO``, ``NO-GO`` or ``CANNOT_EVALUATE``), the version it evaluated
    (``""`` when it could not evaluate), its evaluation time, and the input position recorded with it."""

    decision: str
    evaluated: str
    at_ms: int
    partition: int = -1
    offset: int = -1


class GateLedger(Protocol):
    """Errors are :class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`."""

    def get(self, models: Iterable[str]) -> dict[str, Decided]:
        """The recorded answer of each model that has one (one round trip)."""
        ...

    def put(self, decided: Mapping[str, Decided]) -> None:
        """Record ``decided``, replacing earlier entries (one round trip)."""
        ...


class MemoryGateLedger:
    """:class:`GateLedger` in a dict; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, Decided] = {}

    def get(self, models: Iterable[str]) -> dict[str, Decided]:
        with self._lock:
            return {m: self._entries[m] for m in sorted(set(models)) if m in self._entries}

    def put(self, decided: Mapping[str, Decided]) -> None:
        with self._lock:
            self._entries.update(decided)
