"""ML answers on real DataHub metadata (issue 10, DESIGN §2.1–2.3): soft-deleted versions, unknown training times,
ratios. The goldens are DataHub's own connector outputs (tests/data/datahub-goldens); the overlays
(tests/data/overlays) add what no golden has: a failing test on a dataset the models' runs read, a second version,
a soft delete.

Expectations, by DESIGN:

* MLflow golden: version 1 of ``test-model`` is trained by run 2666… (created 2021-03-11 = V1T). The overlay adds
  version 2 (trained V1T + 1 day), lets both runs read ``shop.public.training_rows``, whose row-count test passes at
  V1T + 2 days and fails at V1T + 3 days. Both versions are in the blast radius (table precision: no features),
  both CLEAN (trained before the last success), and the safe rollback is the newest, version 2. Once version 2 is
  soft-deleted (``status.removed``), it is in no answer: the rollback is version 1, version 2 is neither a verdict
  nor at risk. ``removed: false`` brings it back.
* SageMaker golden: both models are trained by ``a-training-job`` reading ``training-job/input-dataset.tar_gz``;
  the overlay fails that dataset's test twice. Live: the incidents role opens the incident tagging both models;
  after the second model is soft-deleted the next signal removes its tag.
* Vertex AI golden: the experiment run's ``created.time`` is 0. The overlay makes it the training run of a version
  2 of ``mock_prediction_model_1`` (no other time) reading the golden's vertexai dataset, like version 1's AutoML
  job (created 2022-03-21 = VT). Its test passes at VT + 1 day and fails at VT + 2 days: version 1 is CLEAN and the
  rollback; version 2's training time is unknown (0 is DataHub's AuditStamp default): UNKNOWN, trained_at null.
"""

from __future__ import annotations

import pytest

from pareis.config import DatahubSettings
from pareis.contracts.records import Message
from pareis.core.blast import blast_radius
from pareis.core.contamination import Verdict
from pareis.core.graph import Memo
from pareis.core.lifecycle import Status
from pareis.datahub.wire.codec import Encoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.writer import KafkaWriter
from pareis.roles.incidents import IncidentsHandler
from pareis.roles.messages import RunSignal
from pareis.roles.output import McpTopic
from pareis.store.incidents_memory import MemoryIncidentStore
from pareis.store.journal import MemoryStepJournal
from pareis.store.runs_memory import MemoryRunHistory
from tests.support.goldens import Metadata, golden, incident, load, overlay

DAY = 86_400_000
TRAINING_ROWS = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.public.training_rows,PROD)"
MLFLOW_GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,test-model,PROD)"
V1T = 1615443388097


def mlflow(version: int) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,test-model_{version},PROD)"


def verdicts(facts_contamination: object) -> dict[str, list[tuple[str | None, str, int | None]]]:
    return {
        g.group: [(v.version.version, v.verdict.value, v.version.trained_at_ms) for v in g.versions]
        for g in facts_contamination  # type: ignore[attr-defined]
    }


@pytest.fixture
def mlflow_metadata() -> Metadata:
    return load(golden("mlflow__mlflow_mcps_golden"), overlay("mlflow_second_version_and_failing_input"))


def test_mlflow_both_versions_clean_and_the_newest_is_the_rollback(mlflow_metadata: Metadata) -> None:
    facts = incident(mlflow_metadata, TRAINING_ROWS)
    assert verdicts(facts.contamination) == {
        MLFLOW_GROUP: [("1", "CLEAN", V1T), ("2", "CLEAN", V1T + DAY)],
    }
    assert facts.rollbacks == ((MLFLOW_GROUP, mlflow(2)),)
    assert facts.at_risk == (mlflow(1), mlflow(2))


