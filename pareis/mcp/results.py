"""The typed results of the MCP tools: the answers' JSON shapes (:mod:`pareis.answers.shapes`, DESIGN §6), and the
paged lists and the evidence pack around them that only the tools return.

The SDK derives each tool's ``outputSchema`` from these and validates the ``structuredContent`` against them; extra
keys are forbidden here as there.
"""

from __future__ import annotations

from typing import Any, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from pareis.answers import shapes
from pareis.answers.shapes import GateResult, IncidentResult, ModelVerdicts, ReliabilityResult

__all__ = [
    "BlastRadiusResult",
    "BlastTotals",
    "EvidenceResult",
    "GateResult",
    "IncidentList",
    "IncidentResult",
    "IncidentSummaryResult",
    "ModelVerdicts",
    "Paging",
    "ReliabilityResult",
]

_STRICT = ConfigDict(extra="forbid")


class Paging(TypedDict):
    """The paging fields of a list answer (DataHub's lineage tool's, in snake_case)."""

    offset: int
    max_results: int
    returned: int
    total: int
    has_more: bool


@with_config(_STRICT)
class BlastTotals(TypedDict):
    """The full length of each paged list of the radius."""

    columns: int
    datasets: int
    features: int
    models: int


@with_config(_STRICT)
class BlastRadiusResult(Paging):
    """``pareis blast --json`` with ``columns``, ``datasets``, ``features`` and ``models`` windowed alike by
    ``offset``/``max_results``; ``total`` is the longest list's length, ``returned`` the longest window's."""

    assertion: str | None
    blast: shapes.Blast
    missing: NotRequired[list[str]]
    totals: BlastTotals


@with_config(_STRICT)
class IncidentSummaryResult(Paging):
    """``pareis analyze --json`` (the decision per group first among its keys: ``decisions``) with the blast
    radius's ``columns``, ``datasets``, ``features`` and ``models`` windowed alike by ``offset``/``max_results``, as
    :class:`BlastRadiusResult` windows them."""

    assertion: str | None
    decisions: list[shapes.Recommendation]
    blast: shapes.Blast
    incident: shapes.IncidentHead
    window: shapes.Window
    contamination: list[shapes.GroupVerdicts]
    owners: shapes.Owners
    tickets: list[shapes.TicketLink]
    totals: BlastTotals


@with_config(_STRICT)
class IncidentList(Paging):
    """Incidents, active first, then newest first; a page of them."""

    incidents: list[shapes.IncidentSummary]


@with_config(_STRICT)
class EvidenceResult(TypedDict):
    """The Article 10 evidence pack. ``format`` ``full``: ``markdown`` (what ``pareis evidence`` writes as ``.md``)
    and ``pack``, its JSON source (``kind`` ``pareis.evidence_pack.v1``: a header and one section per paragraph).
    ``format`` ``summary`` (the default): ``format``, the pack's ``header`` and its ``sections`` without their facts
    (``id``, ``title``, ``status``, ``summary``, ``missing``)."""

    model: str
    format: NotRequired[str]
    markdown: NotRequired[str]
    pack: NotRequired[dict[str, Any]]
    header: NotRequired[dict[str, Any]]
    sections: NotRequired[list[dict[str, Any]]]
