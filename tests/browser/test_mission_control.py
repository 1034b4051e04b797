"""Mission Control in a real browser over the recorded demo: the incident list, the incident's graph and timeline,
the live update when the incidents role writes a new incident, the Models page — with no console error anywhere."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from pareis.web.app import create_app
from tests.support.mission import INCIDENT_STEP, REPAIR_STEP, DemoState
from tests.support.web import serving

pytestmark = pytest.mark.browser
Shot = Callable[[Page, str], Path]
LIVE_WITHIN_S = 1.0  # the goal: written → on an open Incidents page within 1 s


@pytest.fixture(scope="module")
def during() -> Iterator[tuple[DemoState, str]]:
    """The demo through its failing tests: the incident is ACTIVE."""
    state = DemoState(INCIDENT_STEP)
    with serving(create_app(state.sources, clock=state.clock, guard=state.lock)) as url:
        yield state, url


def test_the_incidents_list_shows_the_demo_incident(
    page: Page, during: tuple[DemoState, str], screenshot: Shot
) -> None:
    _, url = during
    page.goto(f"{url}/incidents")
    row = page.locator("tr.incident")
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-state", "ACTIVE")
    expect(row.locator("a.open")).to_have_text("retail.raw.transactions")
    expect(row).to_contain_text("churn_3")
    tickets = row.locator("[data-testid=tickets] .ticket")  # the demo's three tools, from the effect ledger
    expect(tickets).to_have_count(3)
    assert [tickets.nth(i).get_attribute("data-tool") for i in range(3)] == ["jira", "linear", "slack"]
    screenshot(page, "incidents")


def test_clicking_the_incident_shows_the_graph_and_the_contaminated_versions(
    page: Page, during: tuple[DemoState, str], screenshot: Shot, artifacts: Path
) -> None:
    _, url = during
    page.goto(f"{url}/incidents")
    page.locator("tr.incident a.open").click()
    page.wait_for_url("**/incidents/urn*")
    expect(page.locator("#blast")).to_have_attribute("data-rendered", "true")
    models = page.evaluate("window.pareisGraph.nodes(\"[kind = 'model']\").map(n => n.data('label')).sort()")
    assert models == ["churn_1", "churn_2", "churn_3", "ltv_1", "ltv_2", "ltv_3"]
    contaminated = page.locator("svg.timeline g[data-verdict='CONTAMINATED']")
    expect(contaminated).to_have_count(2)
    expect(contaminated.first).to_be_visible()
    labels = sorted(t.strip() for t in contaminated.locator("text").all_text_contents())
    assert labels == ["v3 CONTAMINATED", "v3 CONTAMINATED"]
    titles = sorted(t.split(" trained")[0] for t in contaminated.locator("title").all_text_contents())
    assert titles == ["churn_3", "ltv_3"]
    expect(page.locator("svg.timeline g[data-event='last-success']")).to_have_count(1)
    expect(page.locator("svg.timeline g[data-event='first-failure']")).to_have_count(1)
    expect(page.locator("table[data-testid=verdicts] .rollback")).to_have_count(2)
    expect(page.locator("[data-testid=tickets] .ticket")).to_have_count(3)
    rendered = page.evaluate("window.pareisGraphRenderedMs")
    (artifacts / "graph-first-render-ms.txt").write_text(f"{rendered:.0f}\n")
    screenshot(page, "incident")


def test_the_gate_table_says_no_go_during_the_incident(
    page: Page, during: tuple[DemoState, str], screenshot: Shot
) -> None:
    _, url = during
    page.goto(f"{url}/models")
    groups = page.locator("section.group")
    expect(groups).to_have_count(2)
    for i in range(2):
        card = groups.nth(i)
        expect(card.locator("[data-testid=gate-decision]")).to_have_text("NO-GO")
        expect(card.locator("table[data-testid=gate] tr[data-check]")).to_have_count(10)
        expect(card.locator("tr[data-check=no_active_incident] .check")).to_have_text("FAIL")
        expect(card.locator("tr[data-version] .verdict.contaminated")).to_have_count(1)
    screenshot(page, "models")


def test_protect_copies_the_dbt_yaml(page: Page, during: tuple[DemoState, str], screenshot: Shot) -> None:
    _, url = during
    page.goto(f"{url}/protect")
    expect(page.locator("table[data-testid=scores] tr[data-urn]").first).to_be_visible()
    expect(page.locator("#dbt-yaml")).to_contain_text("not_null")
    page.locator("[data-testid=copy-yaml]").click()
    expect(page.locator("[data-testid=copy-yaml]")).to_have_text("copied")
    screenshot(page, "protect")


def test_a_new_incident_appears_on_an_open_incidents_page(page: Page, screenshot: Shot, artifacts: Path) -> None:
    state = DemoState("08-d5-retrain-poisoned")  # the poisoned retrain ran; the tests have not failed yet
    with serving(create_app(state.sources, clock=state.clock, guard=state.lock)) as url:
        page.goto(f"{url}/incidents")
        expect(page.locator("[data-testid=no-incidents]")).to_be_visible()
        expect(page.locator("#live")).to_have_attribute("data-live", "open")
        state.advance(INCIDENT_STEP)  # the roles run the failing tests: the incidents role opens the incident
        written = time.monotonic()
        expect(page.locator("tr.incident[data-state=ACTIVE]")).to_have_count(1, timeout=5000)
        opened_after = time.monotonic() - written
        state.advance(REPAIR_STEP)  # the tests pass again: the incident resolves (a changed incident)
        written = time.monotonic()
        expect(page.locator("tr.incident[data-state=RESOLVED]")).to_have_count(1, timeout=5000)
        resolved_after = time.monotonic() - written
        screenshot(page, "incidents-live")
        page.goto("about:blank")  # leave before the server stops: a dropped event stream is a console error
    (artifacts / "live-update-s.txt").write_text(f"opened {opened_after:.3f}\nresolved {resolved_after:.3f}\n")
    assert opened_after <= LIVE_WITHIN_S, f"the new incident took {opened_after:.2f} s to appear"
    assert resolved_after <= LIVE_WITHIN_S, f"the resolution took {resolved_after:.2f} s to appear"
