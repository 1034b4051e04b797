"""The retrain gate (DESIGN §2.4): ten checks over what the index and the run history say about one model version
at one time ``at``, and the decision they make.

The caller gathers :class:`~pareis.core.gate_inputs.GateInputs` (the evaluated version's features, their source
columns, the upstream datasets and assertions with their latest runs at or before ``at``, the incidents whose blast
radius reaches the version, the upstream datasets' reliability scores); each check is a pure function of them.
Every list in a result is sorted; the same inputs give the same answer byte for byte.

Rules (the contract; ``tests/unit/test_gate_core.py`` pins each status of each check):

1. ``no_active_incident`` — FAIL when an incident reaching the version is active at ``at``.
2. ``upstream_assertions_passing`` — FAIL when an upstream assertion's latest SUCCESS/FAILURE run is a FAILURE;
   WARN when there is no upstream assertion at all.
3. ``no_assertion_error`` — FAIL when an upstream assertion's latest run of any kind is ERROR or INIT.
4. ``assertions_fresh`` — FAIL when an upstream assertion has no SUCCESS/FAILURE run at or before ``at``, when
   that run is older than ``max_age_ms``, or when a dataset it checks was modified (an ``operation``) after it.
5. ``feature_columns_covered`` — WARN when a feature source column is named by no assertion.
6. ``features_resolve`` — FAIL when the version lists a feature the index does not know or that is removed, a
   feature without a source, or a source the index does not know or that is removed ("source removed").
7. ``upstream_not_deprecated`` — FAIL when an upstream dataset or feature is deprecated.
8. ``latest_version_clean`` — version: FAIL when CONTAMINATED in any incident, WARN when reached with an UNKNOWN
   verdict; group (its newest version): WARN when CONTAMINATED or UNKNOWN, naming the safe rollback.
9. ``reliability_above_threshold`` — FAIL when an upstream dataset's reliability score is below ``min_score``.
10. ``feature_columns_present`` — FAIL when a source column is missing from its dataset's schema; WARN when that
    schema is unknown.

Any FAIL → NO-GO. ``strict`` turns every WARN into FAIL (the reason says so). An override reason turns NO-GO
into GO; the checks keep their statuses and the override is part of the answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from pareis.core.contamination import ModelVersion, Verdict
from pareis.core.gate_inputs import GateInputs, IncidentReach

HOUR_MS = 3_600_000


class Status(StrEnum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"


class Decision(StrEnum):
    GO = "GO"
    NO_GO = "NO-GO"


CHECK_IDS = (
    "no_active_incident",
    "upstream_assertions_passing",
    "no_assertion_error",
    "assertions_fresh",
    "feature_columns_covered",
    "features_resolve",
    "upstream_not_deprecated",
    "latest_version_clean",
    "reliability_above_threshold",
    "feature_columns_present",
)
"""The ten checks, in the order every answer lists them."""


@dataclass(frozen=True)
class Check:
    """One check's outcome: a status, a one-line reason, and the URNs behind it (sorted, unique)."""

    id: str
    status: Status
    reason: str
    evidence: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"evidence": list(self.evidence), "id": self.id, "reason": self.reason, "status": self.status.value}


@dataclass(frozen=True)
class Policy:
    """The knobs of one evaluation."""

    max_age_ms: int = 24 * HOUR_MS
    min_score: float = 60.0
    strict: bool = False
    override_reason: str | None = None


@dataclass(frozen=True)
class GateResult:
    """The checks (in :data:`CHECK_IDS` order), the decision, and what backs it."""

    checks: tuple[Check, ...]
    decision: Decision
    override_reason: str | None
    incidents: tuple[str, ...]
    safe_rollback: ModelVersion | None

    @property
    def exit_code(self) -> int:
        return 0 if self.decision is Decision.GO else 1

    @property
    def failing(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status is Status.FAIL)


def _sorted(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(items)))


def _names(urns: tuple[str, ...], limit: int = 3) -> str:
    shown = ", ".join(urns[:limit])
    return shown + (f" and {len(urns) - limit} more" if len(urns) > limit else "")


# --- the ten checks ---------------------------------------------------------------------------------------------
def no_active_incident(g: GateInputs) -> Check:
    active = [i for i in g.incidents if i.active]
    if not active:
        healed = len(g.incidents)
        why = f"no active incident reaches it ({healed} healed)" if healed else "no incident reaches it"
        return Check(CHECK_IDS[0], Status.PASS, why)
    urns = _sorted(i.urn for i in active)
    datasets = _sorted(i.dataset for i in active)
    how = "it is in the blast radius" if any(i.in_blast for i in active) else "a version of its group is"
    return Check(
        CHECK_IDS[0],
        Status.FAIL,
        f"{len(urns)} active incident(s) on {_names(datasets)} reach it ({how})",
        _sorted((*urns, *datasets)),
    )


