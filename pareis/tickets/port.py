"""The ticketer port: one ticket per incident per tool, found again by the incident URN.

The incident engine maps its outputs onto this port: *Open* → :meth:`Ticketer.open`, *Update* →
:meth:`Ticketer.comment`, *Resolve* → :meth:`Ticketer.comment` then :meth:`Ticketer.close` (through
:class:`~pareis.tickets.delivery.TicketDelivery`, which makes each step happen once). Every implementation
(Slack, Jira, Linear, the in-memory one) passes the same contract suite, ``tests/unit/test_tickets_contract.py``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pareis.core.brief import Brief
from pareis.core.impact import Severity
from pareis.core.owners import Owner

MARKER_PREFIX = "pareis incident: "
"""Written into every ticket body, followed by the incident URN, so that humans (and searches) can tell which
incident a ticket belongs to."""


@dataclass(frozen=True)
class IncidentTicket:
    """What a ticket says about one incident.

    ``body`` is Markdown (paragraphs separated by blank lines). ``brief``, when given, is the same content as a
    structure (:mod:`pareis.core.brief`: decision first), which each tool renders in its own format — Slack as Block
    Kit, Jira as an Atlassian Document, Linear as ``body``; without it (a ticket effect written before briefs
    existed), each tool renders ``body``. ``url`` links back to the incident (DataHub or Mission Control), when
    there is one. ``owners``: the failing dataset's owners, then the affected models'
    (:attr:`pareis.core.owners.IncidentOwners.everyone`); Slack mentions them, Jira and Linear assign the first
    mapped one and subscribe the others.
    """

    incident_urn: str
    title: str
    body: str
    severity: Severity = Severity.NONE
    url: str | None = None
    owners: tuple[Owner, ...] = ()
    brief: Brief | None = None

    def __post_init__(self) -> None:
        if not self.incident_urn:
            raise ValueError("incident_urn must not be empty")
        if not self.title.strip():
            raise ValueError("title must not be empty")


@dataclass(frozen=True)
class TicketRef:
    """Where a ticket lives: the tool's name and the id that tool's API takes back.

    ``id`` is opaque outside its tool: Slack ``"<channel id>/<message ts>"``, Jira the issue key, Linear the
    issue UUID. ``url`` is a human link when the tool gives one (Slack: the message's permalink). ``text`` is what
    the ticket's first message says, for a tool whose close rewrites it (Slack); it does not take part in equality.
    """

    tool: str
    id: str
    url: str | None = None
    text: str | None = field(default=None, compare=False)

    def to_json(self) -> str:
        """The ref as the delivery's ledger keeps it (:meth:`from_json` reads it back)."""
        return json.dumps({"tool": self.tool, "id": self.id, "url": self.url, "text": self.text}, sort_keys=True)

    @classmethod
    def from_json(cls, value: str) -> TicketRef:
        data = json.loads(value)
        return cls(str(data["tool"]), str(data["id"]), data.get("url"), data.get("text"))


@runtime_checkable
class Ticketer(Protocol):
    """One ticket tool: single requests, each carrying the key that finds its effect again in the tool.

    Contract (every method may raise :class:`~pareis.errors.Retriable`, :class:`~pareis.errors.Poison` or
    :class:`~pareis.errors.Fatal`, never a library error):

    * :meth:`open` creates the incident's ticket with one request that carries the incident's key (Slack message
      metadata, a Jira label, Linear's client-chosen issue id). Only Linear's (and the in-memory tool's) open is
      idempotent by itself; :class:`~pareis.tickets.delivery.TicketDelivery` makes every tool's so.
    * :meth:`mark` says where the tool stands before a create (``ticket`` None) or a comment on ``ticket``, so
      that :meth:`find` and :meth:`posted` afterwards read only what came since (Slack: a time; Jira: the
      project's newest issue number; Linear: nothing, its ids are chosen by us). Pareis records the mark before
      the request: when the answer is lost, the mark says where to look.
    * :meth:`find` returns the ticket an :meth:`open` made after ``since`` (a mark; ``""``: any time the tool
      can look back to), read from the tool's own consistent state, or None.
    * :meth:`comment` adds ``text`` carrying ``effect_id`` (Slack metadata, a Jira comment property, Linear's
      client-chosen comment id); :meth:`posted` says whether a comment carrying ``effect_id`` is on the ticket
      (posted after ``since``).
    * :meth:`close` moves the ticket to its tool's done state; closing a closed ticket changes nothing. ``final``,
      when given, is what the ticket says as of the resolve (its brief as of the heal), for a tool whose close
      rewrites the ticket (Slack); the same ``final`` makes the same request.
    """

    @property
    def tool(self) -> str:
        """The tool's name: ``slack``, ``jira``, ``linear`` (or ``memory``)."""
        ...

    def open(self, incident: IncidentTicket) -> TicketRef: ...

    def mark(self, ticket: TicketRef | None = None) -> str: ...

    def find(self, incident_urn: str, since: str = "") -> TicketRef | None: ...

    def comment(self, ticket: TicketRef, text: str, effect_id: str | None = None) -> None: ...

    def posted(self, ticket: TicketRef, effect_id: str, since: str = "") -> bool: ...

    def close(self, ticket: TicketRef, final: IncidentTicket | None = None) -> None: ...


def mapped(owners: tuple[Owner, ...], users: Mapping[str, str]) -> list[str]:
    """The tool's user ids of ``owners`` that ``users`` maps (by owner URN, else email, else user name), in order,
    each once: the Jira / Linear mapping of ``tickets.<tool>.users``."""
    out: list[str] = []
    for owner in owners:
        found = users.get(owner.urn) or (users.get(owner.email) if owner.email else None) or users.get(owner.name)
        if found and found not in out:
            out.append(found)
    return out


def marker(incident_urn: str) -> str:
    """The line every ticket body ends with."""
    return MARKER_PREFIX + incident_urn


def urn_digest(incident_urn: str, length: int = 24) -> str:
    """A short, stable, search-safe digest of an incident URN (hex; for labels and ids)."""
    return hashlib.sha256(incident_urn.encode()).hexdigest()[:length]
