"""DESIGN §2.3: per-version verdicts and the safe rollback."""

from __future__ import annotations

import pytest

from pareis.core.contamination import (
    GroupContamination,
    ModelVersion,
    Verdict,
    contamination,
    safe_rollback,
    trained_at,
    verdict,
)
from pareis.core.impact import ModelImpact

GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"


def version(n: int | str, trained: int | None, group: str | None = GROUP) -> ModelVersion:
    return ModelVersion(f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_{n},PROD)", group, str(n), trained)


def impact(v: ModelVersion) -> ModelImpact:
    return ModelImpact(v.urn, v.group, ("f",), 2, "column")


def test_training_time_prefers_the_run_start_then_created_then_version_time() -> None:
    assert trained_at(1, 2, 3) == 1
    assert trained_at(None, 2, 3) == 2
    assert trained_at(None, None, 3) == 3
    assert trained_at(None, None, None) is None
    # 0 (DataHub's AuditStamp default) and less are unknown: skipped like an absent time (DESIGN §2.3).
    assert trained_at(0, 2) == 2
    assert trained_at(-5, 0, 7) == 7
    assert trained_at(0, 0, 0) is None


@pytest.mark.parametrize(
    ("trained", "last_success", "healed", "expected"),
    [
        (150, 100, 200, Verdict.CONTAMINATED),
        (100, 100, 200, Verdict.CLEAN),  # trained exactly at the last success: before corruption began
        (200, 100, 200, Verdict.CLEAN),  # trained exactly at the heal: after the data healed
        (99, 100, 200, Verdict.CLEAN),
        (201, 100, 200, Verdict.CLEAN),
        (10**13, 100, None, Verdict.CONTAMINATED),  # still open: no upper bound
        (100, 100, None, Verdict.CLEAN),
        (5, None, 200, Verdict.CONTAMINATED),  # never known good: everything before the heal
        (200, None, 200, Verdict.CLEAN),
        (1, None, None, Verdict.CONTAMINATED),
        (0, None, None, Verdict.UNKNOWN),  # 0 and less are unknown times (DESIGN §2.3), never CLEAN
        (-5, 100, 200, Verdict.UNKNOWN),
    ],
)
def test_verdict_in_the_blast_radius(
    trained: int, last_success: int | None, healed: int | None, expected: Verdict
) -> None:
    assert verdict(version(1, trained), True, last_success, healed) is expected


def test_outside_the_blast_radius_a_version_is_clean_whenever_it_trained() -> None:
    assert verdict(version(1, 150), False, 100, 200) is Verdict.CLEAN
    assert verdict(version(1, None), False, 100, 200) is Verdict.CLEAN


def test_unknown_training_time_in_the_blast_radius_is_unknown() -> None:
    assert verdict(version(1, None), True, 100, 200) is Verdict.UNKNOWN
    assert verdict(version(1, None), True, None, None) is Verdict.UNKNOWN


def test_a_group_gets_every_version_judged_and_its_newest_clean_version_before_the_window() -> None:
    v1, v2, v3 = version(1, 50), version(2, 90), version(3, 150)  # v3 trained inside the window
    v4 = version(4, 160)  # inside the window, but does not use the poisoned features
    v5 = version(5, None)
    [group] = contamination([impact(v3), impact(v2), impact(v5)], {GROUP: (v5, v4, v3, v1, v2)}, 100, 200)
    assert group.group == GROUP
    assert [(v.version.version, v.in_blast, v.verdict) for v in group.versions] == [
        ("1", False, Verdict.CLEAN),
        ("2", True, Verdict.CLEAN),
        ("3", True, Verdict.CONTAMINATED),
        ("4", False, Verdict.CLEAN),
        ("5", True, Verdict.UNKNOWN),
    ]
    assert group.contaminated == (v3,)
    assert group.safe_rollback == v2


def test_safe_rollback_may_be_trained_exactly_at_the_last_success_and_never_after() -> None:
    [group] = contamination([impact(version(2, 100))], {GROUP: (version(1, 10), version(2, 100))}, 100, 200)
    assert group.safe_rollback == version(2, 100)
    # v2 is CLEAN (outside the blast radius) but trained after the last success: not a safe rollback.
    [group] = contamination(
        [impact(version(3, 150))], {GROUP: (version(1, 10), version(2, 120), version(3, 150))}, 100, None
    )
    assert group.safe_rollback == version(1, 10)


def test_no_safe_rollback_without_a_last_success_or_a_clean_candidate() -> None:
    [group] = contamination([impact(version(1, 10))], {GROUP: (version(1, 10), version(0, 5))}, None, 200)
    assert group.safe_rollback is None
    assert group.contaminated == (version(1, 10),)
    [group] = contamination([impact(version(1, 150))], {GROUP: (version(1, 150), version(2, None))}, 100, 200)
    assert group.safe_rollback is None


def test_rollback_ties_on_training_time_go_to_the_higher_version_number() -> None:
    candidates = [version(9, 10), version(10, 10), version(2, 5)]
    [group] = contamination([impact(version(11, 150))], {GROUP: (*candidates, version(11, 150))}, 100, 200)
    assert group.safe_rollback == version(10, 10)
    assert safe_rollback(group.versions, 9) == version(2, 5)


def test_an_ungrouped_model_is_its_own_group_and_a_model_without_versions_is_unknown() -> None:
    lone = version("x", 150, group=None)
    other = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,fraud,PROD)"
    missing = ModelImpact("urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_1,PROD)", other, ("f",), 4, "table")
    groups = contamination([missing, impact(lone)], {lone.urn: (lone,)}, 100, None)
    assert [g.group for g in groups] == sorted([lone.urn, other])
    by_group = {g.group: g for g in groups}
    assert by_group[lone.urn].contaminated == (lone,)
    [unknown] = by_group[other].versions
    assert (unknown.version.urn, unknown.version.group, unknown.verdict) == (missing.urn, other, Verdict.UNKNOWN)


def test_no_affected_model_means_no_group() -> None:
    assert contamination([], {GROUP: (version(1, 1),)}, 0, None) == ()


def test_group_json_is_sorted_and_complete() -> None:
    v1, v2 = version(1, 50), version(2, 150)
    [group] = contamination([impact(v2)], {GROUP: (v2, v1)}, 100, None)
    assert isinstance(group, GroupContamination)
    assert group.to_json() == {
        "group": GROUP,
        "safe_rollback": v1.to_json(),
        "versions": [
            {**v1.to_json(), "in_blast": False, "verdict": "CLEAN"},
            {**v2.to_json(), "in_blast": True, "verdict": "CONTAMINATED"},
        ],
    }
