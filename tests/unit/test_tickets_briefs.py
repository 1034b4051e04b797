"""Tickets lead with the decision (DESIGN §4): Slack's Block Kit message, Jira's ADF description and Linear's
Markdown description, each rendered from the incident's brief by the production ticketer and checked against the
tool's documented format by its fake server (Slack: block types and limits; Jira: the ADF document structure;
Linear: its GraphQL schema) and here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import quote

from pareis.config import DatahubSettings
from pareis.core.brief import DECISION, MAX_LISTED, Brief, Span, brief
from pareis.core.incident_text import markdown
from pareis.core.owners import IncidentOwners, Owner
from pareis.core.serving import Action, Recommendation, ServingVersion, ServingVia
from pareis.datahub.writes.incident_writes import incident_link
from pareis.roles.incidents import ticket_effect
from pareis.roles.messages import TicketClose, TicketOpen
from pareis.tickets import slack_blocks
from pareis.tickets.jira_adf import brief_doc
from pareis.tickets.port import IncidentTicket, TicketRef, marker
from tests.support.fake_jira import adf_problem
from tests.support.fake_slack import CHANNEL_ID, block_problem
from tests.support.tickets_harness import tool
from tests.support.writer_scenario import CHURN_V3, story

UI = "https://datahub.example.com"
MC = "https://pareis.example.com/incidents/x"
FACTS = replace(
    story().open.facts,
    owners=IncidentOwners(
        dataset=(Owner("urn:li:corpuser:alice", "alice@example.com"), Owner("urn:li:corpGroup:data-eng")),
        models=((CHURN_V3, (Owner("urn:li:corpuser:bob", "bob@example.com"),)),),
    ),
)
LINKS = [Span("Open in DataHub", UI + "/dataset/x/Incidents"), Span("Open in Mission Control", MC)]
BRIEF = brief(FACTS, ui_url=UI, links=LINKS)


def ticket(found: Brief | None = BRIEF) -> IncidentTicket:
    body = markdown(found) if found is not None else "3 models trained on poisoned data."
    url = LINKS[0].url
    return IncidentTicket(FACTS.urn, BRIEF.headline, body, FACTS.severity, url, FACTS.owners.everyone, found)


def huge() -> Brief:
    """A brief past every limit: many groups, each with a long reason."""
    first = next(d for d in FACTS.decisions if d.contaminated)
    serving = (ServingVersion(first.contaminated[0], (ServingVia(),)),)
    many = tuple(
        Recommendation(f"{first.group}-{i:03d}", Action.RETRAIN, None, serving, False, (), (), "r" * 400)
        for i in range(3 * MAX_LISTED)
    )
    return brief(replace(FACTS, decisions=many), ui_url=UI, links=LINKS)


# --- Slack ----------------------------------------------------------------------------------------------------
def test_slack_opens_with_a_header_holding_the_decision_then_a_section_per_group() -> None:
    with tool("slack") as slack:
        fake = slack.server
        fake.users.update({"alice@example.com": "UALICE01"})  # type: ignore[union-attr]
        ref = slack.ticketer.open(ticket())
        (message,) = fake.top_level()  # type: ignore[union-attr]
    blocks: list[dict[str, Any]] = message["blocks"]
    assert block_problem(blocks) is None and len(blocks) < 50
    header = blocks[0]
    assert header["type"] == "header"
    assert header["text"]["text"] == f":red_circle: [{FACTS.severity}] {BRIEF.headline}"[:150]
    decisions = BRIEF.section(DECISION).lines  # type: ignore[union-attr]
    group_sections = blocks[1 : 1 + len(decisions)]
    assert [b["type"] for b in group_sections] == ["section"] * len(decisions)
    assert group_sections[0]["text"]["text"].startswith(f"*<{UI}/mlModelGroup/")
    assert "*ROLL BACK to* *<" in group_sections[0]["text"]["text"]
    titles = [b["text"]["text"].split("\n")[0] for b in blocks if b["type"] == "section"][len(decisions) :]
    assert titles[:2] == ["*Retrain*", "*Owners*"]
    owners = next(
        b["text"]["text"] for b in blocks if b["type"] == "section" and b["text"]["text"].startswith("*Owners*")
    )
    assert "<@UALICE01>" in owners and "bob@example.com" in owners, "mentions where Slack knows the owner"
    actions = next(b for b in blocks if b["type"] == "actions")
    assert [(e["text"]["text"], e["url"]) for e in actions["elements"]] == [(s.text, s.url) for s in LINKS]
    assert blocks[-1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": f"_{marker(FACTS.urn)}_"}]}
    # The text fallback: severity and title first, the decision, the marker last (the close reads it back).
    text = message["text"]
    assert text.splitlines()[0] == f":red_circle: *[{FACTS.severity}] {BRIEF.headline}*"
    assert text.splitlines()[2] == "Decision:" and text.splitlines()[-1] == f"_{marker(FACTS.urn)}_"
    # The ref carries the permalink and what the close rewrites.
    assert ref.url == f"https://pareis-test.slack.com/archives/{CHANNEL_ID}/p{message['ts'].replace('.', '')}"
    assert ref.text == text
    assert len(ref.to_json()) < 2 * len(text), "the ledger keeps the text, not the blocks (the read side lists refs)"


def test_slack_keeps_every_limit_for_a_huge_incident() -> None:
    blocks = slack_blocks.blocks(ticket(huge()), {})
    assert blocks is not None and block_problem(blocks) is None
    assert len(blocks) <= slack_blocks.MAX_BLOCKS - 1, "one block kept for the close"
    assert all(len(b["text"]["text"]) <= 3000 for b in blocks if b["type"] == "section")
    assert block_problem(slack_blocks.resolved(blocks)) is None


def test_slack_mrkdwn_escapes_control_characters_and_links_names() -> None:
    line = (Span("a<b>&c", strong=True), Span(" → "), Span("churn_2", "https://dh/x|y>"))
    assert slack_blocks.mrkdwn(line) == "*a&lt;b&gt;&amp;c* → <https://dh/x%7Cy%3E|churn_2>"


def test_slack_close_shows_the_message_as_of_the_heal_under_resolved_and_repeats_the_same_request() -> None:
    healed = brief(story().resolve.facts, ui_url=UI, links=LINKS)
    final = replace(ticket(), title=healed.headline, body=markdown(healed), brief=healed)
    with tool("slack") as slack:
        fake = slack.server
        ref = slack.ticketer.open(ticket())
        slack.make().close(ref, final)
        slack.make().close(ref, final)
        (message,) = fake.top_level()  # type: ignore[union-attr]
        updates = fake.calls("chat.update")  # type: ignore[union-attr]
    assert block_problem(message["blocks"]) is None
    assert message["blocks"][0]["text"]["text"].startswith(":white_check_mark: *Resolved*")
    assert message["blocks"][1]["type"] == "header" and message["blocks"][1]["text"]["text"].endswith(" healed")
    assert message["text"].startswith(":white_check_mark: *Resolved* — ")
    assert message["metadata"]["event_payload"]["status"] == "resolved"
    assert len(updates) == 2 and updates[0].body == updates[1].body


def test_slack_close_without_the_resolved_ticket_keeps_the_blocks_and_marks_the_text() -> None:
    """A close effect written before closes carried the ticket: Slack keeps the message's blocks."""
    with tool("slack") as slack:
        ref = slack.ticketer.open(ticket())
        (message,) = slack.server.top_level()  # type: ignore[union-attr]
        opened = list(message["blocks"])
        slack.make().close(ref)
        (update,) = slack.server.calls("chat.update")  # type: ignore[union-attr]
    assert "blocks" not in update.json() and message["blocks"] == opened
    assert message["text"].startswith(":white_check_mark: *Resolved* — ")


