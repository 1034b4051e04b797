"""Delivering ticket effects to every configured tool, once: the ledger, the retry policy and the ticketers.

The effects role calls :class:`TicketDelivery` with each effect's deterministic id. Per tool, the ledger key is
``<effect id>/<tool>``: when Slack took an effect and Jira failed, the redelivery skips Slack. Within an effect
each step is recorded: an open's ticket under ``ticket/<tool>/<incident URN>`` (every later step reads the ticket
from there, never from a search), a comment under its step key, and before each create or comment an
``…/attempt`` entry with the tool's mark. A redelivery (after a lost answer, a failed ledger write, a crash)
that finds an attempt without its result asks the tool for the key the request carried before sending it again,
so every tool gets exactly one ticket, one comment per update and one close per incident.

A ``mirror``, when given, is told of each ticket and comment as it stands in a tool (:class:`Posted`) — after the
step that made it, and again whenever a redelivery finds the effect already delivered to that tool — before the
effect is recorded as delivered there: the effects role copies them into DataHub's incident (DESIGN §3, tickets
inside DataHub) at least once, idempotently. A mirror's error counts as the tool's: the effect is redelivered.
"""

from __future__ import annotations

import contextlib
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from pareis.contracts.ledger import EffectLedger, ticket_key
from pareis.errors import Fatal, PareisError, Poison, Retriable
from pareis.tickets.port import IncidentTicket, Ticketer, TicketRef
from pareis.tickets.retry import RetryPolicy

T = TypeVar("T")


@dataclass(frozen=True)
class Posted:
    """A ticket (``text`` None) or a comment on it (its ``text``) as it stands in a tool, for DataHub's copy.

    ``key`` names it for good: for a comment, the key it carries in the tool (``<effect id>/<tool>``, the close's
    ``<effect id>/<tool>/comment``); for a ticket, ``<effect id>/<tool>``. ``at_ms``: the time of the intent that
    caused the effect."""

    incident: str
    ticket: TicketRef
    key: str
    text: str | None = None
    at_ms: int = 0


class NoTicket(Poison):
    """A comment or close for an incident that has no ticket in that tool (its open was dead-lettered, or the
    ticket was deleted)."""


