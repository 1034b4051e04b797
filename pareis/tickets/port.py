"""The ticketer port: one ticket per incident per tool, found again by the incident URN.

The incident engine maps its outputs onto this port: *Open* → :meth:`Ticketer.open`, *Update* →
:meth:`Ticketer.comment`, *Resolve* → :meth:`Ticketer.close`. Every implementation (Slack, Jira, Linear, the
in-memory one) passes the same contract suite, ``tests/unit/test_tickets_contract.py``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pareis.core.impact import Severity
from pareis.core.owners import Owner

MARKER_PREFIX = "pareis incident: "
"""Written into every ticket body, followed by the incident URN, so that humans (and searches) can tell which
incident a ticket belongs to."""


@dataclass(frozen=True)
class IncidentTicket:
    """What a ticket says about one incident.

    ``body`` is Markdown-flavoured plain text (paragraphs separated by blank lines); each tool renders it in its
    own format. ``url`` links back to the incident (DataHub or Mission Control), when there is one. ``owners``:
    the failing dataset's owners, then the affected models' (:attr:`pareis.core.owners.IncidentOwners.everyone`);
    Slack mentions them, Jira and Linear assign the first mapped one and subscribe the others.
    """

    incident_urn: str
    title: str
    body: str
    severity: Severity = Severity.NONE
    url: str | None = None
    owners: tuple[Owner, ...] = ()

    def __post_init__(self) -> None:
        if not self.incident_urn:
            raise ValueError("incident_urn must not be empty")
        if not self.title.strip():
            raise ValueError("title must not be empty")


@dataclass(frozen=True)
class TicketRef:
    """Where a ticket lives: the tool's name and the id that tool's API takes back.

    ``id`` is opaque outside its tool: Slack ``"<channel id>/<message ts>"``, Jira the issue key, Linear the
    issue UUID. ``url`` is a human link when the tool gives one.
    """

    tool: str
    id: str
    url: str | None = None


@runtime_checkable
class Ticketer(Protocol):
    """One ticket tool.

    Contract (every method may raise :class:`~pareis.errors.Retriable`, :class:`~pareis.errors.Poison` or
    :class:`~pareis.errors.Fatal`, never a library error):

    * :meth:`open` returns the incident's existing ticket when :meth:`find` sees one, and creates it otherwise,
      so calling it again after a crash never makes a second ticket.
    * :meth:`find` returns the ticket :meth:`open` made for that URN, or None.
    * :meth:`comment` adds ``text`` to the ticket.
    * :meth:`close` adds ``text`` (none when ``text`` is None) and moves the ticket to its tool's done state;
      closing a closed ticket changes nothing. Delivery closes in two steps recorded apart — the text as a
      :meth:`comment`, then ``close(ticket, None)`` — so that a retry of the state change never posts the text
      again.

    Only ``open`` is idempotent by itself. A comment, or a close's text, is posted again if the same call is
    repeated (the effect ledger prevents that, except when a crash falls between the post and the ledger record).
    """

    @property
    def tool(self) -> str:
        """The tool's name: ``slack``, ``jira``, ``linear`` (or ``memory``)."""
        ...

    def open(self, incident: IncidentTicket) -> TicketRef: ...

    def find(self, incident_urn: str) -> TicketRef | None: ...

    def comment(self, ticket: TicketRef, text: str) -> None: ...

    def close(self, ticket: TicketRef, text: str | None) -> None: ...


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
