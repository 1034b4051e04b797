"""The ticketer contract, run against every implementation: in-memory, and Slack, Jira and Linear through the
production clients talking to their fake servers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pareis.core.impact import Severity
from pareis.errors import Poison
from pareis.tickets.port import IncidentTicket, Ticketer, TicketRef
from tests.support.tickets_harness import TOOLS, Tool, tool

URN = "urn:li:incident:pareis-7f3a9c"
OTHER = "urn:li:incident:pareis-0b1d2e"


def incident(urn: str = URN, title: str = "orders.amount is NULL") -> IncidentTicket:
    return IncidentTicket(
        incident_urn=urn,
        title=title,
        body="3 models trained on poisoned data.\n\nRoll back churn to v12.",
        severity=Severity.HIGH,
        url="https://datahub.example.com/incident/" + urn,
    )


@pytest.fixture(params=TOOLS)
def subject(request: pytest.FixtureRequest) -> Iterator[Tool]:
    with tool(request.param) as t:
        yield t


def test_it_satisfies_the_protocol(subject: Tool) -> None:
    assert isinstance(subject.ticketer, Ticketer)
    assert subject.ticketer.tool == subject.name


def test_open_creates_one_ticket_that_find_after_the_mark_returns(subject: Tool) -> None:
    mark = subject.ticketer.mark()
    assert subject.ticketer.find(URN, mark) is None
    subject.pass_minute()

    ref = subject.ticketer.open(incident())

    assert ref.tool == subject.name
    assert subject.count() == 1
    assert subject.ticketer.find(URN, mark) == ref
    assert subject.closed(ref) is False


def test_a_fresh_ticketer_finds_the_ticket_from_the_mark_alone(subject: Tool) -> None:
    """What the delivery does after a create whose answer was lost: only the mark recorded before it is known."""
    mark = subject.ticketer.mark()
    ref = subject.ticketer.open(incident())

    restarted = subject.make()

    assert restarted.find(URN, mark) == ref
    assert subject.count() == 1


def test_each_incident_has_its_own_ticket(subject: Tool) -> None:
    mark = subject.ticketer.mark()
    one = subject.ticketer.open(incident(URN))
    two = subject.ticketer.open(incident(OTHER, "customers.email duplicated"))

    assert one != two
    assert subject.count() == 2
    assert subject.ticketer.find(URN, mark) == one
    subject.pass_minute()
    assert subject.ticketer.find(OTHER, mark) == two


def test_comment_adds_text_carrying_its_effect_id(subject: Tool) -> None:
    ref = subject.ticketer.open(incident())
    mark = subject.ticketer.mark(ref)

    subject.ticketer.comment(ref, "A second assertion is failing: not_null(orders.customer_id).", "effect-2")
    subject.ticketer.comment(ref, "Blast radius grew to 4 models.", "effect-3")

    assert subject.texts(ref) == [
        "A second assertion is failing: not_null(orders.customer_id).",
        "Blast radius grew to 4 models.",
    ]
    assert subject.make().posted(ref, "effect-3", mark) is True
    subject.pass_minute()
    assert subject.make().posted(ref, "effect-4", mark) is False
    assert subject.closed(ref) is False


def test_close_closes_once(subject: Tool) -> None:
    ref = subject.ticketer.open(incident())

    subject.ticketer.close(ref)
    subject.ticketer.close(ref)

    assert subject.closed(ref) is True
    assert subject.texts(ref) == []


def test_closing_one_incident_leaves_the_other_open(subject: Tool) -> None:
    one = subject.ticketer.open(incident(URN))
    two = subject.ticketer.open(incident(OTHER, "customers.email duplicated"))

    subject.ticketer.close(one)

    assert subject.closed(one) is True
    assert subject.closed(two) is False


def test_a_ref_from_another_tool_is_poison(subject: Tool) -> None:
    foreign = TicketRef("elsewhere", "X-1")

    with pytest.raises(Poison):
        subject.ticketer.comment(foreign, "text", "effect-1")