def test_a_soft_deleted_version_is_in_no_answer_and_restoring_it_brings_it_back(mlflow_metadata: Metadata) -> None:
    mlflow_metadata.add(overlay("mlflow_remove_version_2"))
    facts = incident(mlflow_metadata, TRAINING_ROWS)
    assert verdicts(facts.contamination) == {MLFLOW_GROUP: [("1", "CLEAN", V1T)]}
    assert facts.rollbacks == ((MLFLOW_GROUP, mlflow(1)),)
    assert facts.at_risk == (mlflow(1),)
    assert [m.urn for m in facts.blast.models] == [mlflow(1)]
    assert mlflow(2) not in facts.to_json().__repr__()  # not named anywhere in the analysis
    # The raw store still holds it (its record says why it is gone); only the answers leave it out.
    assert [m.urn for m in blast_radius(mlflow_metadata.store, datasets=[TRAINING_ROWS]).models] == [mlflow(1)]
    assert Memo(mlflow_metadata.store).attributes([mlflow(2)])[mlflow(2)]["removed"] == "true"

    mlflow_metadata.add(overlay("mlflow_restore_version_2"))
    facts = incident(mlflow_metadata, TRAINING_ROWS)
    assert facts.rollbacks == ((MLFLOW_GROUP, mlflow(2)),)
    assert facts.at_risk == (mlflow(1), mlflow(2))


SAGEMAKER_INPUT = "urn:li:dataset:(urn:li:dataPlatform:s3,training-job/input-dataset.tar_gz,PROD)"
SAGEMAKER_FIRST = "urn:li:mlModel:(urn:li:dataPlatform:sagemaker,the-first-model,PROD)"
SAGEMAKER_SECOND = "urn:li:mlModel:(urn:li:dataPlatform:sagemaker,the-second-model,PROD)"


def test_live_the_next_signal_untags_a_model_deleted_during_the_incident() -> None:
    metadata = load(golden("sagemaker__sagemaker_mces_golden"), overlay("sagemaker_failing_training_input"))
    runs = MemoryRunHistory()
    incidents = MemoryIncidentStore()
    mcp_topic = "MetadataChangeProposal_v1"
    handler = IncidentsHandler(
        lineage=metadata.store,
        runs=runs,
        incidents=incidents,
        journal=MemoryStepJournal(),
        output=McpTopic(KafkaWriter(Encoder(VendoredSchemaSource(), mcp_topic), mcp_topic), DatahubSettings()),
        datahub=DatahubSettings(),
        effects_topic="pareis.effects.v1",
    )
    ordered = sorted(metadata.runs, key=lambda r: r.timestamp_ms)

    def signal(offset: int) -> list[Message[RunSignal]]:
        run = ordered[offset]
        runs.record(run)
        return [Message("pareis.signals.v1", 0, offset, b"", RunSignal(SAGEMAKER_INPUT, run, run.timestamp_ms))]

    handler(signal(0))  # the passing run
    handler(signal(1))  # the first failure: Open
    state = incidents.get(SAGEMAKER_INPUT)
    assert state.status is Status.ACTIVE
    assert set(state.at_risk) == {SAGEMAKER_FIRST, SAGEMAKER_SECOND}

    metadata.add(overlay("sagemaker_remove_second_model"))
    handler(signal(2))  # the next failure of the same incident: Update, the deleted model untagged
    state = incidents.get(SAGEMAKER_INPUT)
    assert state.status is Status.ACTIVE
    assert state.at_risk == (SAGEMAKER_FIRST,)


def test_sagemaker_models_without_features_have_no_ratio_and_are_high() -> None:
    metadata = load(golden("sagemaker__sagemaker_mces_golden"), overlay("sagemaker_failing_training_input"))
    blast = blast_radius(metadata.store, datasets=[SAGEMAKER_INPUT])
    assert [(m.urn, m.ratio, m.severity.value, m.precision) for m in blast.models] == [
        (SAGEMAKER_FIRST, None, "HIGH", "table"),
        (SAGEMAKER_SECOND, None, "HIGH", "table"),
    ]
    assert blast.to_json()["models"][0]["ratio"] is None


VERTEX_DATASET = "urn:li:dataset:(urn:li:dataPlatform:vertexai,test-project-id.dataset.2562882439508656128,PROD)"
VERTEX_GROUP = (
    "urn:li:mlModelGroup:(urn:li:dataPlatform:vertexai,test-project-id.model_group.mock_prediction_model_1,PROD)"
)
VT = 1647878400000


def vertex(version: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:vertexai,test-project-id.model.mock_prediction_model_{version},PROD)"


