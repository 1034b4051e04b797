"""An incident's tickets, as the ticket delivery recorded them (DESIGN §3: one ticket per incident per tool).

The ticket delivery (:class:`~pareis.tickets.delivery.TicketDelivery`) keeps each ticket's ref in the effect ledger
under :func:`pareis.contracts.ledger.ticket_key` when it opens it; the read side reads those refs — for any number of
incidents, in one :meth:`~pareis.contracts.ledger.LedgerValues.get_many` — and never asks the tools. An incident has a
link per tool that opened its ticket; none when the sources have no ledger (files, GMS) or its open has not been
delivered yet.

JSON of a link (keys sorted): ``{"tool", "id", "label", "url"}`` — ``id`` the tool's own ticket id (Slack
``<channel>/<ts>``, the Jira issue key, the Linear issue id), ``label`` what a person reads (the Jira key, the Linear
identifier such as ``ENG-42`` when its URL carries one, Slack's ``<channel>/<ts>``), ``url`` the ticket's web
address when the tool gave one (Jira, Linear; Slack's ref has none).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from pareis.answers.sources import Sources

_LINEAR_IDENTIFIER = re.compile(r"/issue/([A-Za-z][A-Za-z0-9]*-\d+)(?:/|$)")


@dataclass(frozen=True)
class TicketLink:
    """One incident's ticket in one tool."""

    tool: str
    id: str
    label: str
    url: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "tool": self.tool, "url": self.url}


def ticket_links(sources: Sources, urns: Sequence[str]) -> dict[str, tuple[TicketLink, ...]]:
    """Every incident of ``urns``' ticket links, by tool name, from one ledger read (each URN a key)."""
    from pareis.contracts.ledger import TICKET_TOOLS, ticket_key

    found: dict[str, tuple[TicketLink, ...]] = {urn: () for urn in urns}
    if sources.tickets is None or not found:
        return found
    wanted = sorted(found)
    keys = [ticket_key(tool, urn) for urn in wanted for tool in TICKET_TOOLS]
    values = iter(sources.tickets.get_many(keys))
    for urn in wanted:
        links = [_link(tool, next(values)) for tool in TICKET_TOOLS]
        found[urn] = tuple(link for link in links if link is not None)
    return found


def _link(tool: str, value: str | None) -> TicketLink | None:
    """The link of a recorded ref (:meth:`pareis.tickets.port.TicketRef.to_json`: ``{tool, id, url, text}``); None
    when nothing is recorded, or what is there is not a ref of ``tool``. Read as plain JSON, without the ref's text:
    a list reads thousands."""
    if value is None:
        return None
    try:
        data = orjson.loads(value)
        ref_tool, ref_id, url = data["tool"], data["id"], data.get("url")
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None  # not a ref (a foreign value under the key): no link rather than no page
    if ref_tool != tool or not isinstance(ref_id, str) or not ref_id or not (url is None or isinstance(url, str)):
        return None
    return TicketLink(tool, ref_id, label_of(tool, ref_id, url), url)


def label_of(tool: str, ticket_id: str, url: str | None) -> str:
    """What a person reads for a ticket: Linear's identifier from its URL (its id is a UUID), else the id."""
    if tool == "linear" and url:
        match = _LINEAR_IDENTIFIER.search(url)
        if match:
            return match.group(1)
    return ticket_id
