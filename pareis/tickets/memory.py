"""An in-memory ticketer: the port's reference implementation, for tests and ``pareis demo``."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from pareis.errors import Poison
from pareis.tickets.port import IncidentTicket, TicketRef


@dataclass
class MemoryTicket:
    """One ticket as the in-memory tool holds it."""

    ref: TicketRef
    incident: IncidentTicket
    comments: list[str] = field(default_factory=list)
    closed: bool = False
    effects: list[str | None] = field(default_factory=list)
    """The effect id each comment carried (None: none), in the order of ``comments``."""


class MemoryTicketer:
    """Keeps tickets in a dict; thread-safe; ids are ``MEM-1``, ``MEM-2``, …; ``open`` is idempotent (one ticket
    per incident URN), like Linear's."""

    def __init__(self, tool: str = "memory") -> None:
        self._tool = tool
        self._lock = threading.Lock()
        self._tickets: dict[str, MemoryTicket] = {}
        self._by_urn: dict[str, str] = {}

    @property
    def tool(self) -> str:
        return self._tool

    @property
    def tickets(self) -> list[MemoryTicket]:
        """Every ticket, in creation order (for assertions)."""
        with self._lock:
            return list(self._tickets.values())

    def open(self, incident: IncidentTicket) -> TicketRef:
        with self._lock:
            existing = self._by_urn.get(incident.incident_urn)
            if existing is not None:
                return self._tickets[existing].ref
            ticket_id = f"MEM-{len(self._tickets) + 1}"
            ref = TicketRef(self._tool, ticket_id, f"memory://{self._tool}/{ticket_id}")
            self._tickets[ticket_id] = MemoryTicket(ref, incident)
            self._by_urn[incident.incident_urn] = ticket_id
            return ref

    def mark(self, ticket: TicketRef | None = None) -> str:
        return ""

    def find(self, incident_urn: str, since: str = "") -> TicketRef | None:
        with self._lock:
            ticket_id = self._by_urn.get(incident_urn)
            return None if ticket_id is None else self._tickets[ticket_id].ref

    def comment(self, ticket: TicketRef, text: str, effect_id: str | None = None) -> None:
        with self._lock:
            found = self._get(ticket)
            found.comments.append(text)
            found.effects.append(effect_id)

    def posted(self, ticket: TicketRef, effect_id: str, since: str = "") -> bool:
        with self._lock:
            return effect_id in self._get(ticket).effects

    def close(self, ticket: TicketRef, final: IncidentTicket | None = None) -> None:
        with self._lock:
            self._get(ticket).closed = True

    def _get(self, ticket: TicketRef) -> MemoryTicket:
        found = self._tickets.get(ticket.id) if ticket.tool == self._tool else None
        if found is None:
            raise Poison(f"{self._tool}: no ticket {ticket.id!r}")
        return found
