"""Gap ranking and the protect survey (DESIGN §2.5, pareis.core.protect) on a small hand-built index and on the
demo recording (deploy/demo/recorded/)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from pareis.core.blast import blast_radius
from pareis.core.gaps import Gap, distinct_groups, ranked
from pareis.core.protect import Survey, assess, class_score, model_scores, survey
from pareis.core.reliability import INCIDENT_WINDOW_MS
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.translate.lineage import lineage_update
from pareis.lineage_loader import load_files
from pareis.store.lineage import Stamp
from pareis.store.lineage_memory import MemoryLineageStore

RAW = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.raw.orders,PROD)"
DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.raw.orders,PROD)"


def col(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def feature(name: str) -> str:
    return f"urn:li:mlFeature:(t,{name})"


def model(name: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name},PROD)"


def group(name: str) -> str:
    return f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{name},PROD)"


@pytest.fixture
def store() -> MemoryLineageStore:
    """RAW (a, b, c, d) with a dbt sibling; features f1←a, f2←b, f4←b, f3←c, f5←d; m1 (g1) uses f1 f2 f4, m2 (g2)
    uses f1, m3 (no group) uses f3 f2; an assertion on the dbt node's d."""
    s = MemoryLineageStore()

    def put(entity: str, aspect: str, value: dict[str, Any]) -> None:
        update = lineage_update(entity, aspect, "UPSERT", value, Stamp(1, 0))
        assert update is not None
        s.apply([update])

    fields = [{"fieldPath": p, "nativeDataType": "int", "type": {"type": {"com.linkedin.schema.NumberType": {}}}}
              for p in "abcd"]  # fmt: skip
    put(RAW, "schemaMetadata", {"fields": fields, "primaryKeys": ["a"]})
    put(DBT, "siblings", {"siblings": [RAW], "primary": True})
    put(DBT, "datasetProperties", {"customProperties": {"dbt_unique_id": "source.shop.raw.orders"}})
    for f, c in (("f1", "a"), ("f2", "b"), ("f4", "b"), ("f3", "c"), ("f5", "d")):
        put(feature(f), "mlFeatureProperties", {"sources": [col(RAW, c)]})
    put(model("m1"), "mlModelProperties", {"mlFeatures": [feature(f) for f in ("f1", "f2", "f4")],
                                           "groups": [group("g1")]})  # fmt: skip
    put(model("m2"), "mlModelProperties", {"mlFeatures": [feature("f1"), feature("f5")], "groups": [group("g2")]})
    put(model("m3"), "mlModelProperties", {"mlFeatures": [feature("f3"), feature("f2")]})
    put("urn:li:assertion:d", "assertionInfo", {"type": "DATASET", "datasetAssertion": {
        "dataset": DBT, "scope": "DATASET_COLUMN", "operator": "NOT_NULL", "fields": [col(DBT, "d")]}})  # fmt: skip
    return s


def gaps_of(store: MemoryLineageStore, incidents: dict[str, frozenset[str]]) -> list[Gap]:
    s = survey(store, models=[model("m1"), model("m2"), model("m3")])
    _, _, gaps, _ = assess(s, {}, incidents, 0)
    return gaps


def test_gaps_rank_past_incident_first_then_groups_then_features_then_urn(store: MemoryLineageStore) -> None:
    gaps = gaps_of(store, {"urn:li:incident:old": frozenset({col(RAW, "c")})})
    # c: matches the incident (1 group, 1 feature); b: groups {g1, m3} and 2 features; a: groups {g1, g2}, 1 feature
    assert [g.column for g in gaps] == [col(DBT, "c"), col(DBT, "b"), col(DBT, "a")]
    c, b, a = gaps
    assert c.matches_past_incident and c.incidents == ("urn:li:incident:old",)
    assert not b.matches_past_incident and not a.matches_past_incident
    assert b.models == (model("m1"), model("m3")) and b.features == (feature("f2"), feature("f4"))
    assert a.models == (model("m1"), model("m2"))


def test_without_incidents_exposure_decides(store: MemoryLineageStore) -> None:
    assert [g.column for g in gaps_of(store, {})] == [col(DBT, "b"), col(DBT, "a"), col(DBT, "c")]


def test_a_column_tested_on_its_sibling_is_no_gap_and_tests_go_to_the_dbt_node(store: MemoryLineageStore) -> None:
    gaps = gaps_of(store, {})
    assert col(DBT, "d") not in {g.column for g in gaps} and col(RAW, "d") not in {g.column for g in gaps}
    a = next(g for g in gaps if g.column == col(DBT, "a"))
    assert [t.name for t in a.tests] == ["not_null", "unique"]  # the warehouse table's primary key
    assert a.tests[0].yaml.startswith("version: 2\nsources:\n  - name: raw\n    tables:\n      - name: orders\n")


