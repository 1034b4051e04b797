"""Exactly one ticket, one comment per update and one close per incident per tool, whatever request fails
(issue 11, points 9 and 14).

An incident's whole life — open, two updates, resolve — is delivered to each tool through the production
ticketers and :class:`~pareis.tickets.delivery.TicketDelivery`, as the effects role does: each effect redelivered
by a fresh process (a new ticketer, the same ledger) until it goes through, a minute passing between attempts (the
runtime's back-off). One fault is injected per run, at request *k*, for every *k* of the run: applied by the
server and then answered 502 or not answered at all (the response lost), or refused before applying (429, 503).
The ledger's writes fail the same way, one at a time. Every run must end with the same tool state as a run with
no fault, and with every ticket and comment reported to the mirror (what the effects role copies into DataHub) with
the ticket as the tool holds it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from pareis.errors import Retriable
from pareis.store.ledger import MemoryLedger
from pareis.tickets.delivery import Posted, TicketDelivery
from pareis.tickets.port import IncidentTicket, TicketRef
from pareis.tickets.retry import RetryPolicy
from tests.support.fake_http import FakeServer, Recorded
from tests.support.tickets_harness import HTTP_TOOLS, Tool, tool

URN = "urn:li:incident:pareis-exactly-once"
TICKET = IncidentTicket(URN, "stg_orders.amount is NULL", "3 models trained on poisoned data.")
UPDATES = ["Blast radius grew to 4 models.", "A second assertion is failing."]
RESOLUTION = "Resolved after 3 h: the postmortem is in DataHub."
FAULTS = ("lost-after-apply", "502-after-apply", "429-before", "503-before")


def life(delivery: Callable[[], TicketDelivery], pass_minute: Callable[[], None]) -> int:
    """Deliver the incident's four effects, each until it goes through (the runtime's redelivery); the redeliveries."""
    effects: list[Callable[[TicketDelivery], object]] = [
        lambda d: d.open("open/1", TICKET),
        lambda d: d.comment("update/2", URN, UPDATES[0]),
        lambda d: d.comment("update/3", URN, UPDATES[1]),
        lambda d: d.close("resolve/4", URN, RESOLUTION),
    ]
    redeliveries = 0
    for effect in effects:
        for _ in range(10):
            try:
                effect(delivery())
                break
            except Retriable:
                redeliveries += 1
                pass_minute()
        else:
            raise AssertionError("an effect never went through")
    return redeliveries


def at_request(k: int) -> Callable[[Recorded], bool]:
    seen = itertools.count()
    return lambda request: next(seen) == k


def inject(server: FakeServer, fault: str, k: int) -> None:
    if fault == "lost-after-apply":
        server.apply_then_fail(502, lost=True, when=at_request(k))
    elif fault == "502-after-apply":
        server.apply_then_fail(502, when=at_request(k))
    else:
        status = int(fault.partition("-")[0])
        server.fail_next(status, retry_after="0" if status == 429 else None, when=at_request(k))


def fresh(t: Tool, ledger: MemoryLedger, mirrored: list[Posted] | None = None) -> Callable[[], TicketDelivery]:
    # No in-place retry: every fault reaches the runtime, whose redelivery is a fresh process (nothing in memory).
    policy = RetryPolicy(attempts=1)
    mirror = mirrored.append if mirrored is not None else None
    return lambda: TicketDelivery([t.make()], ledger, policy, mirror=mirror)


def assert_exactly_once(t: Tool, why: str, mirrored: list[Posted] | None = None) -> None:
    assert t.count() == 1, f"{why}: {t.count()} tickets"
    (ref,) = list(refs(t))
    assert t.texts(ref) == [*UPDATES, RESOLUTION], f"{why}: comments {t.texts(ref)}"
    assert t.closed(ref), f"{why}: not closed"
    if mirrored is not None:
        tool = t.name
        expected = {
            (f"open/1/{tool}", None),
            (f"update/2/{tool}", UPDATES[0]),
            (f"update/3/{tool}", UPDATES[1]),
            (f"resolve/4/{tool}/comment", RESOLUTION),
        }
        assert {(p.key, p.text) for p in mirrored} == expected, f"{why}: mirrored {mirrored}"
        assert {(p.ticket.tool, p.ticket.id) for p in mirrored} == {(ref.tool, ref.id)}, f"{why}: the tool's ticket"
        assert all(p.ticket.url for p in mirrored), f"{why}: every copy links the ticket"


def refs(t: Tool) -> Iterator[TicketRef]:
    """The tool's tickets as refs (read from the fake's state, not from Pareis)."""
    server = t.server
    if t.name == "slack":
        for message in server.top_level():  # type: ignore[union-attr]
            yield TicketRef("slack", f"C0PAREIS01/{message['ts']}")
    elif t.name == "jira":
        for key in server.issues:  # type: ignore[union-attr]
            yield TicketRef("jira", key)
    else:
        for issue_id in server.issues:  # type: ignore[union-attr]
            yield TicketRef("linear", issue_id)


@contextmanager
def clean_run_size(name: str) -> Iterator[int]:
    with tool(name) as t:
        assert t.server is not None
        life(fresh(t, MemoryLedger()), t.pass_minute)
        assert_exactly_once(t, "no fault")
        yield len(t.server.requests)


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("name", HTTP_TOOLS)
def test_a_fault_at_any_request_of_an_incidents_life_leaves_one_ticket_one_comment_each_and_one_close(
    name: str, fault: str
) -> None:
    with clean_run_size(name) as requests:
        assert requests >= 5
    redelivered = 0
    for k in range(requests):
        with tool(name) as t:
            assert t.server is not None
            inject(t.server, fault, k)
            mirrored: list[Posted] = []
            redelivered += life(fresh(t, MemoryLedger(), mirrored), t.pass_minute)
            assert_exactly_once(t, f"{fault} at request {k}", mirrored)
            assert t.server.pending_faults == 0, f"the fault at request {k} was played"
    assert redelivered >= requests - 2, "the faults reached the runtime's redelivery"


class FlakyLedger(MemoryLedger):
    """Fails its ``k``-th write (a ``put`` or a ``record``) with Retriable, before or after applying it."""

    def __init__(self, k: int, applied: bool) -> None:
        super().__init__()
        self._writes = itertools.count()
        self._k, self._applied = k, applied
        self.failed = False

    def _write(self, apply: Callable[[], None]) -> None:
        if next(self._writes) != self._k:
            apply()
            return
        self.failed = True
        if self._applied:
            apply()
        raise Retriable("redis: connection reset")

    def put(self, key: str, value: str) -> None:
        self._write(lambda: super(FlakyLedger, self).put(key, value))

    def record(self, effect_id: str) -> None:
        self._write(lambda: super(FlakyLedger, self).record(effect_id))


@pytest.mark.parametrize("applied", [False, True], ids=["write-refused", "write-applied-then-failed"])
@pytest.mark.parametrize("name", HTTP_TOOLS)
def test_a_failed_ledger_write_at_any_step_never_doubles_a_ticket_or_a_comment(name: str, applied: bool) -> None:
    for k in range(40):
        with tool(name) as t:
            ledger = FlakyLedger(k, applied)
            mirrored: list[Posted] = []
            life(fresh(t, ledger, mirrored), t.pass_minute)
            assert_exactly_once(t, f"ledger write {k} failed ({'applied' if applied else 'refused'})", mirrored)
            if not ledger.failed:
                assert k > 10, "the life has more than a few ledger writes"
                return
    raise AssertionError("more ledger writes than expected")
