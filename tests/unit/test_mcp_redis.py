"""The MCP tools on the live Redis index loaded from the demo recording by ``pareis bootstrap``: the same answers
as on the recording's files, on both protocol modes; and a Redis that is down is a one-line tool error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from typer.testing import CliRunner

from pareis.answers.sources import Sources
from pareis.compose.sources import open_sources
from pareis.mcp.server import build_server
from tests.support.mcp_client import MODES, call, calls, error_text, structured
from tests.support.recorded import RAW, RECORDED, mlflow, recorded_sources


@pytest.fixture
def loaded(redis_url: str) -> Iterator[Sources]:
    from pareis import cli as pareis_cli

    result = CliRunner().invoke(pareis_cli.app, ["bootstrap", "--metadata", str(RECORDED), "--redis", redis_url])
    assert result.exit_code == 0, result.stderr
    with open_sources(redis_url=redis_url) as sources:
        yield sources


def questions(files: Sources) -> list[tuple[str, dict[str, Any]]]:
    from pareis.answers.incidents import incident_list

    (only,) = incident_list(files)
    return [
        ("list_incidents", {"state": "ALL"}),
        ("list_incidents", {"state": "ALL", "model_urn": mlflow("mlModelGroup", "churn")}),
        ("get_incident", {"urn": only.urn}),
        ("get_incident", {"urn": RAW}),
        ("get_blast_radius", {"urn": only.assertions[0], "max_results": 3}),
        ("get_blast_radius", {"urn": RAW, "column": "unit_price"}),
        ("get_model_verdicts", {"urn": mlflow("mlModelGroup", "ltv")}),
        ("get_model_verdicts", {"urn": mlflow("mlModel", "churn_2")}),
        ("check_retrain_gate", {"model_urn": mlflow("mlModelGroup", "churn"), "at": "2025-10-06T12:00:00"}),
        ("check_retrain_gate", {"model_urn": mlflow("mlModel", "ltv_4"), "at": "2025-10-09T12:00:00"}),
        ("get_reliability", {"urn": mlflow("mlModelGroup", "ltv"), "at": "2025-10-06T12:00:00"}),
        ("get_evidence_pack", {"model_urn": mlflow("mlModelGroup", "churn"), "at": "2025-10-08T00:00:00"}),
    ]


def without_origin(answer: dict[str, Any], origin: str) -> dict[str, Any]:
    """An answer with the name of its source blanked: the evidence pack says where it was generated from."""
    return json.loads(json.dumps(answer).replace(origin, "<origin>"))


def test_every_tool_answers_from_redis_as_from_the_files(loaded: Sources) -> None:
    files = recorded_sources()
    asked = questions(files)
    expected = [without_origin(structured(r), files.origin) for r in calls(build_server(files), asked, mode="auto")]
    server: MCPServer = build_server(loaded)
    for mode in MODES:
        got = [without_origin(structured(r), loaded.origin) for r in calls(server, asked, mode=mode)]
        for (tool, args), answer, want in zip(asked, got, expected, strict=True):
            assert answer == want, (mode, tool, args)


def test_a_redis_that_is_down_is_a_one_line_tool_error() -> None:
    with open_sources(redis_url="redis://127.0.0.1:1/0") as down:
        text = error_text(call(build_server(down), "list_incidents", {}))
    assert text.startswith("Error executing tool list_incidents: source unavailable:") and "\n" not in text
