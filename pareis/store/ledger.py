"""The effect ledger: which effects have been delivered, so that redelivering one is a no-op.

Every effect has a deterministic id (DESIGN §1). The effects role asks :meth:`EffectLedger.seen` before
delivering and calls :meth:`EffectLedger.record` only after the outside world accepted the effect: recording
first would lose the effect on a crash in between, recording after can at worst deliver it twice, and the
ticketers' find-before-create turns that second delivery into a no-op for the one effect that must not repeat
(opening a ticket).

Implementations: :class:`MemoryLedger` (here) and :class:`pareis.store.ledger_redis.RedisLedger`; both pass
``tests/unit/test_ledger.py``. Both are also the read side's :class:`~pareis.contracts.ledger.LedgerValues`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from pareis.contracts.ledger import EffectLedger, LedgerValues

__all__ = ["EffectLedger", "LedgerValues", "MemoryLedger"]


class MemoryLedger:
    """An in-process ledger (tests, ``pareis demo``, ``run all`` without Redis)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._ids: set[str] = set()
        self._values: dict[str, str] = {}
        self._claims: dict[str, tuple[str, float]] = {}
        self._clock = clock

    def claim(self, effect_id: str, owner: str, ttl_s: float) -> bool:
        _check(effect_id)
        with self._lock:
            now = self._clock()
            held = self._claims.get(effect_id)
            if held is not None and held[0] != owner and held[1] > now:
                return False
            self._claims[effect_id] = (owner, now + ttl_s)
            return True

    def release(self, effect_id: str, owner: str) -> None:
        with self._lock:
            if self._claims.get(effect_id, ("", 0.0))[0] == owner:
                del self._claims[effect_id]

    def seen(self, effect_id: str) -> bool:
        with self._lock:
            return effect_id in self._ids

    def record(self, effect_id: str) -> None:
        _check(effect_id)
        with self._lock:
            self._ids.add(effect_id)

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._values.get(key)

    def get_many(self, keys: Sequence[str]) -> list[str | None]:
        with self._lock:
            return [self._values.get(key) for key in keys]

    def put(self, key: str, value: str) -> None:
        _check(key)
        with self._lock:
            self._values[key] = value


def _check(effect_id: str) -> None:
    if not effect_id:
        raise ValueError("effect id must not be empty")