def test_a_ticket_without_a_brief_is_text_only_in_slack() -> None:
    with tool("slack") as slack:
        slack.ticketer.open(ticket(None))
        (message,) = slack.server.top_level()  # type: ignore[union-attr]
    assert "blocks" not in message
    assert "3 models trained on poisoned data." in message["text"]


def test_a_slack_ticket_found_after_a_lost_answer_has_its_permalink() -> None:
    with tool("slack") as slack:
        mark = slack.ticketer.mark()
        opened = slack.ticketer.open(ticket())
        found = slack.make().find(FACTS.urn, mark)
    assert found == opened and found is not None
    assert found.url == opened.url and found.url is not None and found.text == opened.text


# --- Jira -----------------------------------------------------------------------------------------------------
def test_jira_describes_the_incident_in_adf_decision_first() -> None:
    with tool("jira") as jira:
        ref = jira.ticketer.open(ticket())
        issue = jira.server.issues[ref.id]  # type: ignore[union-attr]
    doc = issue["fields"]["description"]
    assert adf_problem(doc) is None
    assert doc["type"] == "doc" and doc["version"] == 1
    first, listed = doc["content"][0], doc["content"][1]
    assert first == {"type": "heading", "attrs": {"level": 3}, "content": [{"type": "text", "text": "Decision"}]}
    assert listed["type"] == "bulletList" and listed["content"][0]["type"] == "listItem"
    (paragraph,) = listed["content"][0]["content"]
    group = paragraph["content"][0]
    assert group["text"] == "churn" and {m["type"] for m in group["marks"]} == {"strong", "link"}
    headings = [n["content"][0]["text"] for n in doc["content"] if n["type"] == "heading"]
    assert headings == [s.title for s in BRIEF.sections]
    links = doc["content"][-2]["content"]
    assert [(n["text"], n["marks"][0]["attrs"]["href"]) for n in links if n["text"] != " · "] == [
        (s.text, s.url) for s in LINKS
    ]
    assert doc["content"][-1]["content"][0] == {"type": "text", "text": marker(FACTS.urn), "marks": [{"type": "em"}]}
    assert issue["fields"]["summary"] == f"[{FACTS.severity}] {BRIEF.headline}"


