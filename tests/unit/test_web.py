"""Mission Control's server (pareis.web) over the recorded demo during its incident: pages, JSON twins, the token
guard, probes, metrics and the live follower. The browser-level behaviour is in tests/browser/."""

from __future__ import annotations

import asyncio
import concurrent.futures
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
from pareis.cli import app
from pareis.compose.sources import open_sources
from pareis.core.gate import CHECK_IDS
from pareis.web.app import create_app
from pareis.web.live import Follower
from tests.support.mission import CONTAMINATED, GROUPS, INCIDENT_STEP, DemoState

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


def test_the_models_page_shows_verdicts_and_the_gate_says_no_go(client: TestClient, demo: DemoState) -> None:
    from pareis.answers.gate import gate

    page = client.get("/models")
    assert page.status_code == 200
    for urn in CONTAMINATED:
        assert re.search(rf'data-version="{re.escape(urn)}">.*?CONTAMINATED', page.text, re.S)
    slots = re.findall(r'hx-get="(/fragments/gate\?model=[^"]+)"', page.text)  # each gate is fetched apart
    assert len(slots) == 2
    for slot in slots:
        fragment = client.get(slot.replace("&amp;", "&")).text
        assert 'data-testid="gate-decision">NO-GO<' in fragment
        assert len(re.findall(r'<tr data-check="[a-z_]+" data-status="[A-Z]+">', fragment)) == len(CHECK_IDS)
        assert '<tr data-check="no_active_incident" data-status="FAIL">' in fragment
        assert '<li data-check="no_active_incident"><b>no active incident</b>: 1 active incident(s) on ' in fragment
        assert "urn:li:dataset" not in fragment.split("<details")[0]  # sentences name short names (DESIGN §4)
    answer = client.get("/api/models").json()
    assert {g["model"].split(",")[1] for g in answer["groups"]} >= {"churn", "ltv"}
    for group in GROUPS:  # the gate's own answer, at the demo's clock
        expected = gate(demo.sources, model=group, at_ms=demo.clock()).to_json()
        assert answer["gates"][group] == json.loads(json.dumps(expected))
        assert [c["id"] for c in answer["gates"][group]["checks"]] == list(CHECK_IDS)
    assert client.get("/fragments/gate").status_code == 400  # no model: said, not guessed


def test_protect_shows_scores_gaps_and_the_dbt_yaml(client: TestClient, demo: DemoState) -> None:
    from pareis.answers.reliability import protect

    expected = protect(demo.sources, at_ms=demo.clock())
    assert client.get("/api/protect").json() == json.loads(json.dumps({**expected.to_json(), "yaml": expected.yaml}))
    page = client.get("/protect").text
    assert page.count("<tr data-urn=") == len(expected.datasets) + len(expected.models) > 0
    assert 'data-testid="copy-yaml"' in page and "not_null" in page


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

    # In a thread of its own: Playwright's sync API (tests/browser, same session) keeps a loop running in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert pool.submit(asyncio.run, scenario()).result() == ["1", "1", "2"]


def test_serve_refuses_to_bind_beyond_loopback_without_a_token(tmp_path: Path) -> None:
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
    spaced = tmp_path / "spaced"
    spaced.write_text("two words of a token\n")  # the same rule as pareis mcp's: one token, no spaces
    result = runner.invoke(app, ["serve", *files, "--token-file", str(spaced)])
    assert result.exit_code == 2 and "must hold one token" in result.output


def test_the_incidents_page_shows_the_first_hundred_then_all(monkeypatch: pytest.MonkeyPatch, demo: DemoState) -> None:
    from pareis.web import pages

    monkeypatch.setattr(pages, "PAGE_ROWS", 0)  # one incident in the demo: show none of it until "show all"
    with TestClient(create_app(demo.sources, clock=demo.clock, guard=demo.lock)) as c:
        page = c.get("/incidents?severity=MEDIUM").text
        assert 'data-count="1" data-shown="0"' in page
        link = re.search(r'<a href="(/incidents\?[^"]+)">show all</a>', page)
        assert link and link[1] == "/incidents?all=1&amp;severity=MEDIUM"
        assert 'data-count="1" data-shown="1"' in c.get("/incidents?all=1&severity=MEDIUM").text
