"""Keeping human edits of ``incidentInfo`` (DESIGN §3): a three-way merge of what Pareis proposes, what DataHub
holds now, and what Pareis wrote before.

People edit an incident in DataHub's UI: its stage (triage, investigation, …), its priority, its assignees. Pareis
rewrites the whole aspect on Update and Resolve (GMS has no patch for ``incidentInfo``), so on the REST path the
effects role reads the current aspect first and :func:`keep_edits` keeps each of those fields that differs from
what Pareis itself last wrote there (:class:`~pareis.core.intents.PriorFields`): someone changed it since. Every
other field is Pareis's (title, description, entities, state, source, times) and takes the proposed value.

A person's edit landing between the read and the write is still overwritten (a window of one round trip); GMS's
``If-Version-Match`` could close it, but its enforcement varies by version and endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pareis.core.intents import PriorFields


def keep_edits(proposed: Mapping[str, Any], current: Mapping[str, Any] | None, prior: PriorFields) -> dict[str, Any]:
    """``proposed`` (incidentInfo as Pegasus JSON) with ``current``'s priority, stage and assignees wherever they
    differ from ``prior``; ``proposed`` itself (a copy) when there is no current aspect."""
    out = dict(proposed)
    if current is None:
        return out
    priority = current.get("priority")
    if priority != prior.priority:
        _put(out, "priority", priority)
    assignees = current.get("assignees") or []
    if sorted(_actors(assignees)) != sorted(prior.assignees):
        _put(out, "assignees", list(assignees) or None)
    stage = (current.get("status") or {}).get("stage")
    if stage != prior.stage:
        status = dict(out.get("status") or {})
        _put(status, "stage", stage)
        out["status"] = status
    return out


def _actors(assignees: Any) -> list[str]:
    return [str(a.get("actor")) for a in assignees if isinstance(a, Mapping)]


def _put(obj: dict[str, Any], key: str, value: Any) -> None:
    # Pegasus JSON drops absent optional fields rather than writing null.
    if value is None:
        obj.pop(key, None)
    else:
        obj[key] = value