def test_rank_and_limit() -> None:
    def gap(column: str, incidents: tuple[str, ...], groups: int, features: int) -> Gap:
        return Gap(column, "d", (), tuple(str(i) for i in range(features)), groups, incidents, ())

    gaps = [gap("z", (), 3, 1), gap("y", ("i",), 0, 0), gap("x", (), 3, 1), gap("w", (), 3, 2)]
    assert [g.column for g in ranked(gaps)] == ["y", "w", "x", "z"]
    assert [g.column for g in ranked(gaps, 2)] == ["y", "w"]
    assert distinct_groups(["m1", "m2", "m3"], {"m1": "g", "m2": "g", "m3": None}) == 2


RECORDED = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "recorded"
DAY = 86_400_000
T0 = 1_759_276_800_000  # 2025-10-01
CHURN = [model(f"churn_{v}") for v in (1, 2, 3, 4)]
UNIT_PRICE_TEST = "urn:li:assertion:6e41cb73d72b9001ee4652988641ffbb"
RAW_TX = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)"
DBT_FEATURES = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.analytics.customer_features,PROD)"
DBT_STG = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.analytics.stg_transactions,PROD)"


@pytest.fixture(scope="module")
def recorded() -> tuple[MemoryLineageStore, list[AssertionRun]]:
    store = MemoryLineageStore()
    runs = load_files(store, sorted(RECORDED.glob("*.json"))).runs
    return store, runs


def test_on_the_demo_recording_the_raw_table_carries_the_incident(
    recorded: tuple[MemoryLineageStore, list[AssertionRun]],
) -> None:
    store, runs = recorded
    at = T0 + 8 * DAY
    s = survey(store, models=CHURN)
    by_class = {
        key: [r for r in runs if r.assertion in set(cls.assertions) and r.timestamp_ms > at - INCIDENT_WINDOW_MS]
        for key, cls in s.classes.items()
    }
    affected = frozenset(blast_radius(store, assertions=[UNIT_PRICE_TEST]).columns)
    datasets, models, gaps, _ = assess(s, by_class, {"urn:li:incident:unit_price": affected}, at)
    raw = next(d for d in datasets if d.urn == RAW_TX)
    # the not_null test on unit_price failed on day 5 06:00 and passed again on day 6 06:00: one incident of 24 h
    assert raw.component("incidents").value == round(100 - 10 - 100 * 1 / 30, 1)
    assert raw.component("incidents").detail == "1 incident(s) in 30 days, failing 24.0 h"
    assert raw.component("coverage").value == 100.0
    assert raw.component("pass_rate").value < 100.0
    assert [m.urn for m in models] == CHURN
    # the recorded project tests raw unit_price but not the feature columns derived from it (total_spend and
    # avg_unit_price): those two match the incident and rank first, total_spend (churn and ltv) before
    # avg_unit_price (churn only); then the untested columns the incident did not reach, by exposure then URN
    assert [g.column for g in gaps] == [
        col(DBT_FEATURES, "total_spend"),
        col(DBT_FEATURES, "avg_unit_price"),
        col(DBT_FEATURES, "basket_size"),
        col(DBT_STG, "invoice_date"),
    ]
    assert [g.matches_past_incident for g in gaps] == [True, True, False, False]
    assert [g.incidents for g in gaps[:2]] == [("urn:li:incident:unit_price",)] * 2
    assert [g.groups for g in gaps] == [2, 1, 2, 2]


def test_reliability_of_a_urn_dispatches_and_can_leave_the_gaps_out(store: MemoryLineageStore) -> None:
    from pareis.answers.reliability import reliability
    from pareis.answers.sources import CannotEvaluate, Sources
    from pareis.store.runs_memory import MemoryRunHistory

    sources = Sources(store, MemoryRunHistory())
    with_gaps = reliability(sources, model("m1"), at_ms=0)
    assert [s.urn for s in with_gaps.models] == [model("m1")] and with_gaps.gaps
    without = reliability(sources, model("m1"), at_ms=0, include_gaps=False)
    assert without.gaps == () and without.yaml == "" and without.models == with_gaps.models
    by_dataset = reliability(sources, RAW, at_ms=0, max_gaps=1)
    assert {s.urn for s in by_dataset.datasets} == {RAW, DBT} and len(by_dataset.gaps) == 1
    with pytest.raises(CannotEvaluate, match="not a dataset or model"):
        reliability(sources, "urn:li:tag:x", at_ms=0)


