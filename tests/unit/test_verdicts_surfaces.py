"""One verdict rule on every surface (DESIGN §2.3, §6): Mission Control's Models page (``/api/models``), the MCP tool
``get_model_verdicts`` and ``pareis analyze --model --json`` give the same versions, verdicts, incidents and rollback
for every model group, on the demo recording and on a scenario built so that the per-incident rollback and the
overall one differ (an incident whose own safe rollback was contaminated by an earlier incident)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from pareis.answers.sources import Sources
from pareis.mcp.server import build_server
from pareis.web.app import create_app
from tests.data.gate import make_scenarios as sc
from tests.support.mcp_client import call, structured
from tests.support.recorded import RECORDED, mlflow, recorded_sources

Surfaces = Callable[[str], tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]
SOLO = sc.version("solo_1")  # a version in no model group, with no features: reached by no incident
SECOND_FAILURE = sc.DAY4 + 9 * sc.HOUR  # raw_orders.amount fails again, after the heal at 06:45


def _scenario(folder: Path) -> list[Path]:
    solo = sc.mcp("mlModel", SOLO, "mlModelProperties", {"name": "solo_1", "created": {"time": sc.T0}})
    again = [solo, sc.run(sc.A_RAW_AMOUNT, sc.RAW, SECOND_FAILURE, "FAILURE")]
    files = [sc.HERE / f"{n}.json" for n in ("base", "failing", "healed", "contaminated", "unknown-time")]
    (folder / "again.json").write_text(json.dumps(again))
    return [*files, folder / "again.json"]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sources]:
    from pareis.compose.sources import open_sources

    with open_sources(metadata=_scenario(tmp_path_factory.mktemp("verdicts"))) as sources:
        yield sources


def _models_api(sources: Sources) -> dict[str, dict[str, Any]]:
    with TestClient(create_app(sources, clock=lambda: sc.AT)) as client:
        response = client.get("/api/models")
        assert response.status_code == 200
        return {g["model"]: g for g in response.json()["groups"]}


def _surfaces(sources: Sources, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, dict[str, Any]], Surfaces]:
    """The Models page's groups by URN, and ``ask(model)``: (that group without ``at_risk``, the MCP answer, the
    CLI's JSON), each as JSON text parses back."""
    from pareis import cli as pareis_cli
    from pareis.compose import sources as compose

    monkeypatch.setattr(compose, "open_sources", lambda **kwargs: sources)
    server = build_server(sources)
    groups = _models_api(sources)

    def ask(model: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        web = {k: v for k, v in groups[model].items() if k != "at_risk"}
        mcp = structured(call(server, "get_model_verdicts", {"urn": model}))
        result = CliRunner().invoke(
            pareis_cli.app, ["analyze", "--metadata", str(RECORDED), "--model", model, "--json"]
        )
        assert result.exit_code == 0, result.stderr
        return web, json.loads(json.dumps(mcp)), json.loads(result.stdout)

    return groups, ask


@pytest.mark.parametrize("which", ["recording", "scenario"])
def test_every_group_has_the_same_verdicts_on_the_web_mcp_and_cli(
    which: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = recorded_sources() if which == "recording" else request.getfixturevalue("scenario")
    groups, ask = _surfaces(sources, monkeypatch)
    assert len(groups) >= 2
    for model, group in groups.items():
        web, mcp, cli = ask(model)
        assert web == mcp == cli, model
        assert group["at_risk"] == any(i["state"] == "ACTIVE" for i in web["incidents"])


def test_the_recording_names_the_poisoned_versions_and_v2_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    _, ask = _surfaces(recorded_sources(), monkeypatch)
    for name in ("churn", "ltv"):
        web, _, _ = ask(mlflow("mlModelGroup", name))
        verdicts = {v["urn"]: v["verdict"] for v in web["versions"]}
        assert [u for u, v in verdicts.items() if v == "CONTAMINATED"] == [mlflow("mlModel", f"{name}_3")]
        assert web["safe_rollback"] == {"urn": mlflow("mlModel", f"{name}_2"), "version": "2"}
        assert [i["state"] for i in web["incidents"]] == ["RESOLVED"]


def test_the_rollback_skips_a_version_an_earlier_incident_contaminated(
    scenario: Sources, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups, ask = _surfaces(scenario, monkeypatch)
    web, _, _ = ask(sc.CHURN)
    verdicts = {v["urn"]: v["verdict"] for v in web["versions"]}
    assert verdicts == {
        sc.version("churn_1"): "CLEAN",
        sc.version("churn_2"): "CLEAN",
        sc.version("churn_3"): "CONTAMINATED",
        sc.version("churn_u"): "UNKNOWN",
    }
    active, healed = web["incidents"]  # active first
    assert (active["state"], healed["state"]) == ("ACTIVE", "RESOLVED")
    assert active["window"]["first_failure_ms"] == SECOND_FAILURE
    # The second incident's own rollback is churn_3 (clean in it: trained before its last success), but the first
    # contaminated churn_3, so the model's rollback is churn_2.
    assert active["safe_rollback"]["urn"] == sc.version("churn_3")
    assert web["safe_rollback"] == {"urn": sc.version("churn_2"), "version": "2"}
    assert groups[sc.CHURN]["at_risk"] and groups[sc.LTV]["at_risk"] and not groups[SOLO]["at_risk"]
    # ltv_1 (reached at table precision through shop.sessions) trained before both windows.
    assert [v["verdict"] for v in ask(sc.LTV)[0]["versions"]] == ["CLEAN"]
    # A version no incident reached is CLEAN (DESIGN §2.3), not a fourth verdict.
    solo, _, _ = ask(SOLO)
    assert solo["group"] is None and [v["verdict"] for v in solo["versions"]] == ["CLEAN"] and not solo["incidents"]