def upstream_assertions_passing(g: GateInputs) -> Check:
    if not g.assertions:
        return Check(CHECK_IDS[1], Status.WARN, "no assertion tests the model's upstream: nothing is tested")
    failing = _sorted(a.urn for a in g.assertions if a.latest_counting and a.latest_counting.fails)
    if failing:
        return Check(
            CHECK_IDS[1], Status.FAIL, f"{len(failing)} of {len(g.assertions)} upstream assertions fail", failing
        )
    # A FAILURE of severity LOW (dbt's warn) is a warning (DESIGN §2.3): shown, never blocking.
    warned = _sorted(a.urn for a in g.assertions if a.latest_counting and a.latest_counting.warning)
    if warned:
        return Check(
            CHECK_IDS[1],
            Status.WARN,
            f"{len(warned)} of {len(g.assertions)} upstream assertions warn (a failure of severity LOW)",
            warned,
        )
    return Check(CHECK_IDS[1], Status.PASS, f"no upstream assertion fails ({len(g.assertions)} tested)")


def no_assertion_error(g: GateInputs) -> Check:
    broken = _sorted(a.urn for a in g.assertions if a.latest and not a.latest.result.counts)
    if broken:
        kinds = "/".join(sorted({a.latest.result.value for a in g.assertions if a.latest and a.urn in broken}))
        return Check(CHECK_IDS[2], Status.FAIL, f"{len(broken)} upstream assertion(s) last ran {kinds}", broken)
    return Check(CHECK_IDS[2], Status.PASS, "no upstream assertion last ran ERROR or INIT")


def assertions_fresh(g: GateInputs, max_age_ms: int) -> Check:
    never, stale, modified = [], [], []
    changed: set[str] = set()
    for a in g.assertions:
        run = a.latest_counting
        if run is None:
            never.append(a.urn)
            continue
        if g.at_ms - run.timestamp_ms > max_age_ms:
            stale.append(a.urn)
        touched = [d for d in a.datasets if g.modified_ms.get(d, run.timestamp_ms) > run.timestamp_ms]
        if touched:
            modified.append(a.urn)
            changed.update(touched)
    if not (never or stale or modified):
        return Check(
            CHECK_IDS[3], Status.PASS, f"every upstream assertion ran within {max_age_ms / HOUR_MS:g} h, after its data"
        )
    parts = []
    if never:
        parts.append(f"{len(never)} never ran")
    if stale:
        parts.append(f"{len(stale)} last ran more than {max_age_ms / HOUR_MS:g} h ago")
    if modified:
        parts.append(f"{len(modified)} ran before their dataset's latest change")
    return Check(
        CHECK_IDS[3],
        Status.FAIL,
        "upstream assertions: " + "; ".join(parts),
        _sorted((*never, *stale, *modified, *changed)),
    )


def feature_columns_covered(g: GateInputs) -> Check:
    if not g.source_columns:
        return Check(CHECK_IDS[4], Status.PASS, "no feature links to a column directly")
    bare = _sorted(c.urn for c in g.source_columns if not c.asserted_by)
    if bare:
        return Check(
            CHECK_IDS[4],
            Status.WARN,
            f"{len(bare)} of {len(g.source_columns)} feature source columns are named by no assertion",
            bare,
        )
    return Check(CHECK_IDS[4], Status.PASS, f"all {len(g.source_columns)} feature source columns are asserted")


def features_resolve(g: GateInputs) -> Check:
    unknown = _sorted(f.urn for f in g.features if not f.known and not f.removed)
    removed = _sorted(f.urn for f in g.features if f.removed)
    sourceless = _sorted(f.urn for f in g.features if f.known and not f.sources)
    lost = _sorted(s for f in g.features if f.known for s in f.unknown_sources)
    gone = _sorted(s for f in g.features if f.known for s in f.removed_sources)
    if not g.features:
        return Check(CHECK_IDS[5], Status.PASS, "the model lists no features (its training runs' inputs are read)")
    if not (unknown or removed or sourceless or lost or gone):
        return Check(CHECK_IDS[5], Status.PASS, f"all {len(g.features)} features and their sources resolve")
    parts = []
    if unknown:
        parts.append(f"{len(unknown)} feature(s) unknown")
    if removed:
        parts.append(f"{len(removed)} feature(s) removed")
    if sourceless:
        parts.append(f"{len(sourceless)} feature(s) without a source")
    if lost:
        parts.append(f"{len(lost)} source(s) unknown")
    if gone:
        parts.append(f"source removed: {_names(gone)}")
    return Check(CHECK_IDS[5], Status.FAIL, "; ".join(parts), _sorted((*unknown, *removed, *sourceless, *lost, *gone)))


