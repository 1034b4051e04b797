"""The committed recording of the real demo stack (deploy/demo/recorded/, written by ``make demo-record``).

No service is needed: these tests read the committed files. They check that the recording is well-formed
(every step file read by acryl-datahub's own reader), consistent with its manifest (files, proposal counts,
observed times, the model versions and their AUCs), that the timeline is monotonic on the scenario's clock, that
the dbt assertions, the MLflow models and the feature-store features are there with the shapes Pareis reads, and
that ``pareis analyze`` on the files still says what the manifest recorded. Re-recording is ``make demo-record``
(≈ 6 min, needs Postgres), not part of ``make test``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

pytestmark = pytest.mark.e2e

RECORDED = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "recorded"
DAY = 86_400_000
RAW_DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.raw.transactions,PROD)"
RAW_PG = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)"
FEATURES_PG = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.analytics.customer_features,PROD)"
UNIT_PRICE_TEST = "test.retail.source_not_null_raw_transactions_unit_price"
MODEL_FEATURES = {"churn": 6, "ltv": 5}

Record = dict[str, Any]


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((RECORDED / "manifest.yaml").read_text())
    return loaded


@pytest.fixture(scope="module")
def steps(manifest: dict[str, Any]) -> list[tuple[dict[str, Any], list[Record]]]:
    """Each manifest step with the raw JSON elements of its file."""
    return [(s, json.loads((RECORDED / s["file"]).read_text())) for s in manifest["steps"]]


@pytest.fixture(scope="module")
def records(steps: list[tuple[dict[str, Any], list[Record]]]) -> list[tuple[str, Record]]:
    return [(s["step"], r) for s, rs in steps for r in rs]


def aspects(records: list[tuple[str, Record]], name: str) -> list[tuple[str, Record]]:
    """(step, element) of every MCP carrying aspect ``name`` (MCEs from the dbt source are skipped)."""
    return [(step, r) for step, r in records if r.get("aspectName") == name]


def observed(record: Record) -> int:
    sm = record.get("systemMetadata") or record.get("proposedSnapshot", {}).get("systemMetadata") or {}
    value = sm.get("lastObserved")
    assert isinstance(value, int), f"no lastObserved: {str(record)[:300]}"
    return value


def day0_ms(manifest: dict[str, Any]) -> int:
    return int(dt.datetime.fromisoformat(manifest["day_0"]).replace(tzinfo=dt.UTC).timestamp() * 1000)


def test_the_manifest_lists_exactly_the_step_files_in_order(manifest: dict[str, Any]) -> None:
    on_disk = sorted(p.name for p in RECORDED.glob("[0-9][0-9]-*.json"))
    listed = [s["file"] for s in manifest["steps"]]
    assert listed == on_disk
    assert [int(f[:2]) for f in listed] == list(range(1, len(listed) + 1))
    assert [f"{i + 1:02d}-{s['step']}.json" for i, s in enumerate(manifest["steps"])] == listed


def test_every_step_file_is_read_by_datahubs_reader(manifest: dict[str, Any]) -> None:
    from datahub.ingestion.source.file import read_metadata_file

    total = 0
    for step in manifest["steps"]:
        items = list(read_metadata_file(RECORDED / step["file"]))
        assert len(items) == step["proposals"] > 0, step["file"]
        total += len(items)
    assert total == sum(s["proposals"] for s in manifest["steps"])
    # "A few MB at most" for the whole recording.
    assert sum(p.stat().st_size for p in RECORDED.iterdir()) < 4_000_000


def test_the_timeline_is_monotonic_on_the_scenario_clock(
    manifest: dict[str, Any], steps: list[tuple[dict[str, Any], list[Record]]]
) -> None:
    start, end = day0_ms(manifest), day0_ms(manifest) + 9 * DAY
    previous = start
    for step, elements in steps:
        times = [observed(r) for r in elements]
        assert times == sorted(times), f"{step['file']}: lastObserved goes back in time"
        assert times[0] >= previous, f"{step['file']} starts before the previous step ends"
        assert (times[0], times[-1]) == (step["first_observed_ms"], step["last_observed_ms"])
        assert start <= times[0] and times[-1] < end
        previous = times[-1]
    starts = [s["simulated_start"] for s, _ in steps]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    for step, _ in steps:
        ats = [a["at"] for a in step["actions"]]
        assert ats == sorted(ats) and ats[0] == step["simulated_start"]


def test_timeseries_events_are_on_the_scenario_clock(
    manifest: dict[str, Any], records: list[tuple[str, Record]]
) -> None:
    """No wall-clock time of the recording session leaks into run events or model times."""
    start, end = day0_ms(manifest), day0_ms(manifest) + 9 * DAY
    events = aspects(records, "assertionRunEvent") + aspects(records, "dataProcessInstanceRunEvent")
    assert events
    for _, r in events:
        assert start <= r["aspect"]["json"]["timestampMillis"] < end
    for _, r in aspects(records, "mlModelProperties"):
        assert start <= r["aspect"]["json"]["created"]["time"] < end


def test_every_model_version_has_its_aucs_and_the_poison_is_measurable(manifest: dict[str, Any]) -> None:
    versions = manifest["model_versions"]
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for v in versions:
        assert 0.5 < v["holdout_auc"] <= 1.0 and 0.5 < v["val_auc"] <= 1.0, v
        by_model[v["model"]].append(v)
    assert set(by_model) == set(MODEL_FEATURES)
    for model, vs in by_model.items():
        assert [v["version"] for v in vs] == [str(i) for i in range(1, len(vs) + 1)]
        assert [v["trained_at_ms"] for v in vs] == sorted(v["trained_at_ms"] for v in vs)
        clean = [v["holdout_auc"] for v in vs if v["data"] == "clean"]
        poisoned = [v["holdout_auc"] for v in vs if v["data"] == "poisoned"]
        assert len(clean) >= 2 and poisoned, model
        # On the clean hold-out, a version trained on the poisoned features is clearly worse than every clean one.
        assert max(poisoned) < min(clean) - 0.05, (model, clean, poisoned)


def test_the_mlflow_models_match_the_manifest(manifest: dict[str, Any], records: list[tuple[str, Record]]) -> None:
    latest: dict[str, dict[str, Any]] = {}
    for _, r in aspects(records, "mlModelProperties"):
        latest[r["entityUrn"]] = r["aspect"]["json"]
    runs = {r["entityUrn"]: r["aspect"]["json"] for _, r in aspects(records, "dataProcessInstanceProperties")}
    version_tags = {r["entityUrn"]: r["aspect"]["json"] for _, r in aspects(records, "versionProperties")}
    groups = {r["entityUrn"] for _, r in aspects(records, "mlModelGroupProperties")}
    assert groups == {f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{m},PROD)" for m in MODEL_FEATURES}
    assert set(latest) == {v["urn"] for v in manifest["model_versions"]}
    for v in manifest["model_versions"]:
        props = latest[v["urn"]]
        metrics = {m["name"]: float(m["value"]) for m in props["trainingMetrics"]}
        assert round(metrics["holdout_auc"], 4) == v["holdout_auc"]
        assert round(metrics["val_auc"], 4) == v["val_auc"]
        assert len(props["mlFeatures"]) == MODEL_FEATURES[v["model"]]
        assert props["groups"] == [f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{v['model']},PROD)"]
        (job,) = props["trainingJobs"]
        assert runs[job]["created"]["time"] == v["trained_at_ms"]
        assert version_tags[v["urn"]]["version"]["versionTag"] == v["version"]


def test_features_are_sourced_from_the_feature_table_columns(records: list[tuple[str, Record]]) -> None:
    features = {r["entityUrn"]: r["aspect"]["json"] for _, r in aspects(records, "mlFeatureProperties")}
    used = {f for _, r in aspects(records, "mlModelProperties") for f in r["aspect"]["json"].get("mlFeatures", [])}
    assert used and used <= set(features)
    for urn, props in features.items():
        name = urn[urn.index(",") + 1 : -1]
        assert props["sources"] == [f"urn:li:schemaField:({FEATURES_PG},{name})"]


def test_the_dbt_assertions_and_their_runs(manifest: dict[str, Any], records: list[tuple[str, Record]]) -> None:
    infos = {r["entityUrn"]: r["aspect"]["json"] for _, r in aspects(records, "assertionInfo")}
    assert len(infos) >= 30
    assert {i["customAssertion"]["type"] for i in infos.values()} == {"dbt"}
    natives = [i["customAssertion"]["nativeType"] for i in infos.values()]
    for kind in ("not_null", "unique", "accepted_values", "relationships", "in_range"):
        assert any(n.startswith((kind, f"source_{kind}")) for n in natives), kind
    (unit_price,) = [
        urn for urn, i in infos.items() if i["customProperties"]["dbt_unique_id"].startswith(UNIT_PRICE_TEST)
    ]
    assert infos[unit_price]["customAssertion"]["fields"] == [f"urn:li:schemaField:({RAW_DBT},unit_price)"]

    runs = [(step, r["aspect"]["json"]) for step, r in aspects(records, "assertionRunEvent")]
    assert {e["assertionUrn"] for _, e in runs} <= set(infos)
    failures = [(step, e) for step, e in runs if e["result"]["type"] == "FAILURE"]
    assert [step for step, _ in failures] == ["d5-tests-fail"]
    (_, failed), *_ = failures
    assert failed["assertionUrn"] == unit_price and failed["asserteeUrn"] == RAW_DBT
    assert int(failed["result"]["nativeResults"]["failures"]) == manifest["bad_load"]["rows"]
    unit_price_runs = sorted(
        (e["timestampMillis"], e["result"]["type"]) for _, e in runs if e["assertionUrn"] == unit_price
    )
    kinds_in_order = [t for _, t in unit_price_runs]
    failure_at = kinds_in_order.index("FAILURE")
    assert set(kinds_in_order[:failure_at]) == {"SUCCESS"} and failure_at >= 5
    assert set(kinds_in_order[failure_at + 1 :]) == {"SUCCESS"}


def test_siblings_link_each_dbt_node_to_its_warehouse_table(records: list[tuple[str, Record]]) -> None:
    dbt_side = {
        r["entityUrn"]: r["aspect"]["json"]["siblings"]
        for _, r in aspects(records, "siblings")
        if r["changeType"] == "UPSERT"
    }
    warehouse_side = {r["entityUrn"] for _, r in aspects(records, "siblings") if r["changeType"] == "PATCH"}
    assert dbt_side[RAW_DBT] == [RAW_PG]
    for dbt_urn, (warehouse,) in dbt_side.items():
        assert warehouse == dbt_urn.replace("urn:li:dataPlatform:dbt", "urn:li:dataPlatform:postgres")
        assert warehouse in warehouse_side


def test_pareis_analyze_still_says_what_the_manifest_recorded(manifest: dict[str, Any]) -> None:
    from pareis import cli

    files = [arg for s in manifest["steps"] for arg in ("--metadata", str(RECORDED / s["file"]))]
    result = CliRunner().invoke(cli.app, ["analyze", *files, "--dataset", RAW_DBT, "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    want = manifest["pareis_analyze"]
    assert got["incident"] == want["incident"]
    assert got["window"] == want["window_ms"]
    assert got["contamination"] == want["contamination"]
    assert got["blast"]["features"] == want["features"]
    assert got["incident"]["dataset"] == RAW_PG and got["incident"]["state"] == "RESOLVED"
    verdicts = {v["urn"]: v["verdict"] for g in got["contamination"] for v in g["versions"]}
    for v in manifest["model_versions"]:
        assert verdicts[v["urn"]] == ("CONTAMINATED" if v["data"] == "poisoned" else "CLEAN"), v["urn"]


def test_every_role_runs_the_recording_without_a_dead_letter(manifest: dict[str, Any], tmp_path: Path) -> None:
    """``pareis demo`` (lineage → assertions → incidents → effects, embedded) opens the incident on the failing
    step, resolves it on the repair, and rejects nothing the real connectors wrote."""
    from pareis import cli

    files = [arg for s in manifest["steps"] for arg in ("--timeline", str(RECORDED / s["file"]))]
    result = CliRunner().invoke(cli.app, ["demo", *files, "--out", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = result.output
    opened, resolved = text.index("CLEAR → ACTIVE"), text.index("ACTIVE → RESOLVED")
    step_line = {s["step"]: text.index(f"▸ {s['file'].removesuffix('.json')}") for s in manifest["steps"]}
    assert step_line["d5-tests-fail"] < opened < step_line["d6-repair-tests-pass"] < resolved
    assert text.count("CLEAR → ACTIVE") == 1
    for group in manifest["pareis_analyze"]["contamination"]:
        rollback = group["safe_rollback"]["urn"].split(",")[1]
        assert f"safe rollback for {rollback.rsplit('_', 1)[0]}: {rollback}" in text
    assert "dead letters: 0" in text
