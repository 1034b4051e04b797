"""The one upstream (DESIGN §2.1 "the one upstream", nested fields; issue 31 points 1 and 2): the gate, protect, the
evidence pack and the exposure index read what lies upstream of a model from one computation
(:func:`pareis.core.upstream.model_upstream`), and it agrees with the blast radius.

Overlays, with answers computed by hand from DESIGN:

* ``nested_profile_country_fails``: ``shop.crm.customers`` (T) has a struct ``profile`` with ``country`` and
  ``age``; the view ``customers_view`` (V) copies ``profile`` whole (a column edge T.profile → V.profile) and ``id``.
  Features: ``profile`` ← V.profile, ``age`` ← V.profile.age, ``country`` ← T.profile.country, ``id`` ← V.id;
  models ``churn_profile`` (profile, id), ``churn_age`` (age), ``churn_country`` (country), ``churn_id`` (id). A
  not-null test on T.profile.country passes on day 1 and fails on day 2. A bad ``profile.country`` poisons
  ``profile`` (a reader of the struct reads it) but not ``profile.age``: the failure reaches ``churn_profile`` and
  ``churn_country``, never ``churn_age``; a bad T.profile (the struct itself) reaches all three.
* ``mlflow_training_rows_schema_and_table_lineage`` over the MLflow golden and its second-version overlay: the
  featureless versions' training input ``shop.public.training_rows`` gets a schema (id, amount, label) and two
  table-level upstreams (``orders_raw``, ``customers_raw``, no column lineage). The upstream is the training input
  (table precision) and its columns; the two upstreams feed it only at table level, which the one upstream does not
  follow (DESIGN §2.4): the gate scores neither, and protect's three untested model-feeding columns are its gaps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pareis.answers.evidence import evidence_pack
from pareis.answers.gate import gate
from pareis.answers.reliability import protect
from pareis.answers.sources import Sources
from pareis.compose.sources import open_sources
from pareis.core import catalog
from pareis.core.blast import blast_radius
from pareis.core.exposure import exposure
from pareis.core.graph import Memo
from pareis.core.upstream import model_upstream
from tests.support.goldens import DEMO, every_golden, golden, overlay

T = "urn:li:dataset:(urn:li:dataPlatform:bigquery,shop.crm.customers,PROD)"
V = "urn:li:dataset:(urn:li:dataPlatform:bigquery,shop.crm.customers_view,PROD)"
COUNTRY_TEST = "urn:li:assertion:pareis-overlay-profile-country-not-null"
NESTED_AT = 1_700_200_000_000  # after the failure (day 2)


def col(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def churn(name: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_{name},PROD)"


@pytest.fixture(scope="module")
def nested() -> Sources:
    return open_sources(metadata=[overlay("nested_profile_country_fails")])


def checks(answer: Any) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in answer.to_json()["checks"]}


def test_a_failing_nested_field_fails_the_gate_of_a_model_reading_its_struct(nested: Sources) -> None:
    """Check 1 and check 2 agree: the incident reaches the model, and the failing assertion is upstream of it."""
    found = checks(gate(nested, model=churn("profile"), at_ms=NESTED_AT))
    assert found["no_active_incident"]["status"] == "FAIL"
    assert found["upstream_assertions_passing"]["status"] == "FAIL"
    assert found["upstream_assertions_passing"]["evidence"] == [COUNTRY_TEST]


def test_a_failing_nested_field_is_not_upstream_of_a_model_reading_another_field(nested: Sources) -> None:
    found = checks(gate(nested, model=churn("age"), at_ms=NESTED_AT))
    assert found["no_active_incident"]["status"] == "PASS"
    assert (
        found["upstream_assertions_passing"]["reason"] == "no assertion tests the model's upstream: nothing is tested"
    )
    up = model_upstream(Memo(nested.lineage), [churn("age")])[churn("age")]
    assert up.columns == {
        col(V, "profile.age"),
        col(V, "profile"),  # a bad struct poisons its fields
        col(T, "profile"),
        col(T, "profile.age"),
    }
    assert not up.assertions


def test_the_gap_on_a_struct_lists_every_model_blast_reaches_from_it(nested: Sources) -> None:
    radius = blast_radius(nested.lineage, columns=[col(T, "profile")])
    reached = [m.urn for m in radius.models]
    assert reached == [churn("age"), churn("country"), churn("profile")]
    answer = protect(nested, at_ms=NESTED_AT, model=churn("profile"))
    gaps = {g.column: list(g.models) for g in answer.gaps}
    assert gaps[col(T, "profile")] == reached
    assert gaps[col(V, "profile.country")] == [churn("profile")]  # its struct, not its sibling field's readers
    # Every model has its gaps: the age model's upstream includes the struct enclosing its field.
    age = {g.column for g in protect(nested, at_ms=NESTED_AT, model=churn("age")).gaps}
    assert age == {col(V, "profile.age"), col(V, "profile"), col(T, "profile"), col(T, "profile.age")}


def test_the_evidence_pack_lists_the_upstream_assertions_only(nested: Sources) -> None:
    def tested(model: str) -> list[str]:
        pack = evidence_pack(nested, model, NESTED_AT).to_json()
        (section,) = [s for s in pack["sections"] if s["id"] == "10(3)"]
        return [a["assertion"] for a in section["facts"]["assertions"]]

    assert tested(churn("profile")) == [COUNTRY_TEST]
    assert tested(churn("age")) == []  # on an upstream dataset, but on a field the model does not read
    assert tested(churn("id")) == []  # the same: T is upstream of it (T.id), T.profile.country is not


MLFLOW_GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,test-model,PROD)"
TRAINING_ROWS = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.public.training_rows,PROD)"
TRAINING_AT = 1_615_659_388_097  # 12 h after the training input's test passed (it fails a day later)


def mlflow(version: int) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,test-model_{version},PROD)"


@pytest.fixture(scope="module")
def training() -> Sources:
    return open_sources(
        metadata=[
            golden("mlflow__mlflow_mcps_golden"),
            overlay("mlflow_second_version_and_failing_input"),
            overlay("mlflow_training_rows_schema_and_table_lineage"),
        ]
    )


def test_the_gate_scores_only_the_datasets_protect_lists_for_the_model(training: Sources) -> None:
    asked: list[str] = []

    def scores(datasets: Sequence[str]) -> Mapping[str, float]:
        asked.extend(datasets)
        return {d: 0.0 for d in datasets}

    gate(training, model=MLFLOW_GROUP, at_ms=TRAINING_AT, scores=scores)
    assert asked == [TRAINING_ROWS]  # not its table-level upstreams
    answer = gate(training, model=MLFLOW_GROUP, at_ms=TRAINING_AT)
    assert answer.decision == "GO"
    assert checks(answer)["reliability_above_threshold"]["reason"] == (
        "every upstream dataset scores at least 60 (lowest 70)"
    )
    assert [s.urn for s in protect(training, at_ms=TRAINING_AT, model=mlflow(2)).datasets] == [TRAINING_ROWS]


def test_protect_lists_the_untested_model_feeding_columns_it_counts_as_gaps(training: Sources) -> None:
    answer = protect(training, at_ms=TRAINING_AT, model=MLFLOW_GROUP)
    (score,) = answer.datasets
    assert [c.detail for c in score.components if c.name == "coverage"] == ["0/3 model-feeding columns tested"]
    assert [(g.column, g.models) for g in answer.gaps] == [
        (col(TRAINING_ROWS, name), (mlflow(1), mlflow(2))) for name in ("amount", "id", "label")
    ]


# --- the property of the one upstream, over every golden, the demo recording and the overlays ------------------

OVERLAID: list[tuple[str, list[Path]]] = [
    ("nested", [overlay("nested_profile_country_fails")]),
    (
        "mlflow+training",
        [
            golden("mlflow__mlflow_mcps_golden"),
            overlay("mlflow_second_version_and_failing_input"),
            overlay("mlflow_training_rows_schema_and_table_lineage"),
        ],
    ),
    ("feast+models", [golden("feast__feast_repository_mces_golden"), overlay("feast_models_and_failing_sources")]),
    ("sagemaker+failing", [golden("sagemaker__sagemaker_mces_golden"), overlay("sagemaker_failing_training_input")]),
    ("dbt+failing", [golden("dbt__dbt_test_events_golden"), overlay("dbt_events_not_null_amount_fails")]),
]
INPUTS = [*((p.stem, [p]) for p in every_golden()), ("demo-recording", [DEMO]), *OVERLAID]
AT = 1_900_000_000_000


@pytest.mark.parametrize(("name", "paths"), INPUTS, ids=[n for n, _ in INPUTS])
def test_every_answer_reads_the_one_upstream(name: str, paths: list[Path]) -> None:
    """Any dataset the gate scores for a model is one protect lists for it; every model a failing assertion's
    blast radius names reads, through the one upstream, what the radius reaches (a poisoned feature's columns, or
    its table-precision dataset); and the exposure of an upstream column names the model."""
    sources = open_sources(metadata=paths)
    view = Memo(sources.lineage)
    versions = sorted(
        m for m in sources.lineage.entities("mlModelProperties") if not catalog.flags(view, [m])[m].removed
    )
    ups = model_upstream(view, versions)
    for m in versions:
        if not ups[m].features and not catalog.models(view, [m])[m].training_runs:
            continue  # the gate cannot evaluate it (exit 2)
        asked: list[str] = []
        gate(sources, model=m, at_ms=AT, scores=_recording(asked))
        listed = {s.urn for s in protect(sources, at_ms=AT, model=m).datasets}
        assert set(asked) <= listed, (m, set(asked) - listed)
    _assert_blasts_reach_through_the_upstream(view, sources, ups)
    _assert_exposure_names_the_model(view, ups)


def _recording(asked: list[str]) -> Callable[[Sequence[str]], Mapping[str, float]]:
    def scores(datasets: Sequence[str]) -> Mapping[str, float]:
        asked.extend(datasets)
        return {}

    return scores


def _assert_blasts_reach_through_the_upstream(view: Memo, sources: Sources, ups: Mapping[str, Any]) -> None:
    defined = catalog.assertions(view, sources.lineage.entities("assertionInfo"))
    for a in sorted(defined)[:60]:
        radius = blast_radius(view, assertions=[a])
        reached = set(radius.columns)
        for impact in radius.models:
            up = ups.get(impact.urn) or model_upstream(view, [impact.urn])[impact.urn]
            if not impact.poisoned_features:  # a featureless model, at table precision
                assert up.table_datasets & set(radius.datasets), (a, impact.urn)
                continue
            for f in impact.poisoned_features:
                if f in radius.table_features:
                    assert up.datasets & set(radius.datasets), (a, impact.urn, f)
                else:
                    assert up.feature_columns[f] & reached, (a, impact.urn, f)


def _assert_exposure_names_the_model(view: Memo, ups: Mapping[str, Any]) -> None:
    columns = sorted(set().union(*(up.columns for up in ups.values())))[:400] if ups else []
    exposed = exposure(view, columns)
    for m, up in ups.items():
        for c in _sample(up.columns & set(columns)):
            assert m in exposed.models[c], (m, c)


def _sample(columns: Iterable[str]) -> list[str]:
    return sorted(columns)[:50]
