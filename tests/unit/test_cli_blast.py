"""``pareis blast`` on the bundled sample: the JSON contract, values reasoned from DESIGN §2.2 and
``deploy/demo/sample/build_sample.py``, the table, and exit 2 with a one-line reason when it can't answer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

SAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "sample" / "timeline.json"


def dataset(platform: str, name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},retail.{name},PROD)"


def col(ds: str, name: str) -> str:
    return f"urn:li:schemaField:({ds},{name})"


def dbt_test(name: str) -> str:
    """As build_sample.py names the dbt tests' assertions (DataHub's guid of platform and test name)."""
    parts = json.dumps({"name": f"test.retail.{name}", "platform": "dbt"}, separators=(",", ":"), sort_keys=True)
    return f"urn:li:assertion:{hashlib.md5(parts.encode()).hexdigest()}"


def feature(name: str) -> str:
    return f"urn:li:mlFeature:(customer_features,{name})"


def model(name: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name},PROD)"


def group(name: str) -> str:
    return f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{name},PROD)"


RAW = dataset("postgres", "raw.transactions")
STG_W, STG_D = dataset("postgres", "analytics.stg_transactions"), dataset("dbt", "analytics.stg_transactions")
FEAT_W, FEAT_D = dataset("postgres", "analytics.customer_features"), dataset("dbt", "analytics.customer_features")
CHURN = ["total_spend", "avg_unit_price", "order_count", "recency_days", "cancel_rate", "basket_size"]
LTV = ["order_count", "recency_days", "total_spend", "cancel_rate", "basket_size"]
RAW_COLUMNS = [
    "invoice",
    "stock_code",
    "description",
    "quantity",
    "invoice_date",
    "unit_price",
    "customer_id",
    "country",
]


def impact(name: str, grp: str, poisoned: list[str], total: int, ratio: float, severity: str) -> dict[str, Any]:
    return {
        "urn": model(name),
        "group": group(grp),
        "poisoned_features": sorted(feature(f) for f in poisoned),
        "total_features": total,
        "ratio": ratio,
        "severity": severity,
        "precision": "column",
    }


def run(*args: str) -> Any:
    from pareis import cli

    return CliRunner().invoke(cli.app, ["blast", *args])


def blast_json(*args: str) -> dict[str, Any]:
    result = run("--metadata", str(SAMPLE), *args, "--json")
    assert result.exit_code == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    assert result.stdout.strip() == json.dumps(parsed, sort_keys=True, indent=2), "keys sorted, one JSON document"
    return parsed


def test_null_unit_prices_poison_the_price_and_spend_features_of_every_churn_and_ltv_version() -> None:
    # unit_price flows raw → dbt staging (line_total = quantity × unit_price) → warehouse staging (copy, sibling)
    # → customer_features.avg_unit_price / total_spend (dbt, then the warehouse copy, siblings).
    got = blast_json("--assertion", dbt_test("not_null_unit_price"))
    columns = [col(RAW, "unit_price")]
    for stg in (STG_W, STG_D):
        columns += [col(stg, "unit_price"), col(stg, "line_total")]
    for feat in (FEAT_W, FEAT_D):
        columns += [col(feat, "avg_unit_price"), col(feat, "total_spend")]
    assert got == {
        "assertion": dbt_test("not_null_unit_price"),
        "blast": {
            "failing_columns": [col(STG_D, "unit_price")],
            "origin_columns": [col(RAW, "unit_price")],
            "columns": sorted(columns),
            "datasets": sorted([RAW, STG_W, STG_D, FEAT_W, FEAT_D]),
            "features": [feature("avg_unit_price"), feature("total_spend")],
            "models": [
                *(
                    impact(f"churn_{v}", "churn", ["avg_unit_price", "total_spend"], 6, 0.333333, "MEDIUM")
                    for v in (1, 2, 3, 4)
                ),
                *(impact(f"ltv_{v}", "ltv", ["total_spend"], 5, 0.2, "LOW") for v in (1, 2)),
            ],
            "severity": "MEDIUM",
            "failed_rows": 48_213,  # the latest failing run (day 7) found 48,213 NULL prices
            "table_precision_features": [],
        },
    }


def test_a_column_blast_has_no_assertion_and_no_failed_rows() -> None:
    # quantity feeds line_total (→ total_spend), cancel_rate and basket_size: 3 of churn's 6, 3 of ltv's 5.
    got = blast_json("--column", col(STG_W, "quantity"))
    assert got["assertion"] is None
    blast = got["blast"]
    assert blast["failing_columns"] == [col(STG_W, "quantity")]
    assert blast["origin_columns"] == [col(RAW, "quantity")]
    assert blast["features"] == sorted(feature(f) for f in ("total_spend", "cancel_rate", "basket_size"))
    ratios = {m["urn"]: (m["ratio"], m["severity"]) for m in blast["models"]}
    assert ratios == {model(f"churn_{v}"): (0.5, "HIGH") for v in (1, 2, 3, 4)} | {
        model(f"ltv_{v}"): (0.6, "HIGH") for v in (1, 2)
    }
    assert blast["severity"] == "HIGH" and blast["failed_rows"] is None


def test_an_assertion_without_fields_covers_its_whole_dataset_and_never_failed() -> None:
    blast = blast_json("--assertion", dbt_test("unique_invoice_line"))["blast"]
    assert blast["failing_columns"] == sorted(col(STG_D, c) for c in [*RAW_COLUMNS, "line_total"])
    assert blast["features"] == sorted(feature(f) for f in set(CHURN) | set(LTV))
    assert {m["severity"] for m in blast["models"]} == {"HIGH"}  # every feature of every model: ratio 1
    assert blast["failed_rows"] is None


def test_default_output_is_tables() -> None:
    result = run("--metadata", str(SAMPLE), "--assertion", dbt_test("not_null_unit_price"))
    assert result.exit_code == 0, result.stderr
    assert "Blast radius of" in result.stdout and "MEDIUM" in result.stdout and "Models (6)" in result.stdout


def assertion_file(tmp_path: Path, aspect: dict[str, Any]) -> Path:
    path = tmp_path / "orphan.json"
    item = {
        "entityType": "assertion",
        "entityUrn": "urn:li:assertion:orphan",
        "changeType": "UPSERT",
        "aspectName": "assertionInfo",
        "aspect": {"json": aspect},
    }
    path.write_text(json.dumps([item]))
    return path


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--assertion", "urn:li:assertion:nope"], "unknown assertion urn:li:assertion:nope"),
        (["--dataset", dataset("postgres", "raw.nope")], "unknown dataset"),
        (["--column", col(STG_W, "no_such_column")], "unknown column"),
        (["--column", STG_W], "is not a schemaField URN"),
        (["--assertion", dbt_test("not_null_invoice"), "--column", col(STG_W, "invoice")], "one of them"),
        ([], "one of them"),
    ],
    ids=["unknown-assertion", "unknown-dataset", "unknown-column", "not-a-column", "both", "neither"],
)
def test_questions_it_cannot_answer_exit_2_with_one_line(args: list[str], reason: str) -> None:
    result = run("--metadata", str(SAMPLE), *args)
    assert result.exit_code == 2
    assert reason in result.stderr and result.stderr.count("\n") == 1 and result.stdout == ""


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (lambda tmp: ["--metadata", str(tmp / "missing.json")], "no such file"),
        (lambda tmp: ["--metadata", str(tmp / "empty.json")], "not DataHub file-format metadata"),
        (lambda tmp: ["--metadata", str(assertion_file(tmp, {"type": "DATASET"}))], "names no dataset"),
        (
            # The translation checks what it reads, as on the live path: a dataset assertion naming nothing.
            lambda tmp: ["--metadata", str(assertion_file(tmp, {"type": "DATASET", "datasetAssertion": {}}))],
            "names no dataset and no field",
        ),
        (lambda tmp: ["--metadata", str(SAMPLE), "--redis", "redis://127.0.0.1:1/0"], "one of them"),
    ],
    ids=["missing-file", "not-metadata", "assertion-without-dataset", "invalid-aspect", "two-sources"],
)
def test_unreadable_sources_exit_2_with_one_line(tmp_path: Path, source: Any, reason: str) -> None:
    (tmp_path / "empty.json").write_text("{not json")
    result = run(*source(tmp_path), "--assertion", dbt_test("not_null_unit_price"))
    assert result.exit_code == 2, result.stdout
    assert reason in result.stderr and result.stderr.count("\n") == 1


def test_a_dependency_down_exits_1_naming_it_on_one_line() -> None:
    """Redis unreachable is the dependency's failure, not the question's: exit 1 (issue 11), not 2."""
    result = run("--redis", "redis://127.0.0.1:1/0", "--assertion", dbt_test("not_null_unit_price"))
    assert result.exit_code == 1, result.stdout
    assert "redis unavailable" in result.stderr and result.stderr.count("\n") == 1