def upstream_not_deprecated(g: GateInputs) -> Check:
    if g.deprecated:
        found = _sorted(g.deprecated)
        return Check(CHECK_IDS[6], Status.FAIL, f"deprecated upstream: {_names(found)}", found)
    return Check(CHECK_IDS[6], Status.PASS, "no upstream dataset or feature is deprecated")


def latest_version_clean(g: GateInputs) -> Check:
    contaminated = _sorted(i.urn for i in g.incidents if i.verdict is Verdict.CONTAMINATED)
    unknown = _sorted(i.urn for i in g.incidents if i.verdict is Verdict.UNKNOWN)
    rollback = _rollback(g.incidents)
    cure = f"; safe rollback: {rollback.urn}" if rollback else "; no safe rollback"
    if contaminated:
        evidence = _sorted((g.evaluated, *contaminated, *([rollback.urn] if rollback else [])))
        if g.is_group:
            why = "the newest version trained on poisoned data; retraining on clean data is the cure"
            return Check(CHECK_IDS[7], Status.WARN, why + cure, evidence)
        why = f"the version is CONTAMINATED in {len(contaminated)} incident(s)"
        return Check(CHECK_IDS[7], Status.FAIL, why + cure, evidence)
    if unknown:
        return Check(
            CHECK_IDS[7],
            Status.WARN,
            f"{len(unknown)} incident(s) reached the version but its training time is unknown",
            _sorted((g.evaluated, *unknown)),
        )
    if g.incidents:
        return Check(CHECK_IDS[7], Status.PASS, f"CLEAN in each of the {len(g.incidents)} incident(s) that reached it")
    return Check(CHECK_IDS[7], Status.PASS, "no incident reached the version")


def reliability_above_threshold(g: GateInputs, min_score: float) -> Check:
    low = _sorted(d for d in g.upstream_datasets if d in g.scores and g.scores[d] < min_score)
    if low:
        worst = min(g.scores[d] for d in low)
        return Check(
            CHECK_IDS[8],
            Status.FAIL,
            f"{len(low)} upstream dataset(s) score below {min_score:g} (lowest {worst:g})",
            low,
        )
    scored = [g.scores[d] for d in g.upstream_datasets if d in g.scores]
    if not scored:
        return Check(CHECK_IDS[8], Status.PASS, "no upstream dataset to score")
    return Check(
        CHECK_IDS[8], Status.PASS, f"every upstream dataset scores at least {min_score:g} (lowest {min(scored):g})"
    )


def feature_columns_present(g: GateInputs) -> Check:
    missing = _sorted(c.urn for c in g.source_columns if c.schema_known and not c.present)
    unknown = _sorted(c.urn for c in g.source_columns if not c.schema_known)
    if missing:
        return Check(
            CHECK_IDS[9], Status.FAIL, f"{len(missing)} feature source column(s) missing from their schema", missing
        )
    if unknown:
        return Check(
            CHECK_IDS[9], Status.WARN, f"{len(unknown)} feature source column(s) have no known schema", unknown
        )
    return Check(CHECK_IDS[9], Status.PASS, f"all {len(g.source_columns)} feature source columns are in their schemas")


# --- the decision -----------------------------------------------------------------------------------------------
def checks(g: GateInputs, policy: Policy = Policy()) -> tuple[Check, ...]:
    """The ten checks in order, before ``strict``."""
    return (
        no_active_incident(g),
        upstream_assertions_passing(g),
        no_assertion_error(g),
        assertions_fresh(g, policy.max_age_ms),
        feature_columns_covered(g),
        features_resolve(g),
        upstream_not_deprecated(g),
        latest_version_clean(g),
        reliability_above_threshold(g, policy.min_score),
        feature_columns_present(g),
    )


def evaluate(g: GateInputs, policy: Policy = Policy()) -> GateResult:
    """The ten checks under ``policy`` and the decision: any FAIL is NO-GO unless overridden."""
    found = checks(g, policy)
    if policy.strict:
        found = tuple(
            replace(c, status=Status.FAIL, reason=f"{c.reason} (strict: WARN is FAIL)")
            if c.status is Status.WARN
            else c
            for c in found
        )
    blocked = any(c.status is Status.FAIL for c in found)
    override = policy.override_reason if blocked else None
    decision = Decision.NO_GO if blocked and override is None else Decision.GO
    return GateResult(
        checks=found,
        decision=decision,
        override_reason=override,
        incidents=_sorted(i.urn for i in g.incidents),
        safe_rollback=_rollback(g.incidents),
    )


def _rollback(incidents: tuple[IncidentReach, ...]) -> ModelVersion | None:
    """The safe rollback named by the most recent incident reaching the version that names one."""
    for incident in sorted(incidents, key=lambda i: (i.first_failure_ms, i.urn), reverse=True):
        if incident.safe_rollback is not None:
            return incident.safe_rollback
    return None