def test_jira_adf_of_a_huge_incident_is_a_valid_document() -> None:
    assert adf_problem(brief_doc(huge(), footer="x")) is None


def test_the_fake_jira_refuses_what_adf_does_not_allow() -> None:
    assert adf_problem({"type": "doc", "version": 1, "content": [{"type": "listItem", "content": []}]}) is not None
    assert adf_problem({"type": "doc", "version": 1, "content": [{"type": "heading", "content": []}]}) is not None
    bad_link = {"type": "text", "text": "x", "marks": [{"type": "link"}]}
    assert adf_problem({"type": "doc", "version": 1, "content": [{"type": "paragraph", "content": [bad_link]}]})


# --- Linear ---------------------------------------------------------------------------------------------------
def test_linear_describes_the_incident_in_markdown_decision_first() -> None:
    with tool("linear") as linear:
        ref = linear.ticketer.open(ticket())
        issue = linear.server.issues[ref.id]  # type: ignore[union-attr]
    text = issue["description"]
    assert text.startswith(f"### Decision\n\n- **[churn]({UI}/mlModelGroup/")
    assert f"[Open in Mission Control]({MC})" in text
    assert text.endswith(f"\n\n_{marker(FACTS.urn)}_")
    assert text.count("Open in DataHub") == 1, "the link once, from the brief"
    assert issue["title"] == f"[{FACTS.severity}] {BRIEF.headline}"


