"""``pareis analyze`` on the bundled sample. Expected values are reasoned from DESIGN §2.2–2.3 and
``deploy/demo/sample/build_sample.py``:

* runs (T0 = 2025-10-01): all three dbt tests pass on days 2, 3, 4; not_null_unit_price fails on days 6 and 7
  (48,213 rows each) while the other two pass; all pass on day 8 → one incident [day 6, day 8), last success
  day 4, failed rows 48,213 (its latest failure);
* the tests assert the dbt staging model, whose sibling is the warehouse table: the incident key is the
  warehouse table (the class's smallest non-dbt member), and the URN is ``pareis-`` + md5 of
  ``{"dataset": key, "first_failure_ms": day 6}``;
* training starts: churn v1 day 1, v2 day 3 02:00, v3 day 5 06:00; ltv v1 day 1 01:00, v2 day 6 12:00. Inside
  (day 4, day 8): churn v3 and ltv v2 → CONTAMINATED; safe rollbacks: the newest CLEAN trained by day 4 → churn
  v2, ltv v1.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

SAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "sample" / "timeline.json"
DAY, HOUR = 86_400_000, 3_600_000
T0 = 1_759_276_800_000


def dataset(platform: str, name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},retail.{name},PROD)"


def dbt_test(name: str) -> str:
    parts = json.dumps({"name": f"test.retail.{name}", "platform": "dbt"}, separators=(",", ":"), sort_keys=True)
    return f"urn:li:assertion:{hashlib.md5(parts.encode()).hexdigest()}"


def model(name: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name},PROD)"


def group(name: str) -> str:
    return f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{name},PROD)"


def incident(key: str, first_failure_ms: int) -> str:
    text = json.dumps({"dataset": key, "first_failure_ms": first_failure_ms}, separators=(",", ":"), sort_keys=True)
    return "urn:li:incident:pareis-" + hashlib.md5(text.encode()).hexdigest()


STG_W, STG_D = dataset("postgres", "analytics.stg_transactions"), dataset("dbt", "analytics.stg_transactions")
RAW = dataset("postgres", "raw.transactions")
UNIT_PRICE = dbt_test("not_null_unit_price")


def version(name: str, label: str, trained: int, verdict: str) -> dict[str, Any]:
    return {"urn": model(name), "version": label, "trained_at_ms": trained, "verdict": verdict}


def contamination() -> list[dict[str, Any]]:
    """The verdicts are the same open or healed: nothing was trained between day 8 and now (churn_4, registered on
    day 7 while the incident was active, trained inside the window)."""
    return [
        {
            "group": group("churn"),
            "versions": [
                version("churn_1", "1", T0 + DAY, "CLEAN"),
                version("churn_2", "2", T0 + 3 * DAY + 2 * HOUR, "CLEAN"),
                version("churn_3", "3", T0 + 5 * DAY + 6 * HOUR, "CONTAMINATED"),
                version("churn_4", "4", T0 + 7 * DAY + 12 * HOUR, "CONTAMINATED"),
            ],
            "safe_rollback": {"urn": model("churn_2"), "version": "2"},
        },
        {
            "group": group("ltv"),
            "versions": [
                version("ltv_1", "1", T0 + DAY + HOUR, "CLEAN"),
                version("ltv_2", "2", T0 + 6 * DAY + 12 * HOUR, "CONTAMINATED"),
            ],
            "safe_rollback": {"urn": model("ltv_1"), "version": "1"},
        },
    ]


def run(*args: str) -> Any:
    from pareis import cli

    return CliRunner().invoke(cli.app, ["analyze", *args])


def analyze_json(*args: str) -> dict[str, Any]:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    assert result.stdout.strip() == json.dumps(parsed, sort_keys=True, indent=2)
    return parsed


def blast_json(*args: str) -> dict[str, Any]:
    from pareis import cli

    result = CliRunner().invoke(cli.app, ["blast", *args, "--json"])
    assert result.exit_code == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_the_null_unit_price_incident_of_the_sample() -> None:
    got = analyze_json("--metadata", str(SAMPLE), "--assertion", UNIT_PRICE)
    assert got["incident"] == {
        "urn": incident(STG_W, T0 + 6 * DAY),
        "dataset": STG_W,
        "assertions": [UNIT_PRICE],
        "state": "RESOLVED",
        "failed_rows": 48_213,
    }
    assert got["window"] == {
        "last_success_ms": T0 + 4 * DAY,
        "first_failure_ms": T0 + 6 * DAY,
        "healed_ms": T0 + 8 * DAY,
    }
    assert got["contamination"] == contamination()
    # The blast part is the blast command's answer for the incident's one assertion.
    assert got["assertion"] == UNIT_PRICE
    assert got["blast"] == blast_json("--metadata", str(SAMPLE), "--assertion", UNIT_PRICE)["blast"]
    assert got["blast"]["severity"] == "MEDIUM" and got["blast"]["failed_rows"] == 48_213


@pytest.mark.parametrize("ds", [STG_D, STG_W], ids=["dbt-node", "warehouse-sibling"])
def test_either_sibling_names_the_same_incident(ds: str) -> None:
    by_dataset = analyze_json("--metadata", str(SAMPLE), "--dataset", ds)
    by_assertion = analyze_json("--metadata", str(SAMPLE), "--assertion", UNIT_PRICE)
    assert by_dataset["assertion"] is None
    assert {**by_dataset, "assertion": UNIT_PRICE} == by_assertion


def without_day_8(tmp_path: Path) -> Path:
    """The sample cut before the day-8 runs that heal it: the incident is still open."""
    items = json.loads(SAMPLE.read_text())
    kept = [i for i in items if i["systemMetadata"]["lastObserved"] < T0 + 8 * DAY]
    assert len(kept) == len(items) - 3
    path = tmp_path / "open.json"
    path.write_text(json.dumps(kept))
    return path


def test_an_open_incident_is_active_and_everything_trained_after_the_last_success_is_contaminated(
    tmp_path: Path,
) -> None:
    got = analyze_json("--metadata", str(without_day_8(tmp_path)), "--assertion", UNIT_PRICE)
    assert got["incident"]["state"] == "ACTIVE"
    assert got["window"] == {"last_success_ms": T0 + 4 * DAY, "first_failure_ms": T0 + 6 * DAY, "healed_ms": None}
    assert got["contamination"] == contamination()


def test_lineage_and_runs_may_come_in_separate_files(tmp_path: Path) -> None:
    items = json.loads(SAMPLE.read_text())
    runs = [i for i in items if i["aspectName"] == "assertionRunEvent"]
    lineage = [i for i in items if i["aspectName"] != "assertionRunEvent"]
    (tmp_path / "lineage.json").write_text(json.dumps(lineage))
    (tmp_path / "runs.json").write_text(json.dumps(runs))
    split = ["--metadata", str(tmp_path / "lineage.json"), "--metadata", str(tmp_path / "runs.json")]
    assert analyze_json(*split, "--assertion", UNIT_PRICE) == analyze_json(
        "--metadata", str(SAMPLE), "--assertion", UNIT_PRICE
    )


def test_default_output_is_tables() -> None:
    result = run("--metadata", str(SAMPLE), "--assertion", UNIT_PRICE)
    assert result.exit_code == 0, result.stderr
    for text in ("RESOLVED", "CONTAMINATED", "Contamination", "2025-10-07 00:00:00 UTC"):
        assert text in result.stdout


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--assertion", dbt_test("not_null_invoice")], f"assertion {dbt_test('not_null_invoice')} never failed"),
        (["--assertion", "urn:li:assertion:unknown"], "unknown assertion urn:li:assertion:unknown"),
        (["--dataset", dataset("postgres", "raw.nope")], "unknown dataset"),
        (["--dataset", RAW], f"no assertion of {RAW} ever failed"),
        (["--assertion", UNIT_PRICE, "--dataset", STG_W], "one of them"),
        ([], "one of them"),
    ],
    ids=["passing-assertion", "unknown-assertion", "unknown-dataset", "dataset-without-failures", "both", "neither"],
)
def test_nothing_to_analyse_exits_2_with_one_line(args: list[str], reason: str) -> None:
    result = run("--metadata", str(SAMPLE), *args, "--json")
    assert result.exit_code == 2
    assert reason in result.stderr and result.stderr.count("\n") == 1 and result.stdout == ""


def test_an_unreadable_file_exits_2(tmp_path: Path) -> None:
    result = run("--metadata", str(tmp_path / "missing.json"), "--assertion", UNIT_PRICE, "--json")
    assert result.exit_code == 2 and "no such file" in result.stderr


def test_a_models_verdicts_across_incidents() -> None:
    got = analyze_json("--metadata", str(SAMPLE), "--model", group("churn"))
    assert got["model"] == got["group"] == group("churn")
    assert {v["urn"]: v["verdict"] for v in got["versions"]} == {
        model("churn_1"): "CLEAN",
        model("churn_2"): "CLEAN",
        model("churn_3"): "CONTAMINATED",
        model("churn_4"): "CONTAMINATED",
    }
    assert got["safe_rollback"] == {"urn": model("churn_2"), "version": "2"}
    [reached] = got["incidents"]
    assert reached["urn"] == incident(STG_W, T0 + 6 * DAY) and reached["state"] == "RESOLVED"
    text = run("--metadata", str(SAMPLE), "--model", model("churn_3"))
    assert text.exit_code == 0, text.stderr
    assert "CONTAMINATED" in text.stdout and "Incidents that reached it" in text.stdout


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--model", model("nope_1")], f"unknown model {model('nope_1')}"),
        (["--model", RAW], "is not a model version"),
        (["--model", group("churn"), "--dataset", STG_W], "one of them"),
    ],
    ids=["unknown-model", "not-a-model", "model-and-dataset"],
)
def test_a_model_it_cannot_answer_exits_2_with_one_line(args: list[str], reason: str) -> None:
    result = run("--metadata", str(SAMPLE), *args, "--json")
    assert result.exit_code == 2
    assert reason in result.stderr and result.stderr.count("\n") == 1 and result.stdout == ""
