"""Every command answers alike for what the metadata holds (issue 31 points 4, 5, 6 and 9; DESIGN §2.1 removed
entities, §2.4, §2.5), on real goldens with overlays and answers computed by hand:

* **Removals** (``feast_remove_driver_stats_source`` over the Feast golden and its models overlay): the Feast file
  source ``data.driver_stats_with_string.parquet`` is soft-deleted. It is unknown to ``blast --dataset`` and its
  columns to ``blast --column``, both saying it is removed; ``trips_model``'s two features had it as their only
  source: the gate's check 6 and the evidence pack say "source removed", not "without a source".
* **Known but unlinked**: the bootstrap golden's ``scienceModel`` has ``mlModelProperties`` but no group, features
  or training time; protect and the evidence pack answer for it (the gate cannot: nothing to check) and say what is
  missing. The Unity Catalog golden's ``delta_error_table`` has properties but no schema or lineage: ``blast
  --dataset`` answers, and says so.
* **Times a person can read**: the gate on a group with no version at ``--at`` names the time in ISO-8601.
* **``--at``** (the MLflow golden with its second version, trained a day after the first): protect and the evidence
  pack at a time between the two leave version 2 out — of the gaps too — and refuse it asked by name; every answer
  says in ``time_travel`` which inputs it replayed as of ``--at`` and which it read as they are today.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pareis.answers.blast import blast
from pareis.answers.evidence import evidence_pack
from pareis.answers.gate import gate
from pareis.answers.reliability import protect
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.compose.sources import open_sources
from tests.support.goldens import golden, overlay

FEAST = [
    golden("feast__feast_repository_mces_golden"),
    overlay("feast_models_and_failing_sources"),
    overlay("feast_remove_driver_stats_source"),
]
PARQUET = "urn:li:dataset:(urn:li:dataPlatform:file,data.driver_stats_with_string.parquet,PROD)"
TRIPS = "urn:li:mlModel:(urn:li:dataPlatform:feast,trips_model,PROD)"
FEAST_AT = 1_700_600_000_000


def cli(*args: str) -> Any:
    from pareis import cli as entry

    return CliRunner().invoke(entry.app, list(args), env={"COLUMNS": "400"})


def metadata(paths: list[Path]) -> list[str]:
    return [arg for p in paths for arg in ("--metadata", str(p))]


@pytest.fixture(scope="module")
def feast() -> Sources:
    return open_sources(metadata=FEAST)


def test_a_removed_dataset_and_its_columns_are_unknown_to_blast_alike() -> None:
    by_dataset = cli("blast", *metadata(FEAST), "--dataset", PARQUET, "--json")
    by_column = cli("blast", *metadata(FEAST), "--column", f"urn:li:schemaField:({PARQUET},conv_rate)", "--json")
    assert by_dataset.exit_code == by_column.exit_code == 2
    assert by_dataset.stderr.strip().endswith(f"unknown dataset {PARQUET}: it is removed (status.removed)")
    assert by_column.stderr.strip().endswith(f"its dataset {PARQUET} is removed (status.removed)")


def test_a_feature_whose_only_source_was_removed_says_source_removed(feast: Sources) -> None:
    found = {c["id"]: c for c in gate(feast, model=TRIPS, at_ms=FEAST_AT).to_json()["checks"]}
    assert found["features_resolve"]["status"] == "FAIL"
    assert found["features_resolve"]["reason"] == f"source removed: {PARQUET}"
    assert found["features_resolve"]["evidence"] == [PARQUET]
    pack = evidence_pack(feast, TRIPS, FEAST_AT).to_json()
    (origin,) = [s for s in pack["sections"] if s["id"] == "10(2)(b)"]
    assert [(f["sources"], f["removed_sources"]) for f in origin["facts"]["features"]] == [([], [PARQUET])] * 2
    feature = "urn:li:mlFeature:(feature_store.driver_hourly_stats,{})"
    assert [m for m in origin["missing"] if "source removed" in m] == [
        f"{feature.format(name)}: source removed ({PARQUET})" for name in ("acc_rate", "avg_daily_trips")
    ]


SCIENCE = "urn:li:mlModel:(urn:li:dataPlatform:science,scienceModel,PROD)"
BOOTSTRAP_AT = 1_900_000_000_000


def test_a_model_known_without_group_features_or_time_gets_answers_that_say_what_is_missing() -> None:
    sources = open_sources(metadata=[golden("metadata-ingestion__examples__mce_files__bootstrap_mce")])
    answer = protect(sources, at_ms=BOOTSTRAP_AT, model=SCIENCE)
    assert [m.urn for m in answer.models] == [SCIENCE] and not answer.datasets
    pack = evidence_pack(sources, SCIENCE, BOOTSTRAP_AT).to_json()
    assert pack["header"]["versions"] == [SCIENCE]
    (origin,) = [s for s in pack["sections"] if s["id"] == "10(2)(b)"]
    assert f"{SCIENCE} lists no features" in origin["missing"]
    with pytest.raises(CannotEvaluate, match="lists no features and has no training runs"):
        gate(sources, model=SCIENCE, at_ms=BOOTSTRAP_AT)


UNLINKED = "urn:li:dataset:(urn:li:dataPlatform:databricks,hive_metastore.bronze_kambi.delta_error_table,PROD)"


def test_a_dataset_known_without_schema_or_lineage_is_answered_for_and_said_so() -> None:
    sources = open_sources(metadata=[golden("unity__unity_catalog_mces_golden")])
    answer = blast(sources, dataset=UNLINKED).to_json()
    assert answer["blast"]["models"] == [] and answer["blast"]["datasets"] == [UNLINKED]
    assert answer["missing"] == [
        f"{UNLINKED} has no schema and no lineage in the index: nothing is known downstream of it"
    ]
    assert [s.urn for s in protect(sources, at_ms=BOOTSTRAP_AT, dataset=UNLINKED).datasets] == [UNLINKED]


MLFLOW = [golden("mlflow__mlflow_mcps_golden"), overlay("mlflow_second_version_and_failing_input")]
GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,test-model,PROD)"
V1T = 1_615_443_388_097  # version 1's training run started (2021-03-11T06:16:28.097Z); version 2 a day later
BETWEEN = V1T + 43_200_000


def mlflow(version: int) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,test-model_{version},PROD)"


@pytest.fixture(scope="module")
def training() -> Sources:
    return open_sources(metadata=[*MLFLOW, overlay("mlflow_training_rows_schema_and_table_lineage")])


def test_the_gate_names_the_time_of_a_group_without_a_version_then_in_iso() -> None:
    result = cli("gate", *metadata(MLFLOW), "--model", GROUP, "--at", str(V1T - 1), "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["reason"] == (
        f"model group {GROUP} has no version trained at or before 2021-03-11T06:16:28.096Z"
    )


def test_protect_and_the_evidence_pack_leave_out_versions_trained_after_at(training: Sources) -> None:
    answer = protect(training, at_ms=BETWEEN, model=GROUP)
    assert [m.urn for m in answer.models] == [mlflow(1)]
    assert {g.models for g in answer.gaps} == {(mlflow(1),)}  # version 2 feeds on them too, but not yet
    assert evidence_pack(training, GROUP, BETWEEN).to_json()["header"]["versions"] == [mlflow(1)]
    later = (
        "model urn:li:mlModel:(urn:li:dataPlatform:mlflow,test-model_2,PROD) was trained at 2021-03-12T06:16:28.097Z"
    )
    for ask in (
        lambda: protect(training, at_ms=BETWEEN, model=mlflow(2)),
        lambda: evidence_pack(training, mlflow(2), BETWEEN),
    ):
        with pytest.raises(CannotEvaluate, match=later.replace("(", r"\(").replace(")", r"\)")):
            ask()


REPLAYED = {"runs": True, "incidents": True, "versions": True, "lineage": False, "schemas": False, "removals": False}


def test_every_answer_at_a_time_says_what_it_replayed(training: Sources) -> None:
    assert gate(training, model=GROUP, at_ms=BETWEEN).to_json()["time_travel"] == {
        **REPLAYED,
        "dataset_changes": True,
        "deprecation": False,
    }
    assert protect(training, at_ms=BETWEEN, model=GROUP).to_json()["time_travel"] == REPLAYED
    header = evidence_pack(training, GROUP, BETWEEN).to_json()["header"]
    assert header["time_travel"] == REPLAYED