def test_every_tool_takes_the_same_ticket_and_leads_with_the_decision() -> None:
    """The decision's first words are the first content each tool shows."""
    first = BRIEF.section(DECISION).lines[0]  # type: ignore[union-attr]
    with tool("slack") as slack, tool("jira") as jira, tool("linear") as linear:
        refs: dict[str, TicketRef] = {t.name: t.ticketer.open(ticket()) for t in (slack, jira, linear)}
        slack_first = slack.server.top_level()[0]["blocks"][1]["text"]["text"]  # type: ignore[union-attr]
        jira_first = jira.server.issues[refs["jira"].id]["fields"]["description"]["content"][1]  # type: ignore[union-attr]
        linear_first = linear.server.issues[refs["linear"].id]["description"].split("\n")[2]  # type: ignore[union-attr]
    assert first[0].text in slack_first and "ROLL BACK" in slack_first
    assert jira_first["content"][0]["content"][0]["content"][0]["text"] == first[0].text
    assert linear_first.startswith("- **[churn]") and "ROLL BACK" in linear_first


# --- the open effect ------------------------------------------------------------------------------------------
def test_the_open_effect_carries_the_brief_linking_the_incident_in_datahub_and_mission_control() -> None:
    opened = story().open
    effect = ticket_effect(opened, DatahubSettings(ui_url=UI), "https://pareis.example.com/")
    assert isinstance(effect, TicketOpen) and effect.ticket.brief is not None
    page = "https://pareis.example.com/incidents/" + quote(opened.facts.urn, safe="")
    datahub = incident_link(opened.facts, DatahubSettings(ui_url=UI))
    assert [(s.text, s.url) for s in effect.ticket.brief.links] == [
        ("Open in DataHub", datahub),
        ("Open in Mission Control", page),
    ]
    assert effect.ticket.url == datahub and effect.at_ms == opened.at_ms
    assert effect.ticket.body == markdown(effect.ticket.brief) and effect.ticket.title == opened.title
    bare = ticket_effect(opened, DatahubSettings())
    assert isinstance(bare, TicketOpen) and bare.ticket.brief is not None
    assert bare.ticket.brief.links == () and bare.ticket.url is None
    assert bare.ticket.body == opened.description, "without links, the intent's own description"


def test_the_close_effect_carries_the_ticket_as_of_the_heal() -> None:
    resolved = story().resolve
    effect = ticket_effect(resolved, DatahubSettings(ui_url=UI), "https://pareis.example.com")
    assert isinstance(effect, TicketClose) and effect.ticket is not None and effect.ticket.brief is not None
    assert effect.ticket.brief.state == "RESOLVED" and effect.ticket.title == resolved.title
    assert effect.text.startswith("# Postmortem: ") and effect.at_ms == resolved.at_ms


def test_the_ticket_links_the_intents_brief_instead_of_analysing_the_facts_again(monkeypatch: Any) -> None:
    import pareis.roles.incidents as role

    told = story()
    expected = {
        name: ticket_effect(intent, DatahubSettings(ui_url=UI), "https://pareis.example.com")
        for name, intent in (("open", told.open), ("resolve", told.resolve))
    }
    without = {name: replace(intent, brief=None) for name, intent in (("open", told.open), ("resolve", told.resolve))}
    assert all(i.brief is not None for i in (told.open, told.resolve)), "the state machine keeps each intent's brief"

    def analysed(*_: Any, **__: Any) -> Brief:
        raise AssertionError("the brief was computed again")

    monkeypatch.setattr(role, "brief", analysed)
    for name, intent in (("open", told.open), ("resolve", told.resolve)):
        effect = ticket_effect(intent, DatahubSettings(ui_url=UI), "https://pareis.example.com")
        assert effect == expected[name]
        assert effect.ticket is not None and expected[name].ticket is not None  # type: ignore[union-attr]
        assert effect.ticket.brief.to_json() == expected[name].ticket.brief.to_json()  # type: ignore[union-attr]
    monkeypatch.undo()
    for name, intent in without.items():  # an intent read back without its brief: analysed, the same ticket
        assert ticket_effect(intent, DatahubSettings(ui_url=UI), "https://pareis.example.com") == expected[name]
