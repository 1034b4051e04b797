"""The recommendation per group through the answers layer (DESIGN §2.3; :mod:`pareis.answers.decisions`): on the
demo recording at each moment of its story, with a serving alias added (the clean retrain is then promoted), at a
time before any version; on connector goldens with deployments and aliases (SageMaker: endpoint URNs no entity
carries; Vertex AI: a version of unknown training time; Unity Catalog / Databricks: ``champion`` and ``prod``), and
values DataHub does not define (an alias, a deployment status) kept as given. Every surface reads these answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pareis.answers.incidents import analysis, incident_list
from pareis.answers.listing import IncidentFilter, listed, matching
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.answers.times import at_ms
from pareis.answers.verdicts import model_verdicts
from pareis.compose.sources import open_sources
from tests.support.goldens import DEMO, golden, overlay
from tests.support.recorded import RAW, mlflow

CHURN, LTV = mlflow("mlModelGroup", "churn"), mlflow("mlModelGroup", "ltv")
DURING = at_ms("2025-10-06T12:00:00Z")  # the incident is open; churn_3 and ltv_3 trained in the blind window
HEALED = at_ms("2025-10-07T12:00:00Z")  # the data healed; no clean retrain yet


def sources(*files: Path | str) -> Sources:
    return open_sources(metadata=[str(f) for f in files])


def decisions(found: Sources, at: int | None = None) -> dict[str, dict[str, Any]]:
    (row,) = incident_list(found, at)
    return {d.group: d.to_json() for d in row.decisions}


def serving(decision: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    return [(s["urn"].split(",")[1], s["how"]) for s in decision["serving"]]


@pytest.fixture(scope="module")
def demo() -> Sources:
    return sources(DEMO)


def test_during_the_incident_roll_back_to_the_newest_clean_version(demo: Sources) -> None:
    found = decisions(demo, DURING)
    assert {g: (d["action"], d["target"]["urn"]) for g, d in found.items()} == {
        CHURN: ("ROLL_BACK", mlflow("mlModel", "churn_2")),
        LTV: ("ROLL_BACK", mlflow("mlModel", "ltv_2")),
    }
    churn = found[CHURN]
    assert churn["serving_known"] is False and serving(churn) == [("churn_3", [{"presumed": True}])]
    assert churn["reason"] == (
        "churn_3 serves and trained on corrupt data (presumed serving: no deployment or serving alias is known); "
        "roll back to churn_2, the newest clean version."
    )


def test_after_the_heal_the_rollback_stands_until_a_clean_retrain(demo: Sources) -> None:
    assert {d["action"] for d in decisions(demo, HEALED).values()} == {"ROLL_BACK"}
    after = decisions(demo)  # the recording ends with churn_4 and ltv_4 trained on repaired data
    assert {g: d["action"] for g, d in after.items()} == {CHURN: "NONE", LTV: "NONE"}
    assert after[CHURN]["do_not_promote"] == [mlflow("mlModel", "churn_3")]
    assert serving(after[CHURN]) == [("churn_4", [{"presumed": True}])]


def test_every_surface_reads_one_decision(demo: Sources) -> None:
    """The incident analysis, the list row and the model's verdicts carry the same recommendation."""
    (row,) = incident_list(demo, DURING)
    answer = analysis(demo, dataset=RAW, at_ms=DURING)
    verdicts = model_verdicts(demo, CHURN, at_ms=DURING)
    assert [d.to_json() for d in answer.facts.decisions] == [d.to_json() for d in row.decisions]
    assert verdicts.decision.to_json() == decisions(demo, DURING)[CHURN]


def _alias_overlay(tmp_path: Path, version: str, aliases: list[str]) -> Path:
    """``version``'s ``versionProperties`` as the recording last wrote it, with ``aliases``."""
    urn = mlflow("mlModel", version)
    last = None
    for path in sorted(DEMO.glob("*.json")):
        for record in json.loads(path.read_text(encoding="utf-8")):
            if record.get("entityUrn") == urn and record.get("aspectName") == "versionProperties":
                last = record
    assert last is not None
    last["aspect"]["json"]["aliases"] = [{"versionTag": a} for a in aliases]
    out = tmp_path / f"alias-{version}.json"
    out.write_text(json.dumps([last]), encoding="utf-8")
    return out


