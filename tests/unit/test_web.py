"""Mission Control's server (pareis.web) over the recorded demo during its incident: pages, JSON twins, the token
guard, probes, metrics and the live follower. The browser-level behaviour is in tests/browser/."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from pareis.answers.dossier import dossier
from pareis.answers.incidents import incident_list
from pareis.cli import _register, app
from pareis.compose.sources import open_sources
from pareis.web.app import create_app
from pareis.web.live import Follower
from tests.support.mission import CONTAMINATED, INCIDENT_STEP, DemoState

TOKEN = "s3cret-token-0123456789"


@pytest.fixture(scope="module")
def demo() -> DemoState:
    return DemoState(INCIDENT_STEP)


@pytest.fixture(scope="module")
def client(demo: DemoState) -> Iterator[TestClient]:
    with TestClient(create_app(demo.sources, clock=demo.clock, guard=demo.lock)) as c:
        yield c


def _urn(demo: DemoState) -> str:
    return incident_list(demo.sources)[0].urn


def test_the_incidents_page_lists_the_demo_incident_and_filters_it(client: TestClient, demo: DemoState) -> None:
    page = client.get("/incidents")
    assert page.status_code == 200
    assert f'data-urn="{_urn(demo)}"' in page.text and 'data-state="ACTIVE"' in page.text
    assert "retail.raw.transactions" in page.text and "254,193" in page.text
    assert 'sse-connect="/events?since=' in page.text
    assert 'data-count="0"' in client.get("/incidents?state=RESOLVED").text
    assert 'data-count="1"' in client.get("/incidents/table?severity=MEDIUM&q=churn_3").text
    assert 'data-count="0"' in client.get("/incidents/table?severity=HIGH").text
    assert client.get("/api/incidents").json() == [s.to_json() for s in incident_list(demo.sources)]
    assert client.get("/", follow_redirects=False).headers["location"] == "/incidents"


def test_the_incident_page_shows_graph_timeline_and_verdicts(client: TestClient, demo: DemoState) -> None:
    urn = _urn(demo)
    page = client.get(f"/incidents/{quote(urn, safe='')}")
    assert page.status_code == 200
    graph = json.loads(re.search(r'<script type="application/json" id="blast-data">(.*?)</script>', page.text, re.S)[1])
    assert len([n for n in graph["nodes"] if n["kind"] == "model"]) == 6
    marks = re.findall(r'<g class="mark version contaminated" data-verdict="CONTAMINATED">', page.text)
    assert len(marks) == 2
    rows = dict(re.findall(r'<tr data-version="([^"]+)" data-verdict="([A-Z]+)">', page.text))
    assert {u for u, v in rows.items() if v == "CONTAMINATED"} == set(CONTAMINATED)
    assert page.text.count("roll back here") == 2
    assert client.get(f"/api/incidents/{quote(urn, safe='')}").json() == json.loads(
        json.dumps(dossier(demo.sources, urn).to_json())
    )
    missing = client.get("/incidents/urn:li:incident:pareis-nope")
    assert missing.status_code == 404 and "no incident" in missing.text
    assert client.get("/api/incidents/urn:li:incident:pareis-nope").status_code == 404


def test_the_models_page_shows_every_version_and_its_verdict(client: TestClient) -> None:
    page = client.get("/models")
    assert page.status_code == 200
    for urn in CONTAMINATED:
        assert re.search(rf'data-version="{re.escape(urn)}">.*?CONTAMINATED', page.text, re.S)
    answer = client.get("/api/models").json()
    assert {g["group"].split(",")[1] for g in answer["groups"]} >= {"churn", "ltv"}


def test_protect_answers_in_html_and_json(client: TestClient) -> None:
    page = client.get("/protect")
    assert page.status_code == 200 and "<h1>Protect</h1>" in page.text
    assert client.get("/api/protect").status_code in (200, 404)


def test_a_token_guards_everything_but_the_probes(demo: DemoState) -> None:
    with TestClient(create_app(demo.sources, token=TOKEN, clock=demo.clock, guard=demo.lock)) as c:
        assert c.get("/incidents").status_code == 401
        assert c.get("/api/incidents", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/api/incidents", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert c.get("/healthz").status_code == 200 and c.get("/metrics").status_code == 200
        landing = c.get(f"/incidents?token={TOKEN}", follow_redirects=False)
        assert landing.status_code == 303 and "token" not in landing.headers["location"]
        assert c.get("/incidents").status_code == 200  # the cookie set by ?token=


def test_probes_and_metrics(client: TestClient) -> None:
    assert client.get("/healthz").json()["ok"] is True
    assert client.get("/readyz").json() == {"ok": True, "details": {"sources": "ok"}}
    client.get("/incidents")
    metrics = client.get("/metrics").text
    assert 'pareis_web_requests_total{route="incidents",status="200"}' in metrics
    assert "pareis_web_request_seconds_bucket" in metrics


def test_readyz_fails_while_redis_is_unreachable() -> None:
    sources = open_sources(redis_url="redis://127.0.0.1:1/0")
    with TestClient(create_app(sources)) as c:
        ready = c.get("/readyz")
        assert ready.status_code == 503 and not ready.json()["ok"]
        assert c.get("/api/incidents").status_code == 503
        assert c.get("/incidents").status_code == 503
    sources.close()


def test_the_follower_numbers_changes_and_catches_up_late_streams() -> None:
    tokens = iter(["a", "a", "b", "b", "c"])

    async def scenario() -> list[str]:
        follower = Follower(lambda: next(tokens), interval_s=3600)
        await follower.start()  # reads "a": seq 0
        stream = follower.changes("0")
        got: list[str] = []
        waiting = asyncio.ensure_future(stream.__anext__())
        await follower.poll()  # "a" again: no change
        await asyncio.sleep(0)
        assert not waiting.done()
        await follower.poll()  # "b": change 1
        got.append(await waiting)
        late = follower.changes("0")  # a page rendered at 0 connects after change 1
        got.append(await late.__anext__())
        await follower.poll()  # "b": nothing
        await follower.poll()  # "c": change 2
        got.append(await stream.__anext__())
        await follower.stop()
        return got

    assert asyncio.run(scenario()) == ["1", "1", "2"]


def test_serve_refuses_to_bind_beyond_loopback_without_a_token(tmp_path: Path) -> None:
    _register()
    runner = CliRunner()
    files = ["--metadata", "deploy/demo/recorded/01-history-load.json"]
    result = runner.invoke(app, ["serve", *files, "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "needs --token-file" in result.output
    short = tmp_path / "token"
    short.write_text("abc\n")
    result = runner.invoke(app, ["serve", *files, "--token-file", str(short)])
    assert result.exit_code == 2 and "at least 16 characters" in result.output
    result = runner.invoke(app, ["serve", *files, "--token-file", str(tmp_path / "absent")])
    assert result.exit_code == 2 and "can't read --token-file" in result.output
