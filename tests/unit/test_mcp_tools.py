"""The Pareis MCP server's tools on the demo recording, through the SDK's own client in-process, on the current
protocol revision and on the legacy initialize handshake: ``tools/list`` (order, annotations, schemas), answers
equal to the CLI's ``--json`` for the same input, paging, the verdicts, and errors as one-line tool errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from typer.testing import CliRunner

from pareis.answers.incidents import incident_list
from pareis.answers.render import dump
from pareis.answers.sources import Sources
from pareis.contracts.agent import TOOL_NAMES
from pareis.mcp.server import build_server
from tests.support.mcp_client import MODES, call, calls, error_text, list_tools, structured
from tests.support.recorded import RAW, RECORDED, mlflow, recorded_sources

PAGING = ("offset", "max_results", "returned", "total", "has_more")


@pytest.fixture(scope="module")
def sources() -> Sources:
    return recorded_sources()


@pytest.fixture(scope="module")
def server(sources: Sources) -> MCPServer:
    return build_server(sources)


@pytest.fixture(scope="module")
def incident(sources: Sources) -> dict[str, Any]:
    (only,) = incident_list(sources)
    return only.to_json()


@pytest.fixture
def cli(sources: Sources, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``cli("blast", "--assertion", URN)``: the CLI's ``--json`` answer on the recording, computed in-process
    (the CLI's own option parsing and rendering; its ``open_sources`` hands back the already loaded recording)."""
    from pareis import cli as pareis_cli
    from pareis.compose import sources as compose

    monkeypatch.setattr(compose, "open_sources", lambda **kwargs: sources)

    def run(command: str, *args: str, codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
        result = CliRunner().invoke(pareis_cli.app, [command, "--metadata", str(RECORDED), *args, "--json"])
        assert result.exit_code in codes, result.stderr
        parsed: dict[str, Any] = json.loads(result.stdout)
        return parsed

    yield run


# --- tools/list ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_tools_list_is_the_catalogue_in_order_read_only_closed_world_and_typed(server: MCPServer, mode: str) -> None:
    tools = list_tools(server, mode=mode).tools
    assert [t.name for t in tools] == list(TOOL_NAMES)
    for tool in tools:
        assert tool.annotations is not None, tool.name
        assert tool.annotations.read_only_hint is True and tool.annotations.open_world_hint is False, tool.name
        assert tool.annotations.destructive_hint is False and tool.annotations.idempotent_hint is True
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
        assert tool.output_schema.get("additionalProperties") is False, tool.name
        assert tool.input_schema["type"] == "object" and tool.description and tool.title
    schemas = {t.name: t for t in tools}
    assert set(PAGING) <= set(schemas["list_incidents"].output_schema["properties"])  # type: ignore[index]
    assert schemas["get_blast_radius"].input_schema["required"] == ["urn"]


def test_tools_list_is_the_same_on_every_call_and_in_both_modes(server: MCPServer) -> None:
    first = [t.model_dump(mode="json") for t in list_tools(server).tools]
    assert first == [t.model_dump(mode="json") for t in list_tools(server).tools]
    assert first == [t.model_dump(mode="json") for t in list_tools(server, mode="legacy").tools]


# --- the CLI's answers ---------------------------------------------------------------------------------------------


def unpaged(answer: dict[str, Any]) -> dict[str, Any]:
    """A paged answer that one page holds, without its paging fields (what the CLI prints)."""
    assert answer["has_more"] is False and answer["offset"] == 0
    return {k: v for k, v in answer.items() if k not in (*PAGING, "totals")}


@pytest.mark.parametrize("mode", MODES)
def test_get_incident_is_pareis_analyze_json(server: MCPServer, cli: Any, incident: dict[str, Any], mode: str) -> None:
    assertion = incident["assertions"][0]
    by_dataset, by_urn, by_assertion = calls(
        server,
        [
            ("get_incident", {"urn": RAW, "max_results": 500}),
            ("get_incident", {"urn": incident["urn"], "max_results": 500}),
            ("get_incident", {"urn": assertion, "max_results": 500}),
        ],
        mode=mode,
    )
    expected = cli("analyze", "--dataset", RAW)
    assert unpaged(structured(by_dataset)) == expected
    assert unpaged(structured(by_urn)) == expected
    assert unpaged(structured(by_assertion)) == cli("analyze", "--assertion", assertion)
    assert expected["incident"]["urn"] == incident["urn"]
    assert [d["action"] for d in expected["decisions"]] == ["NONE", "NONE"]  # healed, clean retrains presumed serving


def test_get_incident_pages_the_blast_radius_and_keeps_the_decision_whole(server: MCPServer, cli: Any) -> None:
    whole = cli("analyze", "--dataset", RAW)
    first = structured(call(server, "get_incident", {"urn": RAW, "max_results": 2}))
    lists = ("columns", "datasets", "features", "models")
    assert first["totals"] == {name: len(whole["blast"][name]) for name in lists}
    assert first["total"] == max(first["totals"].values()) > 2 and first["has_more"] is True
    assert all(first["blast"][name] == whole["blast"][name][:2] for name in lists)
    assert {k: first[k] for k in ("decisions", "contamination", "window", "incident")} == {
        k: whole[k] for k in ("decisions", "contamination", "window", "incident")
    }
    default = structured(call(server, "get_incident", {"urn": RAW}))
    assert default["max_results"] == 20 and len(dump(default)) < len(dump(whole))


def test_at_a_time_mcp_and_the_cli_give_the_decision_then(
    server: MCPServer, cli: Any, incident: dict[str, Any]
) -> None:
    churn = mlflow("mlModelGroup", "churn")
    during = cli("analyze", "--dataset", RAW, "--at", AT)
    assert during["incident"]["state"] == "ACTIVE" and during["window"]["healed_ms"] is None
    assert [(d["action"], d["target"]["version"]) for d in during["decisions"]] == [("ROLL_BACK", "2")] * 2
    for urn in (RAW, incident["urn"]):
        got = structured(call(server, "get_incident", {"urn": urn, "at": AT, "max_results": 500}))
        assert unpaged(got) == during, urn
    verdicts = cli("analyze", "--model", churn, "--at", AT)
    assert structured(call(server, "get_model_verdicts", {"urn": churn, "at": AT})) == verdicts
    assert verdicts["decision"]["action"] == "ROLL_BACK" and len(verdicts["versions"]) == 3  # churn_4 not yet


def test_get_model_verdicts_is_pareis_analyze_model_json_with_the_decision(server: MCPServer, cli: Any) -> None:
    for model in (mlflow("mlModelGroup", "churn"), mlflow("mlModel", "ltv_3")):
        answer = structured(call(server, "get_model_verdicts", {"urn": model}))
        assert answer == cli("analyze", "--model", model)
        assert answer["decision"]["group"] == answer["group"] and answer["decision"]["action"] == "NONE"


def test_list_incidents_is_pareis_incidents_json(server: MCPServer, sources: Sources, monkeypatch: Any) -> None:
    from pareis import cli as pareis_cli
    from pareis.compose import sources as compose

    monkeypatch.setattr(compose, "open_sources", lambda **kwargs: sources)

    def rows(*args: str) -> list[dict[str, Any]]:
        result = CliRunner().invoke(pareis_cli.app, ["incidents", "--metadata", str(RECORDED), *args, "--json"])
        assert result.exit_code == 0, result.stderr
        parsed: list[dict[str, Any]] = json.loads(result.stdout)
        return parsed

    for tool_args, cli_args in [
        ({"state": "ALL"}, ["--all"]),
        ({"state": "ACTIVE"}, []),
        ({"state": "ALL", "at": AT}, ["--all", "--at", AT]),
        ({"state": "RESOLVED", "dataset_urn": RAW}, ["--state", "RESOLVED", "--dataset", RAW]),
        ({"state": "ALL", "severity": "HIGH"}, ["--all", "--severity", "HIGH"]),
    ]:
        page = structured(call(server, "list_incidents", {**tool_args, "max_results": 500}))
        assert page["incidents"] == rows(*cli_args), tool_args
    during = rows("--all", "--at", AT)
    assert [d["action"] for d in during[0]["decisions"]] == ["ROLL_BACK", "ROLL_BACK"]


@pytest.mark.parametrize("mode", MODES)
def test_get_blast_radius_is_pareis_blast_json_when_one_page_holds_it(
    server: MCPServer, cli: Any, incident: dict[str, Any], mode: str
) -> None:
    assertion = incident["assertions"][0]
    column = f"urn:li:schemaField:({RAW},unit_price)"
    answers = calls(
        server,
        [
            ("get_blast_radius", {"urn": assertion, "max_results": 500}),
            ("get_blast_radius", {"urn": column, "max_results": 500}),
            ("get_blast_radius", {"urn": RAW, "column": "unit_price", "max_results": 500}),
            ("get_blast_radius", {"urn": RAW, "max_results": 500}),
        ],
        mode=mode,
    )
    expected = [
        cli("blast", "--assertion", assertion),
        cli("blast", "--column", column),
        cli("blast", "--column", column),
        cli("blast", "--dataset", RAW),
    ]
    for answer, want in zip(answers, expected, strict=True):
        got = structured(answer)
        assert got["has_more"] is False and got["offset"] == 0
        assert {k: v for k, v in got.items() if k not in (*PAGING, "totals")} == want
    assert expected[0]["blast"]["models"], "the recording's failing test reaches models"


AT = "2025-10-06T12:00:00"  # inside the recording's incident: the gate says NO-GO
AT_MS = 1_759_752_000_000


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("model", [mlflow("mlModelGroup", "churn"), mlflow("mlModel", "ltv_2")])
def test_check_retrain_gate_is_pareis_gate_json(server: MCPServer, cli: Any, model: str, mode: str) -> None:
    (answer,) = calls(server, [("check_retrain_gate", {"model_urn": model, "at": AT})], mode=mode)
    expected = cli("gate", "--model", model, "--at", AT, codes=(0, 1))
    assert structured(answer) == expected
    assert expected["decision"] == "NO-GO" and expected["evaluated_at_ms"] == AT_MS
    relaxed = call(server, "check_retrain_gate", {"model_urn": model, "at": AT_MS, "max_age_hours": 1, "min_score": 0})
    assert structured(relaxed) == cli(
        "gate", "--model", model, "--at", str(AT_MS), "--max-age-hours", "1", "--min-score", "0", codes=(0, 1)
    )


@pytest.mark.parametrize("mode", MODES)
def test_get_reliability_is_pareis_protect_json(server: MCPServer, cli: Any, mode: str) -> None:
    churn = mlflow("mlModelGroup", "churn")
    features = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.analytics.customer_features,PROD)"
    got = calls(
        server,
        [
            ("get_reliability", {"urn": churn, "max_gaps": 3, "at": AT}),
            ("get_reliability", {"urn": churn, "include_gaps": False, "at": AT}),
            ("get_reliability", {"urn": features, "at": AT_MS}),
        ],
        mode=mode,
    )
    with_gaps = cli("protect", "--model", churn, "--at", AT, "--max-gaps", "3")
    assert structured(got[0]) == with_gaps and with_gaps["gaps"] and with_gaps["models"]
    assert structured(got[1]) == cli("protect", "--model", churn, "--at", AT, "--max-gaps", "0")
    assert structured(got[1])["gaps"] == []
    assert structured(got[2]) == cli("protect", "--dataset", features, "--at", str(AT_MS), "--max-gaps", "10")


