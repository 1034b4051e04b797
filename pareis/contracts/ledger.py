"""The effect ledger's port: which effects have been delivered, so that redelivering one is a no-op (the rules:
:mod:`pareis.store.ledger`, which implements it in memory; :mod:`pareis.store.ledger_redis` on Redis)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

TICKET_TOOLS = ("jira", "linear", "slack")
"""The ticket tools whose tickets the read side looks up (:func:`ticket_key`): the configurable ones."""


def ticket_key(tool: str, incident_urn: str) -> str:
    """The key under which the ticket delivery keeps the ref of ``incident_urn``'s ticket in ``tool`` (the open
    step's record, :class:`~pareis.tickets.delivery.TicketDelivery`; its value is
    :meth:`pareis.tickets.port.TicketRef.to_json`)."""
    return f"ticket/{tool}/{incident_urn}"


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


@runtime_checkable
class LedgerValues(Protocol):
    """The read side's view of the ledger: many :meth:`EffectLedger.put` values in one read (Mission Control's
    ticket links of a thousand incidents). Errors as :class:`EffectLedger`'s."""

    def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """The value under each of ``keys``, in their order (None: nothing)."""
        ...
