"""A close is two recorded steps — the text as a comment, then the state change — so a retried state change never
posts the text again, whether the tool refused it or applied it and the answer was lost (issue 11, point 9)."""

from __future__ import annotations

import pytest

from pareis.store.ledger import MemoryLedger
from pareis.tickets.delivery import TicketDelivery
from pareis.tickets.port import IncidentTicket
from pareis.tickets.retry import RetryPolicy
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
        assert len(state_changes) >= 2 if not applied else len(state_changes) == 1, "the fault was exercised"
