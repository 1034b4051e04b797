"""Delivering ticket effects to Slack, Jira and Linear at once: idempotent redelivery, a crash between creating a
ticket and recording it, one tool failing while the others succeed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest

from pareis.core.impact import Severity
from pareis.errors import Fatal, PareisError, Poison, Retriable
from pareis.store.ledger import MemoryLedger
from pareis.tickets.delivery import NoTicket, TicketDelivery
from pareis.tickets.port import IncidentTicket, TicketRef
from pareis.tickets.retry import RetryPolicy
from tests.support.fake_http import FakeServer
from tests.support.tickets_harness import HTTP_TOOLS, Tool, tool

URN = "urn:li:incident:pareis-5e6f7a"
INCIDENT = IncidentTicket(URN, "orders.amount is NULL", "2 models poisoned.", Severity.HIGH, "https://dh/incident")


class ProcessDied(Exception):
    """Stands for the process being killed: not a PareisError, so nothing handles it."""


class CrashingLedger(MemoryLedger):
    """Dies while recording (or storing a value under) ``crash_on``, once: the ticket exists, the ledger does not
    know."""

    def __init__(self, crash_on: str) -> None:
        super().__init__()
        self.crash_on: str | None = crash_on

    def _maybe_die(self, key: str) -> None:
        if key == self.crash_on:
            self.crash_on = None
            raise ProcessDied(key)

    def record(self, effect_id: str) -> None:
        self._maybe_die(effect_id)
        super().record(effect_id)

    def put(self, key: str, value: str) -> None:
        self._maybe_die(key)
        super().put(key, value)


@dataclass
class Desk:
    tools: dict[str, Tool]

    def delivery(self, ledger: MemoryLedger, attempts: int = 3) -> TicketDelivery:
        """A fresh delivery on fresh ticketers (as after a restart), sharing the tools and the ledger."""
        policy = RetryPolicy(attempts=attempts, sleep=lambda s: None, jitter=0.0)
        return TicketDelivery([t.make() for t in self.tools.values()], ledger, policy)

    def server(self, name: str) -> FakeServer:
        found = self.tools[name].server
        assert found is not None
        return found

    def request_counts(self) -> dict[str, int]:
        return {name: len(self.server(name).requests) for name in self.tools}

    def counts(self) -> dict[str, int]:
        return {name: t.count() for name, t in self.tools.items()}


@pytest.fixture
def desk() -> Iterator[Desk]:
    with ExitStack() as stack:
        yield Desk({name: stack.enter_context(tool(name)) for name in HTTP_TOOLS})


def test_open_creates_one_ticket_per_tool_and_records_each(desk: Desk) -> None:
    ledger = MemoryLedger()

    refs = desk.delivery(ledger).open("effect-open-1", INCIDENT)

    assert desk.counts() == {"slack": 1, "jira": 1, "linear": 1}
    assert {name: ref.tool for name, ref in refs.items() if ref} == {n: n for n in HTTP_TOOLS}
    assert all(ledger.seen(f"effect-open-1/{name}") for name in HTTP_TOOLS)


def test_redelivering_the_same_effect_is_a_noop(desk: Desk) -> None:
    ledger = MemoryLedger()
    desk.delivery(ledger).open("effect-open-1", INCIDENT)
    before = desk.request_counts()

    again = desk.delivery(ledger).open("effect-open-1", INCIDENT)

    assert again == {"slack": None, "jira": None, "linear": None}
    assert desk.request_counts() == before
    assert desk.counts() == {"slack": 1, "jira": 1, "linear": 1}


@pytest.mark.parametrize("record", ["effect", "ticket"], ids=["effect-record", "ticket-record"])
@pytest.mark.parametrize("crashing_tool", HTTP_TOOLS)
def test_a_crash_between_create_and_ledger_record_still_makes_one_ticket(
    desk: Desk, crashing_tool: str, record: str
) -> None:
    key = f"effect-open-1/{crashing_tool}" if record == "effect" else f"ticket/{crashing_tool}/{URN}"
    ledger = CrashingLedger(crash_on=key)
    with pytest.raises(ProcessDied):
        desk.delivery(ledger).open("effect-open-1", INCIDENT)
    assert desk.tools[crashing_tool].count() == 1
    assert not ledger.seen(f"effect-open-1/{crashing_tool}")

    desk.delivery(ledger).open("effect-open-1", INCIDENT)  # the runtime redelivers after the restart

    assert desk.counts() == {"slack": 1, "jira": 1, "linear": 1}
    assert all(ledger.seen(f"effect-open-1/{name}") for name in HTTP_TOOLS)


def test_a_failing_tool_does_not_block_the_others_and_is_retried_alone(desk: Desk) -> None:
    ledger = MemoryLedger()
    desk.server("jira").fail_next(503, times=2)

    with pytest.raises(Retriable):
        desk.delivery(ledger, attempts=2).open("effect-open-1", INCIDENT)
    assert desk.counts() == {"slack": 1, "jira": 0, "linear": 1}
    before = desk.request_counts()

    desk.delivery(ledger).open("effect-open-1", INCIDENT)

    after = desk.request_counts()
    assert after["slack"] == before["slack"]
    assert after["linear"] == before["linear"]
    assert desk.counts() == {"slack": 1, "jira": 1, "linear": 1}


def test_poison_in_one_tool_is_raised_after_the_others_are_delivered(desk: Desk) -> None:
    ledger = MemoryLedger()
    desk.server("linear").fail_next(400)  # a 4xx is not retried

    with pytest.raises(Poison):
        desk.delivery(ledger).open("effect-open-1", INCIDENT)

    creates = [r for r in desk.server("linear").requests if b"issueCreate" in r.body]
    assert len(creates) == 1, "a 4xx is not retried (the one read after it looks for an earlier create)"
    assert desk.counts() == {"slack": 1, "jira": 1, "linear": 0}
    assert not ledger.seen("effect-open-1/linear")


def test_comments_and_close_reach_every_tool_once(desk: Desk) -> None:
    ledger = MemoryLedger()
    delivery = desk.delivery(ledger)
    refs = delivery.open("effect-open-1", INCIDENT)

    delivery.comment("effect-update-2", URN, "Blast radius grew.")
    desk.delivery(ledger).comment("effect-update-2", URN, "Blast radius grew.")  # redelivered after a restart
    delivery.close("effect-resolve-3", URN, "Healed.")
    desk.delivery(ledger).close("effect-resolve-3", URN, "Healed.")

    for name, t in desk.tools.items():
        ref = refs[name]
        assert isinstance(ref, TicketRef)
        assert t.texts(ref) == ["Blast radius grew.", "Healed."]
        assert t.closed(ref)


def test_an_update_right_after_open_needs_no_search(desk: Desk) -> None:
    delivery = desk.delivery(MemoryLedger())
    delivery.open("effect-open-1", INCIDENT)
    searches = len([r for r in desk.server("jira").requests if r.path.endswith("/search/jql")])

    delivery.comment("effect-update-2", URN, "More failures.")

    assert len([r for r in desk.server("jira").requests if r.path.endswith("/search/jql")]) == searches


def test_a_comment_for_an_incident_without_ticket_is_poison_and_not_recorded(desk: Desk) -> None:
    ledger = MemoryLedger()

    with pytest.raises(NoTicket) as caught:
        desk.delivery(ledger).comment("effect-update-9", "urn:li:incident:pareis-unknown", "text")

    assert isinstance(caught.value, Poison)
    assert not any(ledger.seen(f"effect-update-9/{name}") for name in HTTP_TOOLS)


class Failing:
    def __init__(self, tool: str, error: PareisError) -> None:
        self.tool = tool
        self.error = error

    def open(self, incident: IncidentTicket) -> TicketRef:
        raise self.error

    def mark(self, ticket: TicketRef | None = None) -> str:
        raise self.error

    def find(self, incident_urn: str, since: str = "") -> TicketRef | None:
        raise self.error

    def comment(self, ticket: TicketRef, text: str, effect_id: str | None = None) -> None:
        raise self.error

    def posted(self, ticket: TicketRef, effect_id: str, since: str = "") -> bool:
        raise self.error

    def close(self, ticket: TicketRef, final: IncidentTicket | None = None) -> None:
        raise self.error


def test_the_most_serious_failure_is_raised_with_the_others_as_notes() -> None:
    poison, retriable, fatal = Poison("bad input"), Retriable("blip"), Fatal("revoked")
    tools = [Failing("a", poison), Failing("b", fatal), Failing("c", retriable)]
    delivery = TicketDelivery(tools, MemoryLedger(), RetryPolicy(attempts=1))

    with pytest.raises(Fatal) as caught:
        delivery.open("effect-1", INCIDENT)

    assert caught.value is fatal
    assert any("bad input" in note for note in caught.value.__notes__)
    assert any("blip" in note for note in caught.value.__notes__)


def test_one_ticketer_per_tool() -> None:
    with pytest.raises(ValueError):
        TicketDelivery([Failing("a", Poison("x")), Failing("a", Poison("y"))], MemoryLedger())