class TicketDelivery:
    """Open, comment on and close an incident's tickets in every tool, each effect at most once per tool.

    Every tool is tried even when another fails; then the most serious failure is raised (Fatal, else
    Retriable, else Poison), the others attached as notes. The tools that succeeded are recorded, so the
    runtime's redelivery retries only the rest. Refs made or found are remembered (up to ``memo_size``
    incidents), which spares a search per update and does not depend on a tool's search index being current.
    """

    def __init__(
        self,
        ticketers: Sequence[Ticketer],
        ledger: EffectLedger,
        policy: RetryPolicy | None = None,
        *,
        memo_size: int = 10_000,
        owner: str | None = None,
        claim_ttl_s: float = 120.0,
        mirror: Callable[[Posted], None] | None = None,
    ) -> None:
        self._mirror = mirror
        names = [t.tool for t in ticketers]
        if len(set(names)) != len(names):
            raise ValueError(f"one ticketer per tool, got {names}")
        self._ticketers = list(ticketers)
        self._ledger = ledger
        self._policy = policy or RetryPolicy()
        self._memo: OrderedDict[tuple[str, str], TicketRef] = OrderedDict()
        self._memo_size = memo_size
        self._owner = owner or uuid.uuid4().hex
        self._claim_ttl_s = claim_ttl_s
        self.deadline: float | None = None
        """A ``policy.clock`` reading no in-place retry may wait past (the effects role's batch budget)."""

    def open(self, effect_id: str, incident: IncidentTicket, at_ms: int = 0) -> dict[str, TicketRef | None]:
        """Open the incident's ticket in every tool; the refs by tool (None where already delivered)."""
        refs: dict[str, TicketRef | None] = {}
        urn = incident.incident_urn

        def deliver(ticketer: Ticketer) -> None:
            ref = self._call(lambda: self._opened(ticketer, incident))
            self._remember(ticketer, urn, ref)
            refs[ticketer.tool] = ref
            self._mirrored(Posted(urn, ref, f"{effect_id}/{ticketer.tool}", None, at_ms))

        def skipped(ticketer: Ticketer) -> None:
            refs.setdefault(ticketer.tool, None)
            if self._mirror is not None:
                self._mirrored(Posted(urn, self._ref(ticketer, urn), f"{effect_id}/{ticketer.tool}", None, at_ms))

        self._each(effect_id, deliver, skipped=skipped)
        return refs

    def comment(self, effect_id: str, incident_urn: str, text: str, at_ms: int = 0) -> None:
        """Add ``text`` to the incident's ticket in every tool."""

        def deliver(ticketer: Ticketer) -> None:
            ref = self._ref(ticketer, incident_urn)
            step = f"{effect_id}/{ticketer.tool}"
            self._call(lambda: self._commented(ticketer, ref, step, effect_id, text))
            self._mirrored(Posted(incident_urn, ref, step, text, at_ms))

        self._each(effect_id, deliver, skipped=self._note(incident_urn, text, at_ms, lambda t: f"{effect_id}/{t}"))

    def close(
        self, effect_id: str, incident_urn: str, text: str, at_ms: int = 0, final: IncidentTicket | None = None
    ) -> None:
        """Add ``text`` to the incident's ticket in every tool and close it (``final``: what the ticket says as of
        the resolve, for a tool whose close rewrites the ticket)."""

        def deliver(ticketer: Ticketer) -> None:
            # Two steps, each recorded: the text as a comment, then the state change. A failed state change
            # (Slack chat.update 429, Jira transitions 503, Linear 500) is retried alone, never posting the text
            # again; the state change itself is idempotent (each tool reads or rewrites the state it sets).
            ref = self._ref(ticketer, incident_urn)
            step = f"{effect_id}/{ticketer.tool}/comment"
            self._call(lambda: self._commented(ticketer, ref, step, f"{effect_id}/comment", text))
            self._mirrored(Posted(incident_urn, ref, step, text, at_ms))
            self._call(lambda: ticketer.close(ref, final))

        step = self._note(incident_urn, text, at_ms, lambda t: f"{effect_id}/{t}/comment")
        self._each(effect_id, deliver, skipped=step)

    def _note(self, urn: str, text: str, at_ms: int, key: Callable[[str], str]) -> Callable[[Ticketer], None]:
        """What a redelivery does for a tool that has the comment already: mirror it again."""

        def skipped(ticketer: Ticketer) -> None:
            if self._mirror is not None:
                self._mirrored(Posted(urn, self._ref(ticketer, urn), key(ticketer.tool), text, at_ms))

        return skipped

    def _mirrored(self, posted: Posted) -> None:
        if self._mirror is not None:
            mirror = self._mirror
            self._call(lambda: mirror(posted))

    # --- one step each, exactly once -----------------------------------------------------------------------
    # A non-idempotent request (a create, a comment) is preceded by a ledger entry saying it is about to be sent
    # and from where (the tool's mark), and followed by one saying what it made. Finding the first without the
    # second — the answer was lost (a timeout, a 502 after the tool applied it), the ledger write failed, the
    # process died — the step asks the tool's own state for the key the request carried before sending again.

    def _opened(self, ticketer: Ticketer, incident: IncidentTicket) -> TicketRef:
        record = ticket_key(ticketer.tool, incident.incident_urn)
        known = self._ledger.get(record)
        if known is not None:
            return TicketRef.from_json(known)
        attempt = self._ledger.get(record + "/attempt")
        ref = ticketer.find(incident.incident_urn, attempt) if attempt is not None else None
        if ref is None:
            self._ledger.put(record + "/attempt", ticketer.mark())
            ref = ticketer.open(incident)
        self._ledger.put(record, ref.to_json())
        return ref

    def _commented(self, ticketer: Ticketer, ref: TicketRef, step: str, carried: str, text: str) -> None:
        if self._ledger.seen(step):
            return
        attempt = self._ledger.get(step + "/attempt")
        if attempt is None or not ticketer.posted(ref, carried, attempt):
            self._ledger.put(step + "/attempt", ticketer.mark(ref))
            ticketer.comment(ref, text, carried)
        self._ledger.record(step)

    def _each(
        self,
        effect_id: str,
        deliver: Callable[[Ticketer], None],
        skipped: Callable[[Ticketer], object] = lambda t: None,
    ) -> None:
        if not effect_id:
            raise ValueError("effect id must not be empty")
        failures: list[PareisError] = []
        for ticketer in self._ticketers:
            key = f"{effect_id}/{ticketer.tool}"
            try:
                # The claim makes "not seen yet → deliver → record" atomic against a concurrent redelivery of the
                # same effect (another replica after a rebalance): the other one backs off and then finds it seen.
                if not self._call(partial(self._ledger.claim, key, self._owner, self._claim_ttl_s)):
                    raise Retriable(f"{key} is being delivered by another consumer")
                try:
                    if self._call(partial(self._ledger.seen, key)):
                        skipped(ticketer)
                        continue
                    deliver(ticketer)
                    self._call(partial(self._ledger.record, key))
                finally:
                    self._release(key)
            except PareisError as error:
                error.add_note(f"ticket effect {key}")
                failures.append(error)
        if failures:
            raise _worst(failures)

    def _release(self, key: str) -> None:
        with contextlib.suppress(PareisError):  # a claim not released lapses by itself
            self._ledger.release(key, self._owner)

    def _call(self, action: Callable[[], T]) -> T:
        return self._policy.call(action, deadline=self.deadline)

    def _ref(self, ticketer: Ticketer, incident_urn: str) -> TicketRef:
        ref = self._memo.get((ticketer.tool, incident_urn))
        if ref is None:
            ref = self._call(lambda: self._recorded(ticketer, incident_urn))
            if ref is None:
                raise NoTicket(f"{ticketer.tool}: no ticket for {incident_urn}")
            self._remember(ticketer, incident_urn, ref)
        return ref

    def _recorded(self, ticketer: Ticketer, incident_urn: str) -> TicketRef | None:
        """The ticket the open step recorded; else (a ticket opened before the ledger kept refs) the tool's own
        lookup from as far back as it can see."""
        known = self._ledger.get(ticket_key(ticketer.tool, incident_urn))
        if known is not None:
            return TicketRef.from_json(known)
        return ticketer.find(incident_urn, "")

    def _remember(self, ticketer: Ticketer, incident_urn: str, ref: TicketRef) -> None:
        self._memo[(ticketer.tool, incident_urn)] = ref
        self._memo.move_to_end((ticketer.tool, incident_urn))
        while len(self._memo) > self._memo_size:
            self._memo.popitem(last=False)


def _worst(failures: list[PareisError]) -> PareisError:
    for kind in (Fatal, Retriable, Poison):
        for error in failures:
            if isinstance(error, kind):
                for other in failures:
                    if other is not error:
                        error.add_note(f"also: {type(other).__name__}: {other}")
                return error
    return failures[0]