def test_closed_union_collects_everything_reachable_through_cycles() -> None:
    from pareis.core.closures import closed_union

    step = {"a": {"b"}, "b": {"c", "d"}, "c": {"b"}, "d": set(), "e": {"a"}, "x": set()}
    values = {"c": frozenset({"f1"}), "d": frozenset({"f2"}), "e": frozenset({"f3"})}
    got = closed_union(step, values)
    assert got["a"] == got["b"] == got["c"] == frozenset({"f1", "f2"})  # b ⇄ c is one component
    assert got["d"] == frozenset({"f2"}) and got["e"] == frozenset({"f1", "f2", "f3"})
    assert "x" not in got


def _class_runs(s: Survey, runs: list[AssertionRun]) -> dict[str, list[AssertionRun]]:
    return {key: [r for r in runs if r.assertion in set(cls.assertions)] for key, cls in s.classes.items()}


def _model_scores_agree(store: MemoryLineageStore, models: list[str], runs: list[AssertionRun], at: int) -> int:
    """For every non-empty subset of ``models``: model_scores over the survey of all of them equals assess over
    the subset's own survey. The number of subsets whose scores differ from the whole set's (so the check bites)."""
    whole = survey(store, models=models)
    whole_runs = _class_runs(whole, runs)
    _, alone, _, _ = assess(whole, whole_runs, {}, at)
    differing = 0
    for n in range(1, len(models) + 1):
        for subset in itertools.combinations(models, n):
            own = survey(store, models=subset)
            _, expected, _, _ = assess(own, _class_runs(own, runs), {}, at)
            assert model_scores(whole, subset, whole_runs.__getitem__, at) == expected, subset
            differing += any(sc not in alone for sc in expected)
    return differing


def test_model_scores_of_a_subset_answer_as_the_subsets_own_survey(store: MemoryLineageStore) -> None:
    # A column only lineage names (not in RAW's schema) feeds m3 alone: RAW's coverage then depends on the models
    # surveyed, which a subset's answer must follow.
    m3_features = {"mlFeatures": [feature("f3"), feature("f2"), feature("f6")]}
    for update in (
        lineage_update(feature("f6"), "mlFeatureProperties", "UPSERT", {"sources": [col(RAW, "zz")]}, Stamp(2, 0)),
        lineage_update(model("m3"), "mlModelProperties", "UPSERT", m3_features, Stamp(2, 0)),
    ):
        assert update is not None
        store.apply([update])
    results = [ResultType.SUCCESS if i % 3 == 0 else ResultType.FAILURE for i in range(6)]
    runs = [AssertionRun("urn:li:assertion:d", 1_000 + i, r, DBT, f"r{i}") for i, r in enumerate(results)]
    assert _model_scores_agree(store, [model("m1"), model("m2"), model("m3")], runs, 10_000) > 0


def test_model_scores_agree_on_the_demo_recording(recorded: tuple[MemoryLineageStore, list[AssertionRun]]) -> None:
    store, runs = recorded
    models = sorted(store.entities("mlModelProperties"))
    assert len(models) >= 4
    _model_scores_agree(store, models[:6], runs, T0 + 8 * DAY)


def test_one_survey_of_many_datasets_scores_each_as_its_own(
    recorded: tuple[MemoryLineageStore, list[AssertionRun]],
) -> None:
    store, runs = recorded
    datasets = sorted(store.entities("schemaMetadata"))
    at = T0 + 8 * DAY
    many = survey(store, datasets=datasets)
    assert len(many.classes) >= 3
    for d in datasets:
        own = survey(store, datasets=[d])
        scores, _, _, _ = assess(own, _class_runs(own, runs), {}, at)
        key = many.class_of[d]
        got = class_score(many, key, _class_runs(many, runs)[key], at)
        assert [(s.urn, s.score, s.components) for s in scores] == [
            (m, got.score, got.components) for m in sorted(many.classes[key].members)
        ]


def test_coverage_of_a_class_without_a_known_schema_is_unknown() -> None:
    """DESIGN §2.5: a dataset without a known schema has unknown coverage, not full (nor empty) coverage — even
    when a feature links to a column of it by name (DESIGN §2.1, sources without a schema)."""
    s = MemoryLineageStore()
    bare = "urn:li:dataset:(urn:li:dataPlatform:s3,bucket/orders,PROD)"
    for entity, aspect, value in (
        (feature("amount"), "mlFeatureProperties", {"sources": [bare]}),
        (model("m"), "mlModelProperties", {"mlFeatures": [feature("amount")]}),
    ):
        update = lineage_update(entity, aspect, "UPSERT", value, Stamp(1, 0))
        assert update is not None
        s.apply([update])
    found = survey(s, models=[model("m")])
    (key,) = [k for k, c in found.classes.items() if bare in c.members]
    assert found.classes[key].feeding == {"amount"}, "the feature links to the column named like it"
    coverage = {c.name: c for c in class_score(found, key, [], 0).components}["coverage"]
    assert (coverage.value, coverage.detail) == (None, "schema unknown")
