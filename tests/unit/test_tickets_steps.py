"""A close is two recorded steps — the text as a comment, then the state change — so a retried state change never
posts the text again, whether the tool refused it or applied it and the answer was lost (issue 11, point 9)."""

from __future__ import annotations

import pytest

from pareis.store.ledger import MemoryLedger
from pareis.tickets.delivery import TicketDelivery
from pareis.tickets.port import IncidentTicket
from pareis.tickets.retry import RetryPolicy
from tests.support.fake_jira import FakeJira
from tests.support.tickets_harness import HTTP_TOOLS, tool

URN = "urn:li:incident:pareis-steps"
TICKET = IncidentTicket(URN, "stg_orders is failing", "body")


def state_change(name: str) -> tuple[int, object]:
    """The status each tool answers a failed state change with (the issue's cases), and its request."""
    if name == "slack":
        return 429, lambda r: r.path == "/api/chat.update"
    if name == "jira":
        return 503, lambda r: r.method == "POST" and r.path.endswith("/transitions")
    return 500, lambda r: b"issueUpdate" in r.body


@pytest.mark.parametrize("applied", [False, True], ids=["refused", "applied-then-failed"])
@pytest.mark.parametrize("name", HTTP_TOOLS)
def test_a_failed_state_change_is_retried_without_posting_the_close_text_again(name: str, applied: bool) -> None:
    with tool(name) as t:
        assert t.server is not None
        delivery = TicketDelivery([t.ticketer], MemoryLedger(), RetryPolicy(attempts=3, sleep=lambda _: None))
        (ref,) = [r for r in delivery.open("open/ticket", TICKET).values() if r is not None]
        status, when = state_change(name)
        if applied:
            t.server.apply_then_fail(502 if name != "slack" else 429, when=when)  # type: ignore[arg-type]
        else:
            t.server.fail_next(status, retry_after="0" if status == 429 else None, when=when)  # type: ignore[arg-type]
        delivery.close("close/ticket", URN, "Resolved: the postmortem")
        assert t.texts(ref).count("Resolved: the postmortem") == 1
        assert t.closed(ref)
        state_changes = [r for r in t.server.requests if when(r)]  # type: ignore[operator]
        # Refused: sent again. Applied: Jira and Linear read the state first and see it done; Slack rewrites it.
        assert len(state_changes) >= (1 if applied and name != "slack" else 2), "the fault was exercised"
        if name == "slack":  # chat.update rewrites the kept text: a repeat changes nothing
            assert t.server.top_level()[0]["text"].count(":white_check_mark:") == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("lost", [True, False], ids=["response-lost", "502-after-create"])
def test_a_jira_create_whose_answer_is_lost_makes_no_second_issue_while_the_index_lags(lost: bool) -> None:
    with tool("jira") as t:
        assert isinstance(t.server, FakeJira)
        t.server.search_lag = 3  # Jira Cloud's search is eventually consistent
        t.server.apply_then_fail(502, lost=lost, when=lambda r: r.method == "POST" and r.path == "/rest/api/3/issue")
        delivery = TicketDelivery([t.ticketer], MemoryLedger(), RetryPolicy(attempts=8, sleep=lambda _: None))
        (ref,) = delivery.open("open/ticket", TICKET).values()
        assert t.count() == 1, "exactly one issue"
        assert ref is not None and ref.id in t.server.issues
