"""An incident's ticket links (pareis.answers.tickets), read from the effect ledger the ticket delivery keeps: the
demo incident carries the tickets its effects role opened, in the incident list, the analysis and the dossier; the
web pages, the JSON twins, the MCP incident tools and ``pareis analyze`` show the same links; a Linear ref's label is
its identifier; a value that is not a ref is no link; and the same on the Redis ledger (integration)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from pareis.answers.dossier import dossier
from pareis.answers.incidents import analysis, incident_analyses, incident_list
from pareis.answers.sources import Sources
from pareis.answers.tickets import TicketLink, ticket_links
from pareis.contracts.ledger import ticket_key
from pareis.mcp.server import build_server
from pareis.store.ledger import MemoryLedger
from pareis.tickets.port import TicketRef
from pareis.web.app import create_app
from tests.support.mcp_client import calls, structured
from tests.support.mission import INCIDENT_STEP, DemoState
from tests.support.recorded import RAW, RECORDED, recorded_sources

URN = "urn:li:incident:pareis-test"
REFS = (
    TicketRef("jira", "OPS-7", "https://acme.atlassian.net/browse/OPS-7"),
    TicketRef("linear", "9f3c2a4e-uuid", "https://linear.app/acme/issue/ENG-42/raw-transactions-unit-price"),
    TicketRef("slack", "C0123/1759700000.000100", None, text="the first message"),
)


@pytest.fixture(scope="module")
def demo() -> DemoState:
    return DemoState(INCIDENT_STEP)


def _kept(ledger: MemoryLedger, urn: str, refs: tuple[TicketRef, ...] = REFS) -> None:
    for ref in refs:
        ledger.put(ticket_key(ref.tool, urn), ref.to_json())


def test_the_demo_incident_carries_the_tickets_its_effects_role_opened(demo: DemoState) -> None:
    sources = demo.sources
    (row,) = incident_list(sources)
    opened = {
        t.tool: ticket.ref
        for t in demo.session.ticketers
        for ticket in t.tickets
        if ticket.incident.incident_urn == row.urn
    }
    assert sorted(opened) == ["jira", "linear", "slack"]
    assert [(t.tool, t.id, t.url) for t in row.tickets] == [(r.tool, r.id, r.url) for _, r in sorted(opened.items())]
    # Every incident answer carries the same links, read or recomputed.
    assert incident_list(dataclasses.replace(sources, incidents=None)) == [row]
    assert analysis(sources, dataset=row.dataset).tickets == row.tickets
    assert [a.tickets for a in incident_analyses(sources)] == [row.tickets]
    found = dossier(sources, row.urn)
    assert found.summary.tickets == found.answer.tickets == row.tickets
    assert (
        found.to_json()["analysis"]["tickets"]
        == found.to_json()["summary"]["tickets"]
        == [t.to_json() for t in row.tickets]
    )
    # No ledger (files, GMS): no links, and nothing else changes.
    bare = dataclasses.replace(sources, tickets=None)
    assert incident_list(bare) == [dataclasses.replace(row, tickets=())]


def test_labels_urls_and_what_is_not_a_ref() -> None:
    ledger = MemoryLedger()
    _kept(ledger, URN)
    ledger.put(ticket_key("jira", "urn:li:incident:other"), "not json")
    ledger.put(ticket_key("slack", "urn:li:incident:other"), TicketRef("jira", "OPS-1").to_json())  # wrong tool
    sources = dataclasses.replace(recorded_sources(), tickets=ledger)
    links = ticket_links(sources, [URN, "urn:li:incident:other", "urn:li:incident:none"])
    assert links == {
        URN: (
            TicketLink("jira", "OPS-7", "OPS-7", "https://acme.atlassian.net/browse/OPS-7"),
            TicketLink("linear", "9f3c2a4e-uuid", "ENG-42", REFS[1].url),
            TicketLink("slack", "C0123/1759700000.000100", "C0123/1759700000.000100", None),
        ),
        "urn:li:incident:other": (),
        "urn:li:incident:none": (),
    }
    assert "first message" not in json.dumps([t.to_json() for t in links[URN]])  # the ref's text stays in the ledger


def _with_refs(base: Sources) -> tuple[Sources, str]:
    """``base`` (the recording) with its incident's tickets in a ledger, and the incident's URN."""
    ledger = MemoryLedger()
    (only,) = incident_list(base)
    _kept(ledger, only.urn, (dataclasses.replace(REFS[0], url="javascript:alert(1)"), *REFS[1:]))
    return dataclasses.replace(base, tickets=ledger), only.urn


def test_pages_json_twins_mcp_and_cli_show_the_same_links(monkeypatch: pytest.MonkeyPatch) -> None:
    sources, urn = _with_refs(recorded_sources())
    (row,) = incident_list(sources)
    want = [t.to_json() for t in row.tickets]
    assert [t["label"] for t in want] == ["OPS-7", "ENG-42", "C0123/1759700000.000100"]
    with TestClient(create_app(sources, clock=lambda: 1_760_000_000_000)) as client:
        listed = client.get("/incidents").text
        page = client.get(f"/incidents/{quote(urn, safe='')}").text
        assert [r["tickets"] for r in client.get("/api/incidents").json()] == [want]
        twin = client.get(f"/api/incidents/{quote(urn, safe='')}").json()
    assert twin["summary"]["tickets"] == twin["analysis"]["tickets"] == want
    for html in (listed, page):
        assert 'data-tool="linear" data-ticket="9f3c2a4e-uuid"' in html
        assert f'href="{REFS[1].url}"' in html and ">linear ENG-42</a>" in html
        assert 'data-tool="slack" data-ticket="C0123/1759700000.000100"' in html
        assert "javascript:" not in html  # only http(s) URLs become links
        assert 'jira <span class="mono">OPS-7</span>' in html
    server = build_server(sources)
    listed_tool, incident_tool = calls(
        server, [("list_incidents", {"state": "ALL"}), ("get_incident", {"urn": urn})], mode="auto"
    )
    assert [i["tickets"] for i in structured(listed_tool)["incidents"]] == [want]
    assert structured(incident_tool)["tickets"] == want
    shown = _cli(sources, monkeypatch, "--dataset", RAW)
    assert "linear ENG-42 https://linear.app/acme/issue/ENG-42" in " ".join(shown.split())
    assert json.loads(_cli(sources, monkeypatch, "--dataset", RAW, "--json"))["tickets"] == want


def _cli(sources: Sources, monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    from pareis import cli as pareis_cli
    from pareis.compose import sources as compose

    monkeypatch.setattr(compose, "open_sources", lambda **kwargs: sources)
    result = CliRunner().invoke(pareis_cli.app, ["analyze", "--metadata", str(RECORDED), *args], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.integration
def test_the_links_are_read_from_the_redis_ledger(redis_url: str, redis_client: Any) -> None:
    from pareis.compose.sources import open_sources
    from pareis.store.ledger_redis import RedisLedger
    from pareis.store.redis_epoch import Epoch

    base = recorded_sources()
    (only,) = incident_list(base)
    Epoch(redis_client, redis_url).open()  # as the effects role does when it starts on a fresh Redis
    ledger = RedisLedger(redis_client)  # the default prefix: what the effects role writes and the read side reads
    for ref in REFS:
        ledger.put(ticket_key(ref.tool, only.urn), ref.to_json())
    with open_sources(redis_url=redis_url) as live:
        assert live.tickets is not None
        assert ticket_links(live, [only.urn, "urn:li:incident:none"]) == ticket_links(
            _memory_copy(base, only.urn), [only.urn, "urn:li:incident:none"]
        )
        assert [t.label for t in ticket_links(live, [only.urn])[only.urn]] == ["OPS-7", "ENG-42", REFS[2].id]


def _memory_copy(base: Sources, urn: str) -> Sources:
    ledger = MemoryLedger()
    _kept(ledger, urn)
    return dataclasses.replace(base, tickets=ledger)


def test_the_pages_escape_what_the_ledger_says() -> None:
    from pareis.web.present import tickets

    shown = str(tickets((TicketLink("jira", '"><script>', "<b>", 'https://a"b'),)))
    assert "<script>" not in shown and "<b>" not in shown and 'href="https://a&#34;b"' in shown
    assert str(tickets(())) == "—"
