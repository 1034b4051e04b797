"""Delivering ticket effects to every configured tool, once: the ledger, the retry policy and the ticketers.

The effects role calls :class:`TicketDelivery` with each effect's deterministic id. Per tool, the ledger key is
``<effect id>/<tool>``: when Slack took an effect and Jira failed, the redelivery skips Slack. A delivered
effect is recorded after the tool accepted it, so a crash in between redelivers it; for ``open`` that is a
no-op because every ticketer finds the incident's ticket before creating one.
"""

from __future__ import annotations

import contextlib
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from pareis.errors import Fatal, PareisError, Poison, Retriable
from pareis.model.ledger import EffectLedger
from pareis.tickets.port import IncidentTicket, Ticketer, TicketRef
from pareis.tickets.retry import RetryPolicy

T = TypeVar("T")


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
    ) -> None:
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

    def open(self, effect_id: str, incident: IncidentTicket) -> dict[str, TicketRef | None]:
        """Open the incident's ticket in every tool; the refs by tool (None where already delivered)."""
        refs: dict[str, TicketRef | None] = {}

        def deliver(ticketer: Ticketer) -> None:
            ref = self._call(lambda: ticketer.open(incident))
            self._remember(ticketer, incident.incident_urn, ref)
            refs[ticketer.tool] = ref

        self._each(effect_id, deliver, skipped=lambda t: refs.setdefault(t.tool, None))
        return refs

    def comment(self, effect_id: str, incident_urn: str, text: str) -> None:
        """Add ``text`` to the incident's ticket in every tool."""
        self._each(effect_id, lambda t: self._call(lambda: t.comment(self._ref(t, incident_urn), text)))

    def close(self, effect_id: str, incident_urn: str, text: str) -> None:
        """Add ``text`` to the incident's ticket in every tool and close it."""

        def deliver(ticketer: Ticketer) -> None:
            # Two steps, each recorded: the text as a comment, then the state change. A failed state change
            # (Slack chat.update 429, Jira transitions 503, Linear 500) is retried alone, never posting the text
            # again.
            ref = self._ref(ticketer, incident_urn)
            step = f"{effect_id}/{ticketer.tool}/comment"
            if not self._call(partial(self._ledger.seen, step)):
                self._call(lambda: ticketer.comment(ref, text))
                self._call(partial(self._ledger.record, step))
            self._call(lambda: ticketer.close(ref, None))

        self._each(effect_id, deliver)

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
            ref = self._call(lambda: ticketer.find(incident_urn))
            if ref is None:
                raise NoTicket(f"{ticketer.tool}: no ticket for {incident_urn}")
            self._remember(ticketer, incident_urn, ref)
        return ref

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
