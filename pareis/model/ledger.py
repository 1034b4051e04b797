"""The effect ledger's port: which effects have been delivered, so that redelivering one is a no-op (the rules:
:mod:`pareis.store.ledger`, which implements it in memory; :mod:`pareis.store.ledger_redis` on Redis)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class EffectLedger(Protocol):
    """A set of delivered effect ids.

    ``seen`` is true for an id once ``record`` returned for it (in any process sharing the store); recording
    twice is harmless. Errors are :class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`.
    """

    def seen(self, effect_id: str) -> bool: ...

    def record(self, effect_id: str) -> None: ...