def test_a_contaminated_champion_after_a_clean_retrain_is_replaced_by_promoting_the_retrain(tmp_path: Path) -> None:
    found = decisions(sources(DEMO, _alias_overlay(tmp_path, "churn_3", ["Champion"])))
    churn = found[CHURN]
    assert (churn["action"], churn["target"]["urn"], churn["serving_known"]) == (
        "PROMOTE",
        mlflow("mlModel", "churn_4"),
        True,
    )
    assert serving(churn) == [("churn_3", [{"alias": "Champion"}])]  # case-insensitive, kept as written
    assert churn["reason"] == "churn_3 serves and trained on corrupt data; promote churn_4, trained on clean data."
    assert found[LTV]["action"] == "NONE"


def test_an_alias_datahub_does_not_define_is_kept_and_does_not_serve(tmp_path: Path) -> None:
    found = sources(DEMO, _alias_overlay(tmp_path, "churn_3", ["canary-7 ✨"]))
    churn = decisions(found)[CHURN]
    assert churn["action"] == "NONE" and churn["serving_known"] is False  # churn_4, the newest, presumed
    configured = Sources(found.lineage, found.runs, serving_aliases=("canary-7 ✨",))
    churn = decisions(configured)[CHURN]
    assert churn["action"] == "PROMOTE" and serving(churn) == [("churn_3", [{"alias": "canary-7 ✨"}])]


def test_before_any_version_the_answer_is_no_version_yet(demo: Sources) -> None:
    early = at_ms("2025-09-01T00:00:00Z")
    decision = model_verdicts(demo, CHURN, at_ms=early).decision
    assert decision.action.value == "NONE" and decision.serving == () and decision.target is None
    assert decision.reason == "Nothing to switch: churn has no version yet."
    assert incident_list(demo, early) == []


# --- connector goldens -----------------------------------------------------------------------------------------------

SAGEMAKER_GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:sagemaker,a-model-package-group,PROD)"
SAGEMAKER_INPUT = "urn:li:dataset:(urn:li:dataPlatform:s3,training-job/input-dataset.tar_gz,PROD)"


def _runs_overlay(tmp_path: Path, results: list[tuple[int, str]]) -> Path:
    """A row-count assertion on the SageMaker training input with runs ``(time ms, SUCCESS | FAILURE)``."""
    assertion = "urn:li:assertion:pareis-test-sagemaker-early"
    records: list[dict[str, Any]] = [
        {
            "entityType": "assertion",
            "entityUrn": assertion,
            "changeType": "UPSERT",
            "aspectName": "assertionInfo",
            "aspect": {
                "json": {
                    "type": "DATASET",
                    "datasetAssertion": {
                        "dataset": SAGEMAKER_INPUT,
                        "scope": "DATASET_ROWS",
                        "fields": [],
                        "aggregation": "IDENTITY",
                        "operator": "_NATIVE_",
                        "nativeType": "row_count",
                    },
                }
            },
        }
    ]
    for ms, result in results:
        event = {"timestampMillis": ms, "assertionUrn": assertion, "asserteeUrn": SAGEMAKER_INPUT}
        event |= {"runId": f"run-{ms}", "status": "COMPLETE", "result": {"type": result}}
        records.append(
            {
                "entityType": "assertion",
                "entityUrn": assertion,
                "changeType": "UPSERT",
                "aspectName": "assertionRunEvent",
                "aspect": {"json": event},
            }
        )
    out = tmp_path / "sagemaker-runs.json"
    out.write_text(json.dumps(records), encoding="utf-8")
    return out


def test_sagemaker_endpoints_no_entity_carries_count_as_serving(tmp_path: Path) -> None:
    """The models list endpoint URNs (ARNs) that were never ingested: status unknown, so they serve. Trained on
    2015-01-01 inside a blind window from 2014-12-31, both serve contaminated and nothing clean exists: RETRAIN."""
    trained = 1_420_070_400_000
    runs = _runs_overlay(tmp_path, [(trained - 86_400_000, "SUCCESS"), (trained + 3_600_000, "FAILURE")])
    found = sources(golden("sagemaker__sagemaker_mces_golden"), runs)
    decision = decisions(found)[SAGEMAKER_GROUP]
    assert decision["action"] == "RETRAIN" and decision["target"] is None and decision["serving_known"] is True
    assert [(urn, how[0]["status"], how[0]["deployment"].rsplit("/", 1)[-1]) for urn, how in serving(decision)] == [
        ("the-first-model", None, "the-first-endpoint,PROD)"),
        ("the-second-model", None, "the-second-endpoint,PROD)"),
    ]
    assert decision["reason"].endswith(
        "and no clean version exists; retrain once the data has healed (the retrain gate says when)."
    )