def test_a_training_run_created_at_zero_is_an_unknown_time_never_clean_never_the_rollback() -> None:
    metadata = load(golden("vertexai__vertexai_mcps_golden"), overlay("vertexai_version_trained_at_zero"))
    facts = incident(metadata, VERTEX_DATASET)
    (group,) = facts.contamination
    assert group.group == VERTEX_GROUP
    assert [(v.version.urn, v.verdict, v.version.trained_at_ms) for v in group.versions] == [
        (vertex("1_1"), Verdict.CLEAN, VT),
        (vertex("1_2"), Verdict.UNKNOWN, None),
    ]
    assert group.safe_rollback is not None and group.safe_rollback.urn == vertex("1_1")


# Feast golden: six features over the parquet source ``driver_stats_with_string.parquet`` (no schema: Feast's connector
# never emits one) and the request source ``vals_to_add``; the table ``driver_hourly_stats`` is keyed by the primary
# key ``driver_id`` (source: the parquet file). The overlay adds three models and failing tests on the parquet's
# ``conv_rate`` and ``driver_id`` columns and on the request source as a whole:
#   trips_model: acc_rate, avg_daily_trips
#   conv_model:  conv_rate, acc_rate, avg_daily_trips, conv_rate_plus_val1
#   plus_model:  conv_rate_plus_val1, conv_rate_plus_val2, conv_rate, acc_rate
PARQUET = "urn:li:dataset:(urn:li:dataPlatform:file,data.driver_stats_with_string.parquet,PROD)"
REQUEST = "urn:li:dataset:(urn:li:dataPlatform:request,vals_to_add,PROD)"


def feast_test(name: str) -> str:
    return f"urn:li:assertion:pareis-overlay-feast-{name}"


def feast_feature(table: str, name: str) -> str:
    return f"urn:li:mlFeature:(feature_store.{table},{name})"


def feast_model(name: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:feast,{name},PROD)"


@pytest.fixture(scope="module")
def feast() -> Metadata:
    return load(golden("feast__feast_repository_mces_golden"), overlay("feast_models_and_failing_sources"))


def feast_impacts(metadata: Metadata, test: str) -> dict[str, tuple[int, int, float | None, str, str]]:
    blast = blast_radius(metadata.store, assertions=[feast_test(test)])
    return {
        m.urn.split(",")[1]: (len(m.poisoned_features), m.total_features, m.ratio, m.severity.value, m.precision)
        for m in blast.models
    }


def test_a_schemaless_source_links_each_feature_to_the_column_of_its_name(feast: Metadata) -> None:
    blast = blast_radius(feast.store, assertions=[feast_test("conv-rate-not-null")])
    assert blast.features == (feast_feature("driver_hourly_stats", "conv_rate"),)
    # trips_model never reads conv_rate: not affected (before: all six features at table precision, HIGH).
    assert feast_impacts(feast, "conv-rate-not-null") == {
        "conv_model": (1, 4, 0.25, "MEDIUM", "column"),
        "plus_model": (1, 4, 0.25, "MEDIUM", "column"),
    }
    facts = incident(feast, PARQUET, [feast_test("conv-rate-not-null")])
    assert feast_model("trips_model") not in facts.at_risk


def test_a_failing_primary_key_poisons_every_feature_of_the_tables_keyed_by_it(feast: Metadata) -> None:
    blast = blast_radius(feast.store, assertions=[feast_test("driver-id-not-null")])
    assert blast.features == tuple(
        feast_feature("driver_hourly_stats", f) for f in ("acc_rate", "avg_daily_trips", "conv_rate", "string_feature")
    )
    assert feast_impacts(feast, "driver-id-not-null") == {
        "conv_model": (3, 4, 0.75, "HIGH", "column"),
        "plus_model": (2, 4, 0.5, "HIGH", "column"),
        "trips_model": (2, 2, 1.0, "HIGH", "column"),
    }


def test_at_table_precision_the_ratio_is_still_poisoned_over_total(feast: Metadata) -> None:
    # The request source has no schema and its test names no field: the whole dataset fails at table level.
    assert feast_impacts(feast, "request-rows") == {
        "conv_model": (1, 4, 0.25, "HIGH", "table"),
        "plus_model": (2, 4, 0.5, "HIGH", "table"),
    }
    model = blast_radius(feast.store, assertions=[feast_test("request-rows")]).to_json()["models"][1]
    assert (model["ratio"], model["severity"], model["precision"]) == (0.5, "HIGH", "table")
