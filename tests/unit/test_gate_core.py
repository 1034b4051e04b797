"""The ten checks of the retrain gate (DESIGN §2.4) as pure functions: PASS, WARN and FAIL of each, the decision,
``strict`` and the override (pareis/core/gate.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pareis.core.contamination import ModelVersion, Verdict
from pareis.core.gate import (
    CHECK_IDS,
    HOUR_MS,
    Decision,
    Policy,
    Status,
    checks,
    evaluate,
)
from pareis.core.gate_inputs import FeatureState, GateInputs, IncidentReach, SourceColumn, UpstreamAssertion
from pareis.core.runs import AssertionRun, ResultType

AT = 1_760_000_000_000
DS = "urn:li:dataset:(urn:li:dataPlatform:postgres,db.t,PROD)"
COL = f"urn:li:schemaField:({DS},x)"
FEATURE = "urn:li:mlFeature:(fs,x)"
VERSION = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,m_1,PROD)"
GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,m,PROD)"
ASSERTION = "urn:li:assertion:a"
INCIDENT = "urn:li:incident:pareis-1"
ROLLBACK = ModelVersion("urn:li:mlModel:(urn:li:dataPlatform:mlflow,m_0,PROD)", GROUP, "0", AT - 10 * HOUR_MS)


def run(result: ResultType, age_h: float = 1) -> AssertionRun:
    return AssertionRun(ASSERTION, AT - int(age_h * HOUR_MS), result, DS)


def healthy(**changes: object) -> GateInputs:
    """A version whose every check passes."""
    ok = run(ResultType.SUCCESS)
    base = GateInputs(
        model=VERSION,
        evaluated=VERSION,
        is_group=False,
        at_ms=AT,
        features=(FeatureState(FEATURE, True, (COL,)),),
        source_columns=(SourceColumn(COL, True, True, (ASSERTION,)),),
        upstream_datasets=(DS,),
        assertions=(UpstreamAssertion(ASSERTION, (DS,), (COL,), ok, ok),),
        scores={DS: 90.0},
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def status(g: GateInputs, check: str, policy: Policy | None = None) -> tuple[Status, tuple[str, ...]]:
    found = {c.id: c for c in checks(g, policy or Policy())}[check]
    return found.status, found.evidence


def incident(verdict: Verdict, *, active: bool, in_blast: bool = True) -> IncidentReach:
    return IncidentReach(INCIDENT, DS, AT - 5 * HOUR_MS, None if active else AT - HOUR_MS, in_blast, verdict, ROLLBACK)


def test_a_healthy_version_passes_every_check_in_order() -> None:
    result = evaluate(healthy())
    assert [c.id for c in result.checks] == list(CHECK_IDS)
    assert {c.status for c in result.checks} == {Status.PASS}
    assert result.decision is Decision.GO and result.exit_code == 0
    assert result.incidents == () and result.safe_rollback is None


def test_no_active_incident() -> None:
    assert status(healthy(incidents=(incident(Verdict.CLEAN, active=False),)), "no_active_incident")[0] is Status.PASS
    fail, evidence = status(healthy(incidents=(incident(Verdict.CLEAN, active=True),)), "no_active_incident")
    assert fail is Status.FAIL and evidence == (DS, INCIDENT)
    # A version outside the blast radius whose group is reached is blocked all the same (as the incidents role does).
    group_only = healthy(incidents=(incident(Verdict.CLEAN, active=True, in_blast=False),))
    assert status(group_only, "no_active_incident")[0] is Status.FAIL


def test_upstream_assertions_passing() -> None:
    assert status(healthy(), "upstream_assertions_passing")[0] is Status.PASS
    assert status(healthy(assertions=()), "upstream_assertions_passing") == (Status.WARN, ())
    bad = run(ResultType.FAILURE)
    failing = healthy(assertions=(UpstreamAssertion(ASSERTION, (DS,), (COL,), bad, bad),))
    assert status(failing, "upstream_assertions_passing") == (Status.FAIL, (ASSERTION,))


def test_a_failure_of_severity_low_warns_and_does_not_block() -> None:
    """DESIGN §2.3: a FAILURE whose result.severity is LOW (dbt's warn) is a warning: check 2 WARN, GO."""
    warn = replace(run(ResultType.FAILURE), severity="LOW", warning=True)
    warned = healthy(assertions=(UpstreamAssertion(ASSERTION, (DS,), (COL,), warn, warn),))
    assert status(warned, "upstream_assertions_passing") == (Status.WARN, (ASSERTION,))
    assert evaluate(warned).decision is Decision.GO
    assert evaluate(warned, Policy(strict=True)).decision is Decision.NO_GO, "--strict turns the WARN into FAIL"
    # Opened on LOW severity (incidents.open_on_low_severity): no warning, a failure like any other.
    counted = replace(run(ResultType.FAILURE), severity="LOW")
    failing = healthy(assertions=(UpstreamAssertion(ASSERTION, (DS,), (COL,), counted, counted),))
    assert status(failing, "upstream_assertions_passing") == (Status.FAIL, (ASSERTION,))


def test_no_assertion_error_reads_the_latest_run_of_any_kind() -> None:
    ok = run(ResultType.SUCCESS, 2)
    for kind in (ResultType.ERROR, ResultType.INIT):
        errored = healthy(assertions=(UpstreamAssertion(ASSERTION, (DS,), (), run(kind), ok),))
        assert status(errored, "no_assertion_error") == (Status.FAIL, (ASSERTION,))
        # ERROR and INIT runs say nothing about the data: the passing check reads the counting run.
        assert status(errored, "upstream_assertions_passing")[0] is Status.PASS
    assert status(healthy(), "no_assertion_error")[0] is Status.PASS


def test_assertions_fresh() -> None:
    assert status(healthy(), "assertions_fresh")[0] is Status.PASS
    never = healthy(assertions=(UpstreamAssertion(ASSERTION, (DS,), (), run(ResultType.INIT), None),))
    assert status(never, "assertions_fresh") == (Status.FAIL, (ASSERTION,))
    old = run(ResultType.SUCCESS, 30)
    stale = healthy(assertions=(UpstreamAssertion(ASSERTION, (DS,), (), old, old),))
    assert status(stale, "assertions_fresh")[0] is Status.FAIL
    assert status(stale, "assertions_fresh", Policy(max_age_ms=48 * HOUR_MS))[0] is Status.PASS
    # DataHub's circuit-breaker rule: the dataset changed after the assertion last ran.
    changed = healthy(modified_ms={DS: AT - HOUR_MS // 2})
    assert status(changed, "assertions_fresh") == (Status.FAIL, tuple(sorted((ASSERTION, DS))))
    before = healthy(modified_ms={DS: AT - 2 * HOUR_MS})
    assert status(before, "assertions_fresh")[0] is Status.PASS


def test_feature_columns_covered() -> None:
    assert status(healthy(), "feature_columns_covered")[0] is Status.PASS
    bare = healthy(source_columns=(SourceColumn(COL, True, True, ()),))
    assert status(bare, "feature_columns_covered") == (Status.WARN, (COL,))


def test_features_resolve() -> None:
    assert status(healthy(), "features_resolve")[0] is Status.PASS
    unknown = healthy(features=(FeatureState(FEATURE, False),))
    assert status(unknown, "features_resolve") == (Status.FAIL, (FEATURE,))
    sourceless = healthy(features=(FeatureState(FEATURE, True, ()),))
    assert status(sourceless, "features_resolve") == (Status.FAIL, (FEATURE,))
    lost = healthy(features=(FeatureState(FEATURE, True, (COL,), (COL,)),))
    assert status(lost, "features_resolve") == (Status.FAIL, (COL,))


def test_upstream_not_deprecated() -> None:
    assert status(healthy(), "upstream_not_deprecated")[0] is Status.PASS
    assert status(healthy(deprecated=(DS, FEATURE)), "upstream_not_deprecated") == (Status.FAIL, (DS, FEATURE))


def test_latest_version_clean_for_a_version() -> None:
    assert status(healthy(), "latest_version_clean")[0] is Status.PASS
    assert status(healthy(incidents=(incident(Verdict.CLEAN, active=False),)), "latest_version_clean")[0] is (
        Status.PASS
    )
    fail, evidence = status(healthy(incidents=(incident(Verdict.CONTAMINATED, active=False),)), "latest_version_clean")
    assert fail is Status.FAIL and evidence == tuple(sorted((VERSION, INCIDENT, ROLLBACK.urn)))
    assert status(healthy(incidents=(incident(Verdict.UNKNOWN, active=False),)), "latest_version_clean")[0] is (
        Status.WARN
    )


def test_latest_version_clean_for_a_group_warns_and_names_the_rollback() -> None:
    g = healthy(model=GROUP, is_group=True, incidents=(incident(Verdict.CONTAMINATED, active=False),))
    result = evaluate(g)
    check = result.checks[CHECK_IDS.index("latest_version_clean")]
    assert check.status is Status.WARN and ROLLBACK.urn in check.reason and ROLLBACK.urn in check.evidence
    assert result.decision is Decision.GO and result.safe_rollback == ROLLBACK
    assert result.incidents == (INCIDENT,)


def test_reliability_above_threshold() -> None:
    assert status(healthy(), "reliability_above_threshold")[0] is Status.PASS
    assert status(healthy(scores={DS: 59.5}), "reliability_above_threshold") == (Status.FAIL, (DS,))
    assert status(healthy(scores={DS: 59.5}), "reliability_above_threshold", Policy(min_score=50))[0] is Status.PASS


def test_feature_columns_present() -> None:
    assert status(healthy(), "feature_columns_present")[0] is Status.PASS
    missing = healthy(source_columns=(SourceColumn(COL, True, False, (ASSERTION,)),))
    assert status(missing, "feature_columns_present") == (Status.FAIL, (COL,))
    unknown = healthy(source_columns=(SourceColumn(COL, False, False, (ASSERTION,)),))
    assert status(unknown, "feature_columns_present") == (Status.WARN, (COL,))


def test_any_fail_is_no_go_and_an_override_turns_it_into_a_recorded_go() -> None:
    blocked = healthy(deprecated=(DS,))
    assert evaluate(blocked).decision is Decision.NO_GO and evaluate(blocked).exit_code == 1
    overridden = evaluate(blocked, Policy(override_reason="hotfix approved by the owner"))
    assert overridden.decision is Decision.GO and overridden.exit_code == 0
    assert overridden.override_reason == "hotfix approved by the owner"
    assert overridden.failing == evaluate(blocked).failing  # the checks keep their statuses
    # An override that changes nothing is not recorded.
    assert evaluate(healthy(), Policy(override_reason="x")).override_reason is None


def test_strict_turns_every_warn_into_fail() -> None:
    warned = healthy(assertions=())
    assert evaluate(warned).decision is Decision.GO
    strict = evaluate(warned, Policy(strict=True))
    assert strict.decision is Decision.NO_GO
    assert {c.id for c in strict.failing} == {"upstream_assertions_passing"}
    assert "strict" in strict.failing[0].reason


@pytest.mark.parametrize("check", CHECK_IDS)
def test_every_check_is_deterministic_and_sorted(check: str) -> None:
    g = healthy(
        deprecated=(FEATURE, DS), source_columns=(SourceColumn(COL, True, False), SourceColumn(DS + "z", True, False))
    )
    first, second = status(g, check), status(g, check)
    assert first == second and list(first[1]) == sorted(first[1])
