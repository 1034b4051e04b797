"""The JSON shapes of the read answers, declared once: what each answer's ``to_json()`` returns, so what
``pareis … --json`` prints, the web API serves and the MCP tools publish (their ``outputSchema``: :mod:`pareis.mcp.
results` adds the paging around them; DESIGN §6).

Extra keys are forbidden: the MCP SDK validates each tool's ``structuredContent`` against these, so a key an answer
adds and its shape lacks fails the call instead of vanishing (and the tests compare the tools' answers with the
CLI's JSON).
"""

from __future__ import annotations

from typing import Literal, NotRequired

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


# --- the recommendation (DESIGN §2.3; pareis.core.serving.Recommendation.to_json) -----------------------------------


@with_config(_STRICT)
class VersionRef(TypedDict):
    urn: str
    group: str | None
    version: str | None
    trained_at_ms: int | None


@with_config(_STRICT)
class ServingHow(TypedDict):
    """Why a version counts as serving: a deployment (and its status, null when unknown), an alias, or presumed."""

    deployment: NotRequired[str]
    status: NotRequired[str | None]
    alias: NotRequired[str]
    presumed: NotRequired[bool]


@with_config(_STRICT)
class ServingVersion(TypedDict):
    urn: str
    version: str | None
    how: list[ServingHow]


@with_config(_STRICT)
class Recommendation(TypedDict):
    """What to do now about one model group, over every incident that reached it."""

    group: str
    action: Literal["ROLL_BACK", "PROMOTE", "RETRAIN", "NONE"]
    target: VersionRef | None
    serving: list[ServingVersion]
    serving_known: bool
    contaminated: list[VersionRef]
    do_not_promote: list[str]
    incidents: list[str]
    reason: str


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
    decisions: list[Recommendation]
    blast: Blast
    incident: IncidentHead
    window: Window
    contamination: list[GroupVerdicts]
    owners: Owners
    tickets: list[TicketLink]


@with_config(_STRICT)
class IncidentSummary(TypedDict):
    decisions: list[Recommendation]
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
    """What to do now about the model's group, its versions with their overall verdicts, each incident that
    evaluated them, and the rollback."""

    decision: Recommendation
    model: str
    group: str | None
    versions: list[ModelVersionVerdict]
    incidents: list[IncidentVerdicts]
    safe_rollback: Rollback | None


# --- time travel ---------------------------------------------------------------------------------------------------


@with_config(_STRICT)
class TimeTravel(TypedDict):
    """Per input, whether the answer read it as of ``at`` (true) or as the index holds it today
    (:mod:`pareis.answers.time_travel`)."""

    incidents: bool
    lineage: bool
    removals: bool
    runs: bool
    schemas: bool
    versions: bool


@with_config(_STRICT)
class GateTimeTravel(TimeTravel):
    """:class:`TimeTravel` of the gate, which also judges dataset changes and deprecation."""

    dataset_changes: bool
    deprecation: bool


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
    time_travel: GateTimeTravel


# --- reliability and gaps ------------------------------------------------------------------------------------------


@with_config(_STRICT)
class ScoreComponent(TypedDict):
    name: str
    value: float | None
    weight: float
    detail: str


@with_config(_STRICT)
class Score(TypedDict):
    urn: str
    score: float | None  # None: no component known (a model with no upstream dataset)
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
    time_travel: TimeTravel