def test_the_evidence_pack_tool_and_resource_are_pareis_evidence(
    server: MCPServer, sources: Sources, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import anyio
    from mcp import Client

    from pareis import cli as pareis_cli
    from pareis.compose import sources as compose
    from pareis.mcp import server as mcp_server

    churn = mlflow("mlModelGroup", "churn")
    monkeypatch.setattr(compose, "open_sources", lambda **kwargs: sources)
    args = ["evidence", "--model", churn, "--metadata", str(RECORDED), "--at", AT, "--out", str(tmp_path)]
    result = CliRunner().invoke(pareis_cli.app, [*args, "--format", "md,json"])
    assert result.exit_code == 0, result.stderr
    (md,) = tmp_path.glob("*.md")
    (js,) = tmp_path.glob("*.json")
    answer = structured(call(server, "get_evidence_pack", {"model_urn": churn, "at": AT, "format": "full"}))
    assert answer["markdown"] == md.read_text(encoding="utf-8")
    assert answer["pack"] == json.loads(js.read_text(encoding="utf-8"))
    assert answer["pack"]["kind"] == "pareis.evidence_pack.v1" and "not legal advice" in answer["markdown"].lower()
    summary = structured(call(server, "get_evidence_pack", {"model_urn": churn, "at": AT}))
    assert summary["format"] == "summary" and summary["header"] == answer["pack"]["header"]
    assert [s["id"] for s in summary["sections"]] == [s["id"] for s in answer["pack"]["sections"]]
    assert all("facts" not in s and s["status"] and s["summary"] for s in summary["sections"])
    assert len(dump(summary)) * 5 < len(dump(answer))  # the token economy the default is for

    monkeypatch.setattr(mcp_server, "at_ms", lambda at, now_ms=None: AT_MS)  # the resource's "now"
    pinned = build_server(sources)

    async def read() -> tuple[list[str], Any]:
        from urllib.parse import quote

        async with Client(pinned) as client:
            templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
            return templates, await client.read_resource(f"pareis://evidence/{quote(churn, safe='')}")

    templates, resource = anyio.run(read)
    assert templates == ["pareis://evidence/{model_urn}"]
    (content,) = resource.contents
    assert content.mime_type == "text/markdown" and getattr(content, "text", None) == answer["markdown"]


def test_every_answer_is_also_the_cli_text(server: MCPServer, incident: dict[str, Any]) -> None:
    for tool, args in [
        ("list_incidents", {"state": "ALL"}),
        ("get_incident", {"urn": RAW}),
        ("get_blast_radius", {"urn": incident["assertions"][0]}),
        ("get_model_verdicts", {"urn": mlflow("mlModelGroup", "churn")}),
        ("check_retrain_gate", {"model_urn": mlflow("mlModelGroup", "churn"), "at": AT}),
        ("get_reliability", {"urn": mlflow("mlModelGroup", "churn"), "at": AT}),
        ("get_evidence_pack", {"model_urn": mlflow("mlModelGroup", "churn"), "at": AT}),
    ]:
        result = call(server, tool, args)
        (block,) = result.content
        assert getattr(block, "text", None) == dump(structured(result)), tool


# --- paging --------------------------------------------------------------------------------------------------------


def test_blast_pages_walk_every_list_exactly_once(server: MCPServer, incident: dict[str, Any]) -> None:
    assertion = incident["assertions"][0]
    whole = structured(call(server, "get_blast_radius", {"urn": assertion, "max_results": 500}))
    lists = ("columns", "datasets", "features", "models")
    assert whole["totals"] == {name: len(whole["blast"][name]) for name in lists}
    assert whole["total"] == max(whole["totals"].values()) > 2
    collected: dict[str, list[Any]] = {name: [] for name in lists}
    offset, pages = 0, 0
    while True:
        page = structured(call(server, "get_blast_radius", {"urn": assertion, "offset": offset, "max_results": 2}))
        assert page["offset"] == offset and page["max_results"] == 2 and page["total"] == whole["total"]
        assert page["returned"] == max(len(page["blast"][name]) for name in lists) <= 2
        assert {k: v for k, v in page["blast"].items() if k not in lists} == {
            k: v for k, v in whole["blast"].items() if k not in lists
        }
        for name in lists:
            collected[name] += page["blast"][name]
        pages += 1
        offset += page["returned"]
        if not page["has_more"]:
            break
    assert pages == -(-whole["total"] // 2)
    assert collected == {name: whole["blast"][name] for name in lists}


def test_a_page_past_the_end_is_empty_not_an_error(server: MCPServer) -> None:
    page = structured(call(server, "list_incidents", {"state": "ALL", "offset": 5}))
    assert page["incidents"] == [] and page["returned"] == 0 and page["total"] == 1 and page["has_more"] is False


# --- incidents and verdicts ----------------------------------------------------------------------------------------


def test_list_incidents_filters_by_state_dataset_and_model(server: MCPServer, incident: dict[str, Any]) -> None:
    every = structured(call(server, "list_incidents", {"state": "ALL"}))
    assert every["incidents"] == [incident]
    assert (every["returned"], every["total"], every["has_more"]) == (1, 1, False)
    expected = {
        (("state", "ACTIVE"),): 0,  # the recording ends healed
        (("state", "RESOLVED"),): 1,
        (("state", "ALL"), ("dataset_urn", RAW)): 1,
        (("state", "ALL"), ("dataset_urn", RAW.replace("postgres", "dbt"))): 1,  # the dbt node of the table
        (("state", "ALL"), ("severity", "MEDIUM")): 1,
        (("state", "ALL"), ("severity", "HIGH")): 0,
        (("state", "ALL"), ("at", "2025-10-01T00:00:00Z")): 0,  # before the incident began
        (("state", "ALL"), ("dataset_urn", mlflow("mlModel", "churn_1"))): 0,
        (("state", "ALL"), ("model_urn", mlflow("mlModel", "churn_3"))): 1,
        (("state", "ALL"), ("model_urn", mlflow("mlModelGroup", "ltv"))): 1,
    }
    for filters, total in expected.items():
        page = structured(call(server, "list_incidents", dict(filters)))
        assert page["total"] == total, filters


@pytest.mark.parametrize("model", [mlflow("mlModelGroup", "churn"), mlflow("mlModel", "churn_3")])
def test_model_verdicts_name_the_poisoned_version_and_the_safe_rollback(
    server: MCPServer, incident: dict[str, Any], model: str
) -> None:
    answer = structured(call(server, "get_model_verdicts", {"urn": model}))
    assert answer["model"] == model and answer["group"] == mlflow("mlModelGroup", "churn")
    verdicts = {v["urn"].rsplit(",", 2)[-2]: v["verdict"] for v in answer["versions"]}
    assert verdicts == {"churn_1": "CLEAN", "churn_2": "CLEAN", "churn_3": "CONTAMINATED", "churn_4": "CLEAN"}
    (poisoned,) = [v for v in answer["versions"] if v["verdict"] == "CONTAMINATED"]
    assert poisoned["contaminated_by"] == [incident["urn"]]
    trained = [v["trained_at_ms"] for v in answer["versions"]]
    assert trained == sorted(trained), "oldest first"
    assert answer["safe_rollback"] == {"urn": mlflow("mlModel", "churn_2"), "version": "2"}
    (evaluated,) = answer["incidents"]
    assert evaluated["urn"] == incident["urn"] and evaluated["safe_rollback"] == answer["safe_rollback"]
    assert evaluated["window"]["last_success_ms"] == incident["last_success_ms"]


# --- errors --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "reason"),
    [
        ("get_blast_radius", {"urn": "urn:li:assertion:nope"}, "urn:li:assertion:nope"),
        ("get_blast_radius", {"urn": "not a urn"}, "is not a DataHub URN"),
        ("get_blast_radius", {"urn": mlflow("mlModel", "churn_1")}, "give an assertion, schemaField or dataset URN"),
        ("get_blast_radius", {"urn": "urn:li:assertion:x", "column": "a"}, "column needs a dataset URN"),
        ("get_blast_radius", {"urn": f"urn:li:schemaField:({RAW},no_such_column)"}, "unknown column"),
        ("get_incident", {"urn": "urn:li:incident:pareis-0000"}, "unknown incident"),
        ("get_incident", {"urn": "urn:li:dataset:(urn:li:dataPlatform:x,never.failed,PROD)"}, "unknown dataset"),
        ("get_model_verdicts", {"urn": mlflow("mlModel", "nope_9")}, "unknown model"),
        ("get_model_verdicts", {"urn": RAW}, "is not a model version"),
        ("list_incidents", {"max_results": 0}, "max_results"),
        ("check_retrain_gate", {"model_urn": mlflow("mlModel", "nope_9")}, "unknown model"),
        ("check_retrain_gate", {"model_urn": mlflow("mlModel", "churn_1"), "at": "yesterday"}, "ISO-8601"),
        ("get_reliability", {"urn": "urn:li:assertion:x"}, "give a dataset, mlModel or mlModelGroup URN"),
        ("get_evidence_pack", {"model_urn": mlflow("mlModel", "nope_9")}, "nope_9"),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_questions_it_cannot_answer_are_tool_errors_with_one_line(
    server: MCPServer, tool: str, args: dict[str, Any], reason: str, mode: str
) -> None:
    text = error_text(call(server, tool, args, mode=mode))
    assert reason in text and "\n" not in text.strip()
