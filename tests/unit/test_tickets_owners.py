"""Owners in the tickets (DESIGN §3), against the local fake APIs with the documented endpoints: Slack mentions
through ``users.lookupByEmail`` (cached; unresolved owners as text), Jira assignee and watchers, Linear assignee
and subscribers, when ``tickets.<tool>.users`` maps them."""

from __future__ import annotations

from typing import TypeVar

from pareis.core.impact import Severity
from pareis.core.owners import Owner
from pareis.roles.messages import TicketOpen, decode_effect, encode
from pareis.tickets.port import IncidentTicket
from tests.support.fake_jira import FakeJira
from tests.support.fake_linear import FakeLinear
from tests.support.fake_slack import FakeSlack
from tests.support.tickets_harness import Tool, tool

T = TypeVar("T")
JDOE = Owner("urn:li:corpuser:jdoe@example.com", "jdoe@example.com")
ALICE = Owner("urn:li:corpuser:alice", "alice@example.com")
BOB = Owner("urn:li:corpuser:bob", "bob@example.com")
TEAM = Owner("urn:li:corpGroup:ml-platform")


def server(t: Tool, kind: type[T]) -> T:
    assert isinstance(t.server, kind)
    return t.server


def ticket(n: int, *owners: Owner) -> IncidentTicket:
    return IncidentTicket(
        f"urn:li:incident:pareis-{n:032x}", "Incident on orders", "what happened", Severity.HIGH, None, owners
    )


def test_the_owners_travel_in_the_ticket_open_effect() -> None:
    effect = TicketOpen("e/ticket", ticket(1, JDOE, TEAM))
    assert decode_effect(encode(effect)) == effect
    assert b"owners" not in encode(TicketOpen("e/ticket", ticket(1))), "no owners: the same bytes as before"


def test_slack_mentions_known_owners_and_writes_the_others_as_text() -> None:
    with tool("slack") as slack:
        fake = server(slack, FakeSlack)
        fake.users = {"jdoe@example.com": "U0JDOE", "alice@example.com": "U0ALICE"}
        ticketer = slack.make()
        ticketer.open(ticket(1, JDOE, BOB, TEAM, Owner("urn:li:corpuser:carol")))
        text = fake.top_level()[0]["text"]
        assert "Owners: <@U0JDOE>, bob@example.com, ml-platform, carol" in text
        ticketer.open(ticket(2, JDOE, ALICE))
        assert "Owners: <@U0JDOE>, <@U0ALICE>" in fake.top_level()[1]["text"]
        asked = [r.form().get("email") or r.query.get("email") for r in fake.calls("users.lookupByEmail")]
        assert sorted(asked) == ["alice@example.com", "bob@example.com", "jdoe@example.com"], "each email asked once"


def test_slack_without_the_email_scope_still_opens_the_ticket() -> None:
    with tool("slack") as slack:
        server(slack, FakeSlack).scopes.discard("users:read.email")
        slack.make().open(ticket(1, JDOE))
        assert "Owners: jdoe@example.com" in server(slack, FakeSlack).top_level()[0]["text"]


def test_jira_assigns_the_first_mapped_owner_and_makes_the_others_watchers() -> None:
    with tool("jira") as jira:
        fake = server(jira, FakeJira)
        fake.accounts = {"acc-jdoe", "acc-alice", "acc-team"}
        users = {JDOE.email: "acc-jdoe", ALICE.urn: "acc-alice", "ml-platform": "acc-team"}
        ticketer = jira.make(users=users)
        ref = ticketer.open(ticket(1, JDOE, BOB, ALICE, TEAM))
        issue = fake.issues[ref.id]
        assert issue["fields"]["assignee"] == {"accountId": "acc-jdoe"}
        assert issue["watchers"] == ["acc-alice", "acc-team"]
        assert ticketer.open(ticket(1, JDOE, BOB, ALICE, TEAM)) == ref and len(fake.issues) == 1
        assert issue["watchers"] == ["acc-alice", "acc-team"], "watching twice is watching once"


def test_jira_without_a_mapping_assigns_nobody() -> None:
    with tool("jira") as jira:
        ref = jira.make().open(ticket(1, JDOE))
        assert "assignee" not in server(jira, FakeJira).issues[ref.id]["fields"]
        assert not any(r.path.endswith("/watchers") for r in server(jira, FakeJira).requests)


def test_linear_sets_the_assignee_and_subscribers() -> None:
    with tool("linear") as linear:
        fake = server(linear, FakeLinear)
        fake.users = {"u-jdoe", "u-alice"}
        ref = linear.make(users={JDOE.urn: "u-jdoe", ALICE.email: "u-alice"}).open(ticket(1, JDOE, BOB, ALICE))
        issue = fake.issues[ref.id]
        assert issue["assignee"] == {"id": "u-jdoe"} and issue["subscriberIds"] == ["u-alice"]
