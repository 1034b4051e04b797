"""What is particular to each tool: Slack's history pagination and thread, Jira's labels, ADF and transitions,
Linear's client-chosen issue id; and building the configured ticketers from settings."""

from __future__ import annotations

import json

import pytest
from pydantic import SecretStr

from pareis.config import JiraSettings, LinearSettings, SlackSettings, TicketSettings
from pareis.core.impact import Severity
from pareis.errors import Fatal, Retriable
from pareis.tickets.factory import ticketers_from_settings
from pareis.tickets.failures import Rejected
from pareis.tickets.jira import JiraTicketer
from pareis.tickets.linear import LinearTicketer
from pareis.tickets.port import IncidentTicket
from pareis.tickets.slack import EVENT_TYPE, SlackTicketer
from tests.support.fake_jira import FakeJira
from tests.support.fake_linear import FakeLinear
from tests.support.fake_slack import CHANNEL_ID, FakeSlack, ManualClock
from tests.support.tickets_harness import adf_text, tool


def incident(n: int = 1, severity: Severity = Severity.HIGH) -> IncidentTicket:
    return IncidentTicket(
        f"urn:li:incident:pareis-{n:04d}", f"dataset {n} failing", "Line one\nline two\n\nSecond paragraph.", severity
    )


def test_slack_history_answers_once_a_minute_15_messages_a_page_and_a_scan_goes_on_where_it_stopped() -> None:
    """Slack's limits for apps outside the Marketplace: a lookup that needs two pages takes two minutes, and a
    scan refused on its second page resumes there (it does not start over, which would never end)."""
    clock = ManualClock()
    with FakeSlack(clock=clock) as fake:
        settings = SlackSettings(token=SecretStr(fake.token), channel=CHANNEL_ID, base_url=fake.url + "/api/")
        slack = SlackTicketer.from_settings(settings, page_size=200, clock=clock)
        mark = slack.mark()
        first = slack.open(incident(1))
        for n in range(2, 21):
            slack.open(incident(n))

        with pytest.raises(Retriable) as caught:
            slack.find(incident(1).incident_urn, mark)  # newest first: the first ticket is on page 2
        assert caught.value.retry_after is not None and 0 < caught.value.retry_after <= 60
        clock.advance(61)
        assert slack.find(incident(1).incident_urn, mark) == first

        pages = fake.calls("conversations.history")
        assert [r.form().get("limit") for r in pages] == ["200"] * 3, "the app asks for 200"
        assert [r.form().get("cursor") for r in pages] == [None, "15", "15"], "15 a page; resumed on page 2"


def test_slack_close_keeps_the_incident_in_the_metadata_without_reading_the_message() -> None:
    with tool("slack") as slack:
        ref = slack.ticketer.open(incident())
        slack.make().close(ref)  # another process, the ref from the ledger (its text kept)
        fake = slack.server
        assert isinstance(fake, FakeSlack)
        (parent,) = fake.top_level()
        closed_once = dict(parent)
        slack.ticketer.close(ref)  # a repeat (its answer was lost): the same rewrite
        reads = fake.calls("conversations.replies") + fake.calls("conversations.history")

    assert parent["metadata"]["event_payload"] == {
        "incident_urn": incident().incident_urn,
        "severity": "HIGH",
        "status": "resolved",
    }
    assert parent["text"].startswith(":white_check_mark: *Resolved* — :red_circle: *[HIGH] dataset 1 failing*")
    assert parent["text"] == closed_once["text"], "a repeated close changes nothing"
    assert reads == [], "closing reads nothing"


def test_slack_posts_metadata_and_keeps_updates_in_the_thread() -> None:
    with tool("slack") as slack:
        ref = slack.ticketer.open(incident())
        slack.ticketer.comment(ref, "update")
        fake = slack.server
        assert isinstance(fake, FakeSlack)
        post = json.loads(fake.calls("chat.postMessage")[0].body)

    assert post["metadata"] == {
        "event_type": EVENT_TYPE,
        "event_payload": {"incident_urn": incident().incident_urn, "severity": "HIGH", "status": "open"},
    }
    assert "pareis incident: urn:li:incident:pareis-0001" in post["text"]
    assert slack.count() == 1
    assert slack.texts(ref) == ["update"]


