"""Reliability score components and their aggregation (DESIGN §2.5, pareis.core.reliability).

Expected values are computed by hand from the module's published rules: coverage 0.30, pass rate 0.30 (7 days),
incidents 0.25 (30 days: 100 − 10 × count − 100 × failing share), freshness 0.15 (100 up to 24 h, 0 at 7 days); a
component without data is unknown and its weight is spread over the known ones (score = Σ value × weight / Σ weight
over the known components).
"""

from __future__ import annotations

import pytest

from pareis.core.reliability import DATASET_WEIGHTS, MODEL_WEIGHTS, dataset_score, model_score
from pareis.core.runs import AssertionRun, ResultType

DAY, HOUR = 86_400_000, 3_600_000
AT = 100 * DAY
DS = "urn:li:dataset:(urn:li:dataPlatform:postgres,db.t,PROD)"


def run(assertion: str, t: int, ok: bool) -> AssertionRun:
    return AssertionRun(f"urn:li:assertion:{assertion}", t, ResultType.SUCCESS if ok else ResultType.FAILURE, DS)


def test_weights_are_published_and_sum_to_one() -> None:
    assert sum(DATASET_WEIGHTS.values()) == pytest.approx(1.0)
    assert sum(MODEL_WEIGHTS.values()) == pytest.approx(1.0)


def test_a_clean_fresh_fully_covered_dataset_scores_100() -> None:
    runs = [run("a", AT - d * DAY, True) for d in range(5)]
    score = dataset_score(DS, feeding={"x", "y"}, tested={"x", "y", "z"}, runs=runs, at_ms=AT)
    assert score.score == 100.0
    assert [c.name for c in score.components] == ["coverage", "pass_rate", "incidents", "freshness"]
    assert all(c.value == 100.0 for c in score.components)


def test_each_component_follows_its_rule() -> None:
    # a fails at AT-3d and heals at AT-2d (one incident, 24 h failing); b passes throughout; the latest run is
    # 48 h old; a run after AT is ignored; a run 10 days old is outside the 7-day pass window.
    runs = [
        run("a", AT - 10 * DAY, True),
        run("a", AT - 3 * DAY, False),
        run("b", AT - 3 * DAY, True),
        run("a", AT - 2 * DAY, True),
        run("b", AT - 2 * DAY, True),
        run("a", AT + HOUR, False),
    ]
    score = dataset_score(DS, feeding={"x", "y", "z", "w"}, tested={"x"}, runs=runs, at_ms=AT)
    parts = {c.name: c for c in score.components}
    assert parts["coverage"].value == 25.0
    assert parts["coverage"].detail == "1/4 model-feeding columns tested"
    assert parts["pass_rate"].value == 75.0  # 3 of the 4 runs in (AT-7d, AT]
    assert parts["incidents"].value == round(100 - 10 - 100 / 30, 1)
    assert parts["freshness"].value == round(100 * (7 * DAY - 2 * DAY) / (6 * DAY), 1)
    expected = sum(c.value * c.weight for c in score.components)
    assert score.score == round(expected, 1)


def test_an_open_incident_counts_its_failing_time_up_to_at() -> None:
    runs = [run("a", AT - 40 * DAY, True), run("a", AT - 35 * DAY, False)]
    score = dataset_score(DS, feeding={"x"}, tested={"x"}, runs=runs, at_ms=AT)
    parts = {c.name: c for c in score.components}
    # still failing: the whole 30-day window is failing time, and one incident → floored at 0
    assert parts["incidents"].value == 0.0
    assert parts["coverage"].value == 100.0  # its one model-feeding column is tested
    assert parts["pass_rate"].value is None  # no run in the last 7 days: unknown, not 0
    assert parts["freshness"].value == 0.0  # 35 days old
    assert score.score == round(100 * 0.30 / 0.70, 1)  # (100 × 0.30 + 0 × 0.25 + 0 × 0.15) / 0.70
    untested = dataset_score(DS, feeding=(), tested=(), runs=runs, at_ms=AT).component("coverage")
    assert (untested.value, untested.detail) == (None, "no column feeds a model")  # a share of nothing


def test_an_untested_dataset_scores_low() -> None:
    score = dataset_score(DS, feeding={"x"}, tested=(), runs=(), at_ms=AT)
    assert score.score == 0.0  # coverage 0 and freshness 0 are all that is known
    assert score.component("freshness").detail == "no assertion run"
    assert (score.component("pass_rate").value, score.component("incidents").value) == (None, None)


def test_a_component_without_data_is_unknown_and_its_weight_spread_over_the_known_ones() -> None:
    # Tested a day ago, clean: coverage 1/2, pass rate 100, no incident, freshness 100 − 100/6 (24 h < 48 h age).
    runs = [run("a", AT - 2 * DAY, True)]
    score = dataset_score(DS, feeding={"x", "y"}, tested={"x"}, runs=runs, at_ms=AT, schema_known=False)
    coverage = score.component("coverage")
    assert (coverage.value, coverage.detail) == (None, "schema unknown")
    assert score.to_json()["components"][0] == {
        "name": "coverage",
        "value": None,
        "weight": 0.3,
        "detail": "schema unknown",
    }
    freshness = round(100 * 5 / 6, 1)
    assert score.score == round((100 * 0.30 + 100 * 0.25 + freshness * 0.15) / 0.70, 1)
    known = dataset_score(DS, feeding={"x", "y"}, tested={"x"}, runs=runs, at_ms=AT)
    assert known.component("coverage").value == 50.0
    assert known.score == round(50 * 0.30 + 100 * 0.30 + 100 * 0.25 + freshness * 0.15, 1)


def test_error_runs_do_not_count() -> None:
    runs = [AssertionRun("urn:li:assertion:a", AT - HOUR, ResultType.ERROR, DS), run("a", AT - 2 * HOUR, True)]
    score = dataset_score(DS, feeding=(), tested=(), runs=runs, at_ms=AT)
    assert score.component("pass_rate").detail == "1/1 runs passed in 7 days"


def test_model_score_blends_the_feature_weighted_mean_and_the_weakest_input() -> None:
    score = model_score("urn:li:mlModel:m", {"d1": (90.0, 3), "d2": (30.0, 1)})
    assert score.component("upstream_mean").value == 75.0  # (90·3 + 30·1) / 4
    assert score.component("weakest_upstream").value == 30.0
    assert score.component("weakest_upstream").detail == "d2"
    assert score.score == 52.5
    assert score.to_json()["components"][0] == {
        "name": "upstream_mean",
        "value": 75.0,
        "weight": 0.5,
        "detail": "2 upstream dataset(s), feature-weighted",
    }


def test_a_model_without_upstream_has_an_unknown_score_not_zero() -> None:
    """DESIGN §2.5: a component without data is unknown, never 0; with no upstream dataset none is known."""
    score = model_score("urn:li:mlModel:m", {})
    assert score.score is None
    assert [(c.name, c.value) for c in score.components] == [("upstream_mean", None), ("weakest_upstream", None)]
    assert score.to_json()["score"] is None
