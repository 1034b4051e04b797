"""Mission Control's decision-first pages over the recorded demo (issue 33): the decision per affected group on the
incident page and in the list, contaminated versions apart from the versions at risk, what is said about errors
(unknown routes, unknown URNs, bad filters), dataset URNs leading to their incident, a snapshot's clock, unknown
reliability components. The browser-level behaviour (first screen, widths, axe, live) is in tests/browser/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from pareis.answers.incidents import incident_list
from pareis.cli import app
from pareis.web.app import create_app, fixed_clock
from pareis.web.context import environment
from pareis.web.present import next_step, shorten_urns
from tests.support.mission import CONTAMINATED, GROUPS, INCIDENT_STEP, DemoState

RETRAINED_STEP = "11-d7-retrain-clean"  # after the repair, both groups retrained on clean data


@pytest.fixture(scope="module")
def demo() -> DemoState:
    return DemoState(INCIDENT_STEP)


@pytest.fixture(scope="module")
def client(demo: DemoState) -> Iterator[TestClient]:
    with TestClient(create_app(demo.sources, clock=demo.clock, guard=demo.lock)) as c:
        yield c


def _decisions(html: str) -> list[tuple[str, str]]:
    return re.findall(r'data-group="([^"]+)" data-action="([A-Z_]+)" data-testid="decision"', html)


def test_the_incident_page_leads_with_the_decision_per_group(client: TestClient, demo: DemoState) -> None:
    urn = incident_list(demo.sources)[0].urn
    page = client.get(f"/incidents/{quote(urn, safe='')}").text
    assert _decisions(page) == [(GROUPS[0], "ROLL_BACK"), (GROUPS[1], "ROLL_BACK")]
    decision, evidence = page.index('data-testid="decisions"'), page.index('id="blast-h"')
    assert decision < page.index('data-testid="facts"') < evidence < page.index('data-testid="verdicts"')
    panel = page[decision : page.index('id="facts-h"')]
    assert "roll back to churn_2, the newest clean version." in panel
    assert "<b>Next step:</b> Roll churn back to churn_2 now; retrain only once the retrain gate says GO." in panel
    assert 'churn_3 <span class="sub">(presumed: newest version)</span>' in " ".join(panel.split())
    assert panel.count('hx-get="/fragments/gate?model=') == 2  # the gate per group, fetched apart
    assert panel.count("none recorded in DataHub") == 2  # the demo's models have no owners
    assert "urn:li:" not in re.sub(r'(data-group|hx-get)="[^"]*"', "", panel)  # sentences name short names


def test_the_list_counts_contaminated_versions_apart_from_those_at_risk() -> None:
    state = DemoState(INCIDENT_STEP)
    with TestClient(create_app(state.sources, clock=state.clock, guard=state.lock, list_ttl_s=0)) as c:
        during = c.get("/incidents").text
        assert 'data-contaminated="2" data-at-risk="6"' in during
        assert re.findall(r'data-action="([A-Z_]+)"><span class="action', during) == ["ROLL_BACK", "ROLL_BACK"]
        state.advance(RETRAINED_STEP)  # healed, then churn_4 and ltv_4 trained on repaired data
        after = c.get("/incidents?all=1").text
    row = after[after.index('<tr class="incident resolved') :]
    # In the blast radius now: 8 versions; the two trained after the heal never saw the bad data.
    assert 'data-contaminated="2" data-at-risk="6"' in row
    assert "churn_4" not in row.split('data-testid="row-models"')[1].split("</td>")[0]
    # churn_4 (presumed serving: the newest) is clean: nothing to switch, and churn_3 must not come back.
    assert re.findall(r'data-action="([A-Z_]+)"><span class="action', row) == ["NONE", "NONE"]


def test_what_is_not_there_is_a_styled_page_that_says_what(client: TestClient) -> None:
    page = client.get("/no/such/page")
    assert page.status_code == 404 and "text/html" in page.headers["content-type"]
    assert (
        "There is no page at /no/such/page." in page.text and 'href="/incidents">Back to the incident list' in page.text
    )
    assert client.post("/incidents").status_code == 405
    assert client.get("/api/nothing").json() == {"error": "There is no page at /api/nothing."}
    long = "urn:li:dataset:(urn:li:dataPlatform:dbt," + "x" * 5000 + ",PROD)"
    unknown = client.get(f"/incidents/{quote(long, safe='')}")
    assert unknown.status_code == 404 and f"unknown dataset {long}" in unknown.text
    assert client.get("/incidents/urn:li:incident:pareis-nope").status_code == 404


def test_a_dataset_or_assertion_urn_leads_to_its_incident(client: TestClient, demo: DemoState) -> None:
    summary = incident_list(demo.sources)[0]
    target = f"/incidents/{quote(summary.urn, safe='')}"
    dbt_twin = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.raw.transactions,PROD)"  # a sibling of the key
    for asked in (summary.dataset, dbt_twin, summary.assertions[0]):
        page = client.get(f"/incidents/{quote(asked, safe='')}", follow_redirects=False)
        assert (page.status_code, page.headers["location"]) == (303, target)
        api = client.get(f"/api/incidents/{quote(asked, safe='')}", follow_redirects=False)
        assert api.headers["location"] == f"/api{target}"
    never = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.analytics.dim_products,PROD)"  # known, never failed
    assert client.get(f"/incidents/{quote(never, safe='')}").status_code == 404


def test_a_bad_filter_value_is_said_not_ignored(client: TestClient) -> None:
    page = client.get("/incidents?severity=CRITICAL&state=active")
    assert page.status_code == 400
    assert "severity &#39;CRITICAL&#39; is not one of HIGH, MEDIUM, LOW, NONE: not applied" in page.text
    assert 'data-count="1"' in page.text  # state=active still applies (case aside)
    api = client.get("/api/incidents?state=OPEN")
    assert api.status_code == 400 and "state 'OPEN' is not one of ACTIVE, RESOLVED" in api.json()["error"]


def test_a_snapshot_says_so_and_a_given_time_is_stated(demo: DemoState) -> None:
    import dataclasses

    files = dataclasses.replace(demo.sources, incidents=None, origin="metadata: recorded")
    with TestClient(create_app(files, clock=fixed_clock(1_759_903_200_000), clock_fixed=True)) as c:
        page = c.get("/incidents").text
    assert 'data-live="snapshot"' in page and "snapshot of files, at 2025-10-08 06:00 UTC" in page
    assert "sse-connect" not in page  # nothing changes: nothing to follow
    with TestClient(create_app(demo.sources, clock=fixed_clock(1_759_903_200_000), clock_fixed=True)) as c:
        page = c.get("/models").text
    assert 'data-live="connecting"' in page and "evaluated at 2025-10-08 06:00 UTC" in page


def test_serve_refuses_an_unreadable_at(tmp_path: Path) -> None:
    files = ["--metadata", "deploy/demo/recorded/01-history-load.json"]
    result = CliRunner().invoke(app, ["serve", *files, "--at", "yesterday-ish"])
    assert result.exit_code == 2 and "neither epoch milliseconds nor an ISO-8601 time" in result.output


def test_a_reliability_component_without_data_reads_unknown() -> None:
    component = {"name": "pass_rate", "value": None, "weight": 0.3, "detail": "no runs in the window"}
    score = {"urn": "urn:li:dataset:(urn:li:dataPlatform:dbt,a.b,PROD)", "score": None, "components": [component]}
    answer = {"evaluated_at_ms": 0, "datasets": [score], "models": [], "gaps": [], "yaml": ""}
    html = environment().get_template("protect.html").render(answer=answer, origin="test", at_ms=0, page="protect")
    assert "<b>unknown</b>" in html and "pass_rate unknown × 0.3" in html and "pass_rate 0" not in html


def test_a_live_re_fetch_of_the_same_content_carries_the_same_digest(client: TestClient, demo: DemoState) -> None:
    path = f"/incidents/{quote(incident_list(demo.sources)[0].urn, safe='')}"
    digests = [re.findall(r'<main [^>]*data-digest="([0-9a-f]{16})"', client.get(path).text) for _ in range(2)]
    assert len(digests[0]) == 1 and digests[0] == digests[1]


def test_sentences_name_entities_by_their_short_names() -> None:
    text = (
        "1 active incident(s) on urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD) reach it; "
        "column urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:dbt,a.b,PROD),x.y); rollback: "
        "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_2,PROD). Assertion urn:li:assertion:abc12."
    )
    assert shorten_urns(text) == (
        "1 active incident(s) on retail.raw.transactions reach it; column x.y; rollback: churn_2. Assertion abc12."
    )
    promote = {"group": GROUPS[0], "action": "PROMOTE", "target": {"urn": CONTAMINATED[0].replace("_3", "_4")}}
    assert next_step(promote) == "Promote churn_4 to serve churn now."
    spare = {"group": GROUPS[0], "action": "NONE", "target": None, "do_not_promote": [CONTAMINATED[0]]}
    assert next_step(spare) == "Nothing to switch for churn; make sure nobody promotes churn_3."


def test_a_source_that_is_down_is_said_on_the_page_and_in_the_gate() -> None:
    from pareis.compose.sources import open_sources

    sources = open_sources(redis_url="redis://127.0.0.1:1/0")
    with TestClient(create_app(sources)) as c:
        page = c.get("/incidents")
        assert page.status_code == 503 and '<h1 id="error-h">Unavailable</h1>' in page.text
        gate = c.get(f"/fragments/gate?model={quote(GROUPS[0], safe='')}")  # swapped into its page: a 200
        assert gate.status_code == 200 and 'data-decision="UNAVAILABLE"' in gate.text
        assert "a source is unavailable" in gate.text
    sources.close()


def test_serve_judges_files_at_their_newest_time_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    import pareis.web.server as server

    served: list[tuple[int, bool]] = []
    monkeypatch.setattr(server, "run_app", lambda sources, **kw: served.append((kw["clock"](), kw["clock_fixed"])))
    with socket.socket() as probe:  # a port nobody uses
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    files = ["--metadata", "deploy/demo/recorded", "--port", port]
    assert CliRunner().invoke(app, ["serve", *files]).exit_code == 0
    assert CliRunner().invoke(app, ["serve", *files, "--at", "2025-10-06T06:30:00Z"]).exit_code == 0
    assert served == [(1_759_903_200_000, True), (1_759_732_200_000, True)]  # the newest time; the one given