def test_jira_issue_carries_label_adf_description_and_marker() -> None:
    with tool("jira") as jira:
        ref = jira.ticketer.open(incident())
        fake = jira.server
        assert isinstance(fake, FakeJira)
        fields = fake.issues[ref.id]["fields"]

    assert fields["summary"] == "[HIGH] dataset 1 failing"
    assert fields["labels"] == ["pareis", JiraTicketer.label(incident().incident_urn)]
    assert adf_text(fields["description"]) == (
        "Line one\nline two\n\nSecond paragraph.\n\npareis incident: urn:li:incident:pareis-0001"
    )
    assert ref.url is not None and ref.url.endswith("/browse/PAR-1")


def test_jira_done_transition_matches_name_or_target_case_insensitively() -> None:
    with tool("jira") as jira:
        ticketer = jira.make(done_transition="DONE")
        ref = ticketer.open(incident())
        ticketer.close(ref)

        assert jira.closed(ref)


def test_jira_without_the_configured_transition_is_poison_naming_the_choices() -> None:
    with tool("jira") as jira:
        ticketer = jira.make(done_transition="Closed")
        ref = ticketer.open(incident())

        with pytest.raises(Rejected) as caught:
            ticketer.close(ref)

        assert "['Done', 'Start progress']" in caught.value.body
        assert not jira.closed(ref)


def test_linear_issue_id_is_a_stable_uuid4_per_incident() -> None:
    a = LinearTicketer.issue_id("urn:li:incident:pareis-a")

    assert a == LinearTicketer.issue_id("urn:li:incident:pareis-a")
    assert a != LinearTicketer.issue_id("urn:li:incident:pareis-b")
    assert a[14] == "4" and a[19] in "89ab"


def test_linear_a_lost_create_answer_never_makes_a_second_issue() -> None:
    with tool("linear") as linear:
        fake = linear.server
        assert isinstance(fake, FakeLinear)
        fake.apply_then_fail(502, lost=True, when=lambda r: b"PareisIssueCreate" in r.body)
        with pytest.raises(Retriable):
            linear.ticketer.open(incident())

        again = linear.make().open(incident())  # the same id again: refused as a duplicate, then found

        assert linear.count() == 1
        assert again.id == LinearTicketer.issue_id(incident().incident_urn)
        creates = [r for r in fake.requests if b"PareisIssueCreate" in r.body]
        assert len(creates) == 2


def test_linear_priority_follows_severity() -> None:
    with tool("linear") as linear:
        refs = {s: linear.ticketer.open(incident(i, s)) for i, s in enumerate(Severity)}
        fake = linear.server
        assert isinstance(fake, FakeLinear)

        assert {s: fake.issues[r.id]["priority"] for s, r in refs.items()} == {
            Severity.NONE: 0,
            Severity.LOW: 4,
            Severity.MEDIUM: 3,
            Severity.HIGH: 2,
        }


def test_only_configured_tools_are_built() -> None:
    settings = TicketSettings(
        jira=JiraSettings(url="https://acme.atlassian.net", email="e", token=SecretStr("t"), project="PAR"),
        linear=LinearSettings(api_key=SecretStr("k"), team_id="team"),
    )

    assert [t.tool for t in ticketers_from_settings(settings)] == ["jira", "linear"]
    assert ticketers_from_settings(TicketSettings()) == []


@pytest.mark.parametrize(
    "settings",
    [
        TicketSettings(slack=SlackSettings(channel=CHANNEL_ID)),
        TicketSettings(jira=JiraSettings(url="https://acme.atlassian.net")),
        TicketSettings(linear=LinearSettings(team_id="team")),
    ],
)
def test_a_half_configured_tool_is_fatal(settings: TicketSettings) -> None:
    with pytest.raises(Fatal):
        ticketers_from_settings(settings)
