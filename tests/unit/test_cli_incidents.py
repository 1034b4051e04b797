"""``pareis incidents`` on the demo recording and a connector golden: what is broken now, each incident's decision
per group first; ``--json`` is Mission Control's ``/api/incidents`` (one filter, :mod:`pareis.answers.listing`);
``--dataset`` is sibling-aware; bad values are one line and exit 2. Also ``pareis analyze`` and the model verdicts
print the decision before the evidence."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from pareis.compose.sources import open_sources
from pareis.web.app import create_app
from tests.support.goldens import DEMO, golden, overlay
from tests.support.recorded import RAW, mlflow

DURING = "2025-10-06T12:00:00Z"
DBT = RAW.replace("postgres", "dbt")


def cli(*args: str) -> Any:
    from pareis import cli as entry

    return CliRunner().invoke(entry.app, list(args), env={"COLUMNS": "400"})


def incidents(*args: str, metadata: tuple[str, ...] = (str(DEMO),)) -> Any:
    return cli("incidents", *(a for m in metadata for a in ("--metadata", m)), *args)


def test_what_is_broken_now_leads_with_the_decision_per_group() -> None:
    result = incidents("--at", DURING)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "1 active incident as of 2025-10-06T12:00:00.000Z"
    head = lines[2]
    assert head.startswith("ACTIVE MEDIUM retail.raw.transactions · failing since 2025-10-06T06:00:00.000Z")
    assert lines[3].startswith("  • churn: ROLL BACK to churn_2 — churn_3 serves and trained on corrupt data")
    assert lines[4].startswith("  • ltv: ROLL BACK to ltv_2 — ")
    assert lines[5].strip().startswith("urn:li:incident:pareis-")


def test_nothing_active_at_the_end_and_all_shows_what_was() -> None:
    now = incidents()
    assert now.exit_code == 0 and now.stdout == "No active incident.\n"
    every = incidents("--all")
    assert every.exit_code == 0 and every.stdout.startswith("1 incident\n")
    assert "RESOLVED MEDIUM retail.raw.transactions" in every.stdout
    assert "  • churn: Nothing to switch: churn_4 serving" in every.stdout and "do not promote churn_3." in every.stdout


@pytest.mark.parametrize(
    ("args", "query"),
    [
        (["--all"], {}),
        ([], {"state": "ACTIVE"}),
        (["--state", "resolved"], {"state": "RESOLVED"}),
        (["--all", "--severity", "MEDIUM"], {"severity": "MEDIUM"}),
        (["--all", "--severity", "HIGH"], {"severity": "HIGH"}),
        (["--all", "--dataset", DBT], {"dataset": DBT}),
        (["--all", "--dataset", RAW], {"dataset": RAW}),
    ],
)
def test_json_is_mission_controls_list(args: list[str], query: dict[str, str]) -> None:
    result = incidents(*args, "--json")
    assert result.exit_code == 0, result.stderr
    with TestClient(create_app(open_sources(metadata=[str(DEMO)]), clock=lambda: 0)) as client:
        api = client.get("/api/incidents" + (f"?{urlencode(query)}" if query else ""))
    assert api.status_code == 200
    assert json.loads(result.stdout) == api.json()


def test_the_dbt_node_finds_its_tables_incident() -> None:
    (row,) = json.loads(incidents("--all", "--dataset", DBT, "--json").stdout)
    assert row["dataset"] == RAW and [d["action"] for d in row["decisions"]] == ["NONE", "NONE"]
    other = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.customers,PROD)"
    assert json.loads(incidents("--all", "--dataset", other, "--json").stdout) == []


def test_a_connector_golden_lists_its_incident_with_the_serving_deployments() -> None:
    metadata = (str(golden("sagemaker__sagemaker_mces_golden")), str(overlay("sagemaker_failing_training_input")))
    (row,) = json.loads(incidents("--json", metadata=metadata).stdout)
    (decision,) = row["decisions"]
    assert decision["action"] == "NONE" and decision["serving_known"] is True
    assert [h["how"][0]["status"] for h in decision["serving"]] == [None, None]  # endpoints never ingested
    text = incidents(metadata=metadata).stdout
    assert "  • a-model-package-group: Nothing to switch: the-first-model and the-second-model serving" in text


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--state", "open"], "state 'OPEN' is not one of ACTIVE, RESOLVED"),
        (["--severity", "critical"], "severity 'CRITICAL' is not one of HIGH, MEDIUM, LOW, NONE"),
        (["--all", "--state", "ACTIVE"], "give --all or --state, not both"),
        (["--at", "yesterday"], "yesterday"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(args: list[str], reason: str) -> None:
    result = incidents(*args)
    assert result.exit_code == 2 and result.stderr.startswith("pareis incidents: ")
    assert reason in result.stderr and result.stderr.count("\n") == 1


def test_analyze_prints_the_decision_before_the_evidence() -> None:
    result = cli("analyze", "--metadata", str(DEMO), "--dataset", RAW)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith("Nothing to switch: no contaminated version serves — retail.raw.transactions healed\n")
    assert out.index("Decision:") < out.index("Next step:") < out.index("Incident urn:li:incident:")
    assert "  • churn: Nothing to switch: churn_4 serving" in out
    verdicts = cli("analyze", "--metadata", str(DEMO), "--model", mlflow("mlModelGroup", "churn")).stdout
    assert verdicts.startswith("• churn: Nothing to switch: churn_4 serving")
