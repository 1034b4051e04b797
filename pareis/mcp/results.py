"""The typed results of the MCP tools: the answers layer's JSON contracts as TypedDicts (DESIGN §6).

The SDK derives each tool's ``outputSchema`` from these and validates the ``structuredContent`` against them, so
they must say exactly what the answers' ``to_json()`` say: extra keys are forbidden (a key the answers add and
these lack fails the call instead of vanishing), and the tests compare the tools' answers with the CLI's JSON.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

Severity = Literal["NONE", "LOW", "MEDIUM", "HIGH"]
Verdict = Literal["CONTAMINATED", "CLEAN", "UNKNOWN"]
IncidentState = Literal["ACTIVE", "RESOLVED"]
_STRICT = ConfigDict(extra="forbid")


# --- blast radius --------------------------------------------------------------------------------------------------


@with_config(_STRICT)
class ModelImpact(TypedDict):
    urn: str
    group: str | None
    poisoned_features: list[str]
    total_features: int
    ratio: float | None
    severity: Severity
    precision: Literal["column", "table"]


@with_config(_STRICT)
class Blast(TypedDict):
    failing_columns: list[str]
    origin_columns: list[str]
    columns: list[str]
    datasets: list[str]
    features: list[str]
    models: list[ModelImpact]
    severity: Severity
    failed_rows: int | None
    table_precision_features: list[str]
    lineage_incomplete: NotRequired[list[str]]


@with_config(_STRICT)
class BlastTotals(TypedDict):
    """The full length of each paged list of the radius."""

    columns: int
    datasets: int
    features: int
    models: int


@with_config(_STRICT)
class BlastRadiusResult(TypedDict):
    """``pareis blast --json`` with ``columns``, ``datasets``, ``features`` and ``models`` windowed alike by
    ``offset``/``max_results``; ``total`` is the longest list's length, ``returned`` the longest window's."""

    assertion: str | None
    blast: Blast
    totals: BlastTotals
    offset: int
    max_results: int
    returned: int
    total: int
    has_more: bool


# --- incidents -----------------------------------------------------------------------------------------------------


@with_config(_STRICT)
class IncidentHead(TypedDict):
    urn: str
    dataset: str
    assertions: list[str]
    state: IncidentState
    failed_rows: int | None


@with_config(_STRICT)
class Window(TypedDict):
    last_success_ms: int | None
    first_failure_ms: int
    healed_ms: int | None


@with_config(_STRICT)
class VersionVerdict(TypedDict):
    urn: str
    version: str | None
    trained_at_ms: int | None
    verdict: Verdict


@with_config(_STRICT)
class Rollback(TypedDict):
    urn: str
    version: str | None


@with_config(_STRICT)
class GroupVerdicts(TypedDict):
    group: str
    versions: list[VersionVerdict]
    safe_rollback: Rollback | None


@with_config(_STRICT)
class OwnerRef(TypedDict):
    urn: str
    email: str | None


@with_config(_STRICT)
class Owners(TypedDict):
    """The owners of the failing dataset (its siblings' too) and of each affected model (its group's too)."""

    dataset: list[OwnerRef]
    models: dict[str, list[OwnerRef]]


@with_config(_STRICT)
class TicketLink(TypedDict):
    """The incident's ticket in one tool, as the ticket delivery recorded it (``url`` None: the tool gave none)."""

    tool: str
    id: str
    label: str
    url: str | None


@with_config(_STRICT)
class IncidentResult(TypedDict):
    """``pareis analyze --json``."""

    assertion: str | None
    blast: Blast
    incident: IncidentHead
    window: Window
    contamination: list[GroupVerdicts]
    owners: Owners
    tickets: list[TicketLink]


@with_config(_STRICT)
class IncidentSummary(TypedDict):
    urn: str
    dataset: str
    state: IncidentState
    severity: Severity
    first_failure_ms: int
    healed_ms: int | None
    last_success_ms: int | None
    assertions: list[str]
    models: list[str]
    failed_rows: int | None
    tickets: list[TicketLink]


@with_config(_STRICT)
class IncidentList(TypedDict):
    """Incidents, active first, then newest first; a page of them."""

    incidents: list[IncidentSummary]
    offset: int
    max_results: int
    returned: int
    total: int
    has_more: bool


# --- model verdicts ------------------------------------------------------------------------------------------------


@with_config(_STRICT)
class ModelVersionVerdict(TypedDict):
    urn: str
    version: str | None
    trained_at_ms: int | None
    verdict: Verdict
    contaminated_by: list[str]


@with_config(_STRICT)
class IncidentVerdicts(TypedDict):
    urn: str
    dataset: str
    state: IncidentState
    window: Window
    versions: list[VersionVerdict]
    safe_rollback: Rollback | None


@with_config(_STRICT)
class ModelVerdicts(TypedDict):
    """A model's versions with their overall verdicts, each incident that evaluated them, and the rollback."""

    model: str
    group: str | None
    versions: list[ModelVersionVerdict]
    incidents: list[IncidentVerdicts]
    safe_rollback: Rollback | None


# --- retrain gate --------------------------------------------------------------------------------------------------


@with_config(_STRICT)
class GateCheck(TypedDict):
    id: str
    status: Literal["PASS", "WARN", "FAIL"]
    reason: str
    evidence: list[str]


@with_config(_STRICT)
class Override(TypedDict):
    reason: str


@with_config(_STRICT)
class GateResult(TypedDict):
    """``pareis gate --json`` (``schemas/pareis/gate.schema.json``)."""

    model: str
    evaluated: str
    evaluated_at_ms: int
    decision: Literal["GO", "NO-GO"]
    exit_code: int
    override: Override | None
    checks: list[GateCheck]
    incidents: list[str]
    safe_rollback: Rollback | None


# --- reliability and gaps ------------------------------------------------------------------------------------------


@with_config(_STRICT)
class ScoreComponent(TypedDict):
    name: str
    value: float | None
    """None: unknown (no data), left out of the score."""
    weight: float
    detail: str


@with_config(_STRICT)
class Score(TypedDict):
    urn: str
    score: float
    components: list[ScoreComponent]


@with_config(_STRICT)
class SuggestedTest(TypedDict):
    name: str
    yaml: str


@with_config(_STRICT)
class Gap(TypedDict):
    column: str
    dataset: str
    models: list[str]
    features: list[str]
    matches_past_incident: bool
    incidents: list[str]
    tests: list[SuggestedTest]


@with_config(_STRICT)
class ReliabilityResult(TypedDict):
    """``pareis protect --json``: scores with their components, and the gaps in rank order."""

    evaluated_at_ms: int
    datasets: list[Score]
    models: list[Score]
    gaps: list[Gap]


# --- evidence ------------------------------------------------------------------------------------------------------


@with_config(_STRICT)
class EvidenceResult(TypedDict):
    """The Article 10 evidence pack: ``markdown`` (what ``pareis evidence`` writes as ``.md``) and ``pack``, its
    JSON source (``kind`` ``pareis.evidence_pack.v1``: a header and one section per paragraph)."""

    model: str
    markdown: str
    pack: dict[str, Any]
