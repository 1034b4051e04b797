"""A hung or slow ticket tool cannot hold the effects role past its poll interval, and two consumers never deliver
the same effect at once (issue 11, point 10): every call is bounded to a few seconds, every batch by a delivery
budget (past it: Retriable, and the redo skips what was delivered), and delivery claims the effect first."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from pydantic import SecretStr

from pareis.config import JiraSettings, LinearSettings, SlackSettings
from pareis.contracts.records import Message
from pareis.errors import Retriable
from pareis.roles.effects import EffectsHandler
from pareis.roles.messages import TicketComment
from pareis.store.ledger import MemoryLedger
from pareis.tickets.delivery import TicketDelivery
from pareis.tickets.jira import JiraTicketer
from pareis.tickets.linear import LinearTicketer
from pareis.tickets.memory import MemoryTicketer
from pareis.tickets.port import IncidentTicket, Ticketer, TicketRef
from pareis.tickets.retry import RetryPolicy
from pareis.tickets.slack import SlackTicketer
from tests.support.fake_linear import TEAM_ID
from tests.support.fake_slack import CHANNEL_ID
from tests.support.tickets_harness import HTTP_TOOLS, tool

URN = "urn:li:incident:pareis-bounds"
TICKET = IncidentTicket(URN, "stg_orders is failing", "body")


def default_ticketer(name: str, url: str, credential: str) -> Ticketer:
    """The ticketer as the effects role builds it from settings (its own HTTP client, default timeouts)."""
    if name == "slack":
        return SlackTicketer.from_settings(
            SlackSettings(token=SecretStr(credential), channel=CHANNEL_ID, base_url=url + "/api/")
        )
    if name == "jira":
        settings = JiraSettings(url=url, email="bot@example.com", token=SecretStr("jira-token"), project="PAR")
        return JiraTicketer.from_settings(settings)
    return LinearTicketer.from_settings(
        LinearSettings(api_key=SecretStr(credential), team_id=TEAM_ID, url=url + "/graphql")
    )


@pytest.mark.parametrize("name", HTTP_TOOLS)
def test_a_hung_tool_call_ends_within_seconds_as_retriable(name: str) -> None:
    with tool(name) as t:
        ref = t.ticketer.open(TICKET)
        assert t.server is not None
        credential = getattr(t.server, "token", None) or getattr(t.server, "api_key", "")
        fresh = default_ticketer(name, t.server.url, credential)
        t.server.hang_next(20)
        started = time.monotonic()
        with pytest.raises(Retriable):
            fresh.comment(ref, "an update")
        assert time.monotonic() - started < 10, "bounded by the per-call timeout, not the server"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Slow(MemoryTicketer):
    """A tool whose every comment takes ``step_s`` of the clock."""

    def __init__(self, clock: Clock, step_s: float) -> None:
        super().__init__()
        self.clock, self.step_s = clock, step_s

    def comment(self, ticket: TicketRef, text: str, effect_id: str | None = None) -> None:
        self.clock.now += self.step_s
        super().comment(ticket, text, effect_id)


def comments(n: int) -> list[Message[TicketComment]]:
    return [
        Message("pareis.effects.v1", 0, i, None, TicketComment(f"e{i}/ticket", URN, f"update {i}")) for i in range(n)
    ]


def test_past_the_delivery_budget_the_batch_is_retriable_and_its_redo_skips_what_was_delivered() -> None:
    clock = Clock()
    slow = Slow(clock, step_s=20)
    ledger = MemoryLedger()
    tickets = TicketDelivery([slow], ledger, RetryPolicy(clock=clock, sleep=lambda s: None))
    tickets.open("open/ticket", TICKET)
    handler = EffectsHandler(tickets, ledger, None, budget_s=50, clock=clock)
    batch = comments(5)
    with pytest.raises(Retriable, match="delivery budget of 50s spent after 3 of 5"):
        handler(batch)
    handler(batch)  # the redo, after the runtime's back-off
    (ticket,) = slow.tickets
    assert ticket.comments == [f"update {i}" for i in range(5)], "each comment once, in order"


def test_in_place_retries_never_wait_past_the_budget() -> None:
    clock = Clock()
    waited: list[float] = []
    policy = RetryPolicy(attempts=5, initial_s=10, clock=clock, sleep=waited.append)

    def failing() -> None:
        raise Retriable("502")

    with pytest.raises(Retriable):
        policy.call(failing, deadline=15.0)
    assert waited == [pytest.approx(10, rel=0.1)], "the second wait would pass the deadline: re-raised instead"


class Busy:
    """A slow tool (delegating to ``inner``): the other consumer arrives while this one is still delivering."""

    tool = "memory"

    def __init__(self, inner: MemoryTicketer) -> None:
        self.inner = inner

    def open(self, incident: IncidentTicket) -> TicketRef:
        return self.inner.open(incident)

    def mark(self, ticket: TicketRef | None = None) -> str:
        return ""

    def find(self, incident_urn: str, since: str = "") -> TicketRef | None:
        return self.inner.find(incident_urn)

    def comment(self, ticket: TicketRef, text: str, effect_id: str | None = None) -> None:
        time.sleep(0.3)  # a workload, not a synchronisation: the barrier below lines the two consumers up
        self.inner.comment(ticket, text, effect_id)

    def posted(self, ticket: TicketRef, effect_id: str, since: str = "") -> bool:
        return self.inner.posted(ticket, effect_id)

    def close(self, ticket: TicketRef, final: IncidentTicket | None = None) -> None:
        self.inner.close(ticket, final)


def test_two_consumers_delivering_the_same_effect_at_once_post_it_once() -> None:
    memory, ledger = MemoryTicketer(), MemoryLedger()
    TicketDelivery([memory], ledger).open("open/ticket", TICKET)
    gate = threading.Barrier(2)

    def deliver(_: int) -> str:
        delivery = TicketDelivery([Busy(memory)], ledger, RetryPolicy(attempts=1))
        gate.wait()
        try:
            delivery.comment("c/ticket", URN, "the update")
        except Retriable as exc:
            return str(exc)
        return "delivered"

    with ThreadPoolExecutor(2) as pool:
        outcomes = sorted(pool.map(deliver, range(2)))
    assert outcomes.count("delivered") == 1, outcomes
    assert any("being delivered by another consumer" in o for o in outcomes), outcomes
    (ticket,) = memory.tickets
    assert ticket.comments == ["the update"]
    TicketDelivery([memory], ledger).comment("c/ticket", URN, "the update")  # the loser's redo: already seen
    assert ticket.comments == ["the update"]