def _status_overlay(tmp_path: Path, status: str) -> Path:
    """Both models' endpoint URNs ingested as deployments with ``status``."""
    records = [
        {
            "entityType": "mlModelDeployment",
            "entityUrn": "urn:li:mlModelDeployment:(urn:li:dataPlatform:sagemaker,arn:aws:sagemaker:us-west-2:"
            f"123412341234:endpoint/the-{n}-endpoint,PROD)",
            "changeType": "UPSERT",
            "aspectName": "mlModelDeploymentProperties",
            "aspect": {"json": {"customProperties": {}, "status": status}},
        }
        for n in ("first", "second")
    ]
    out = tmp_path / f"status-{status}.json"
    out.write_text(json.dumps(records), encoding="utf-8")
    return out


@pytest.mark.parametrize(
    ("status", "serving_known", "first_serves"),
    [("WARMING_UP", True, True), ("OUT_OF_SERVICE", False, False), ("IN_SERVICE", True, True)],
)
def test_sagemaker_deployment_status_decides_serving_and_an_unknown_one_is_kept(
    tmp_path: Path, status: str, serving_known: bool, first_serves: bool
) -> None:
    trained = 1_420_070_400_000
    runs = _runs_overlay(tmp_path, [(trained - 86_400_000, "SUCCESS"), (trained + 3_600_000, "FAILURE")])
    found = sources(golden("sagemaker__sagemaker_mces_golden"), runs, _status_overlay(tmp_path, status))
    decision = decisions(found)[SAGEMAKER_GROUP]
    assert decision["action"] == "RETRAIN" and decision["serving_known"] is serving_known
    on = dict(serving(decision))
    assert ("the-first-model" in on) is first_serves
    if first_serves:
        assert on["the-first-model"][0]["status"] == status  # as DataHub gave it, even one it does not define
    else:  # out of service: no version known to serve, the newest (by label: both trained at once) presumed
        assert list(on.values()) == [[{"presumed": True}]]


def test_sagemaker_failing_after_training_leaves_the_serving_models_clean() -> None:
    found = sources(golden("sagemaker__sagemaker_mces_golden"), overlay("sagemaker_failing_training_input"))
    decision = decisions(found)[SAGEMAKER_GROUP]
    assert decision["action"] == "NONE" and decision["contaminated"] == [] and decision["serving_known"] is True


def test_vertex_a_version_of_unknown_training_time_is_presumed_serving_never_a_target() -> None:
    found = sources(golden("vertexai__vertexai_mcps_golden"), overlay("vertexai_version_trained_at_zero"))
    ((group, decision),) = decisions(found).items()
    assert group.endswith("mock_prediction_model_1,PROD)")
    assert decision["action"] == "NONE" and decision["target"] is None and decision["serving_known"] is False
    assert serving(decision) == [("test-project-id.model.mock_prediction_model_1_2", [{"presumed": True}])]


def test_databricks_champion_and_prod_aliases_serve() -> None:
    found = sources(golden("unity__unity_catalog_ml_model_mces_golden"))
    version = "urn:li:mlModel:(urn:li:dataPlatform:databricks,quickstart_catalog.quickstart_schema.test_model_1,PROD)"
    decision = model_verdicts(found, version).decision.to_json()
    assert decision["action"] == "NONE" and decision["serving_known"] is True
    assert serving(decision)[0][1] == [{"alias": "champion"}, {"alias": "prod"}]


# --- the one filter ----------------------------------------------------------------------------------------------


def test_the_filter_is_sibling_aware_both_ways(demo: Sources) -> None:
    dbt = RAW.replace("postgres", "dbt")
    rows = incident_list(demo)
    assert [r.dataset for r in rows] == [RAW]
    assert matching(demo, rows, IncidentFilter(dataset=dbt)) == rows  # the dbt node finds its table's incident
    as_dbt = [r.__class__(**{**r.__dict__, "dataset": dbt}) for r in rows]
    assert matching(demo, as_dbt, IncidentFilter(dataset=RAW)) == as_dbt  # and the table finds the dbt node's
    other = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.customers,PROD)"
    assert matching(demo, rows, IncidentFilter(dataset=other)) == []


def test_a_filter_value_it_does_not_know_is_refused_with_one_line(demo: Sources) -> None:
    with pytest.raises(CannotEvaluate, match="state 'OPEN' is not one of ACTIVE, RESOLVED"):
        listed(demo, IncidentFilter(state="OPEN"))
    with pytest.raises(CannotEvaluate, match="severity 'CRITICAL' is not one of HIGH, MEDIUM, LOW, NONE"):
        listed(demo, IncidentFilter(severity="CRITICAL"))
