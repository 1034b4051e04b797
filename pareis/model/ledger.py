"""The effect ledger's port: which effects have been delivered, so that redelivering one is a no-op (the rules:
:mod:`pareis.store.ledger`, which implements it in memory; :mod:`pareis.store.ledger_redis` on Redis)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class EffectLedger(Protocol):
    """A set of delivered effect ids, and the progress of deliveries in flight (:meth:`get`, :meth:`put`).

    ``seen`` is true for an id once ``record`` returned for it (in any process sharing the store); recording
    twice is harmless. Errors are :class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`.
    """

    def seen(self, effect_id: str) -> bool: ...

    def record(self, effect_id: str) -> None: ...

    def get(self, key: str) -> str | None:
        """The value :meth:`put` last stored under ``key`` (None: nothing). A delivery's progress — which step
        was attempted, from where, and what it made (a ticket's id) — lives here, kept as long as the entries
        :meth:`record` makes."""
        ...

    def put(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` (replacing what was there); visible to every process once it returns."""
        ...

    def claim(self, effect_id: str, owner: str, ttl_s: float) -> bool:
        """Take the exclusive right to deliver ``effect_id`` for ``ttl_s`` seconds (atomic: of two consumers
        delivering the same effect at once — a redelivery to a new owner while the old one is still busy —
        exactly one gets it). True when ``owner`` holds it (again); the claim lapses by itself, so a crashed
        holder never blocks the effect for longer than ``ttl_s``."""
        ...

    def release(self, effect_id: str, owner: str) -> None:
        """Give up ``owner``'s claim on ``effect_id`` (nothing when another owner holds it)."""
        ...
