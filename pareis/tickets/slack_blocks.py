"""An incident's Slack message: Block Kit blocks rendered from its brief (:mod:`pareis.core.brief`), decision first,
and the message's ``text`` (the fallback Slack shows in notifications and where blocks cannot be shown).

The blocks: a ``header`` with the severity and the decision; a ``section`` per affected group's decision; one
``section`` each for the retrain status, the owners (people Slack knows mentioned) and the next step; a ``divider``;
the evidence sections; an ``actions`` block with a button per link (the incident in DataHub, in Mission Control);
a ``context`` with the incident marker. Within Slack's documented limits: at most :data:`MAX_BLOCKS` blocks (one
kept free for the close's "Resolved" block), a header's text at most 150 characters, a section's at most 3000, a
button's at most 75. A ticket without a brief (an effect from before briefs) is text only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pareis.core.brief import DECISION, NEXT_STEP, OWNERS, RETRAIN, Section, Span
from pareis.core.incident_text import plain_text
from pareis.tickets.port import IncidentTicket, marker

MAX_BLOCKS = 50
"""Slack's limit of blocks in a message."""
HEADER_MAX, SECTION_MAX, BUTTON_MAX = 150, 3000, 75
"""Slack's limits: a header's plain text, a section's text, a button's text (characters)."""
EMOJI = {"HIGH": ":red_circle:", "MEDIUM": ":large_orange_circle:", "LOW": ":large_yellow_circle:"}
RESOLVED = ":white_check_mark: *Resolved* — "
_DECIDED = (RETRAIN, OWNERS, NEXT_STEP)
"""The sections shown beside the decisions, before the divider; every other section is evidence, after it."""


def emoji(severity: str) -> str:
    return EMOJI.get(severity, ":white_circle:")


def text(incident: IncidentTicket, mentions: Sequence[str] = ()) -> str:
    """The message's ``text``: severity and title on the first line, the marker on the last (what the close reads
    back), between them the decision part of the brief (else the body), the owners and the link."""
    body = incident.body.strip()
    if incident.brief is not None:
        body = plain_text(incident.brief, only=(DECISION, RETRAIN, NEXT_STEP))
    lines = [f"{emoji(str(incident.severity))} *[{incident.severity}] {incident.title}*", "", body]
    if mentions:
        lines += ["", "Owners: " + ", ".join(mentions)]
    if incident.url:
        lines += ["", f"<{incident.url}|Open the incident>"]
    return "\n".join([*lines, "", f"_{marker(incident.incident_urn)}_"])


def blocks(incident: IncidentTicket, mentions: Mapping[str, str]) -> list[dict[str, Any]] | None:
    """The message's blocks (None without a brief); ``mentions``: an owner's label in the brief (email or name) →
    how Slack mentions it (``<@U…>``)."""
    found = incident.brief
    if found is None:
        return None
    title = f"{emoji(found.severity)} [{found.severity}] {found.headline}"
    out: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _cut(title, HEADER_MAX), "emoji": True}}
    ]
    decision = found.section(DECISION)
    out += [_section(mrkdwn(line)) for line in (decision.lines if decision else ())]
    for name in _DECIDED:
        part = found.section(name)
        if part is not None:
            out.append(_section(_titled(part, mentions if name == OWNERS else {})))
    evidence = [s for s in found.sections if s.title not in (DECISION, *_DECIDED)]
    tail = _tail(found.links, incident.incident_urn)
    room = MAX_BLOCKS - 1 - len(out) - len(tail) - 1  # one kept for the close, one for the divider
    if evidence and room > 0:
        out.append({"type": "divider"})
        out += [_section(_titled(s, {})) for s in evidence[:room]]
    return out + tail


def resolved(rendered: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The close's blocks: a "Resolved" section above the message's blocks (as of the heal)."""
    note = _section(RESOLVED + "the postmortem is in the thread.")
    return [note, *rendered][:MAX_BLOCKS]


def mrkdwn(line: Iterable[Span], mentions: Mapping[str, str] | None = None) -> str:
    """A line in Slack's mrkdwn: ``&``, ``<``, ``>`` escaped, links as ``<url|text>``, emphasis as ``*text*``; a
    span whose text is in ``mentions`` (an owner) becomes the mention."""
    out = []
    for span in line:
        if mentions and span.text in mentions:
            out.append(mentions[span.text])
            continue
        label = _escape(span.text)
        if span.url:
            label = f"<{span.url.replace('|', '%7C').replace('>', '%3E')}|{label}>"
        if span.strong and span.text.strip():
            core = label.strip(" ")
            label = label[: len(label) - len(label.lstrip(" "))] + f"*{core}*" + label[len(label.rstrip(" ")) :]
        out.append(label)
    return "".join(out)


def _titled(section: Section, mentions: Mapping[str, str]) -> str:
    return f"*{section.title}*\n" + "\n".join(f"• {mrkdwn(line, mentions)}" for line in section.lines)


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _cut(text, SECTION_MAX)}}


def _tail(links: Sequence[Span], incident_urn: str) -> list[dict[str, Any]]:
    """The buttons to the incident's pages (when any), then the marker."""
    buttons = [
        {
            "type": "button",
            "text": {"type": "plain_text", "text": _cut(link.text, BUTTON_MAX)},
            "url": link.url,
            "action_id": f"pareis-link-{i}",
        }
        for i, link in enumerate(links)
        if link.url
    ]
    out: list[dict[str, Any]] = [{"type": "actions", "elements": buttons}] if buttons else []
    out.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"_{marker(incident_urn)}_"}]})
    return out


def _escape(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"
