"""The effects role's behaviour: deliver each effect of ``pareis.effects.v1`` to the outside world, once.

* ``ticket.open`` / ``ticket.comment`` / ``ticket.close`` go through :class:`~pareis.tickets.delivery.TicketDelivery`
  (every configured tool; its ledger keys are ``<effect id>/<tool>``; opening finds an existing ticket first);
* ``datahub.write`` goes through the REST writer, skipped when the ledger has its effect id and recorded once
  GMS accepted it; one carrying ``keep`` (an Update's or Resolve's ``incidentInfo``) is merged first with the
  aspect GMS holds, keeping the priority, stage and assignees people changed
  (:mod:`pareis.datahub.writes.incident_merge`).

At-least-once: the runtime commits the offsets after the batch's effects are done, and a redone batch finds its
delivered effects in the ledger. Errors keep their class: Retriable (a tool or GMS unreachable; the runtime backs
off and redoes), Poison (a tool or GMS refused the effect for good, a comment for an incident without a ticket;
the runtime dead-letters that effect with the reason), Fatal (credentials refused, a ``datahub.write`` effect
reaching an effects role with no REST writer: the roles' settings disagree).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence

from datahub.metadata.schema_classes import GenericAspectClass, MetadataChangeProposalClass

from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.datahub.writes.incident_merge import keep_edits
from pareis.datahub.writes.writer import AspectReader, DatahubWriter
from pareis.errors import Fatal, Poison, Retriable
from pareis.roles.messages import DatahubWrite, Effect, TicketClose, TicketComment, TicketOpen, decode_effect
from pareis.store.ledger import EffectLedger
from pareis.tickets.delivery import TicketDelivery


def decode(raw: RawMessage) -> Effect:
    """The role's decoder: an effect, or DecodeError (Poison)."""
    assert raw.value is not None  # the runtime filters tombstones before decoding
    return decode_effect(raw.value, raw.origin)


def proposal(effect: DatahubWrite) -> MetadataChangeProposalClass:
    """The proposal a ``datahub.write`` effect carries; Poison when acryl-datahub cannot read or validate it."""
    try:
        mcp = MetadataChangeProposalClass.from_obj(dict(effect.mcp))
    except Exception as exc:  # avrogen raises assorted errors on a malformed object
        raise Poison(f"effect {effect.effect_id}: not a proposal: {type(exc).__name__}: {exc}") from exc
    if not mcp.validate():
        raise Poison(f"effect {effect.effect_id}: invalid proposal {mcp.changeType} {mcp.aspectName}")
    return mcp


class EffectsHandler:
    """The role's handler over its ports: ticket delivery (with its own ledger), the effect ledger for DataHub
    writes, and the REST writer (None unless ``datahub.write_path`` is ``rest``)."""

    def __init__(
        self,
        tickets: TicketDelivery,
        ledger: EffectLedger,
        rest: DatahubWriter | None,
        *,
        budget_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tickets = tickets
        self._ledger = ledger
        self._rest = rest
        self._budget_s = budget_s
        self._clock = clock

    def __call__(self, batch: Sequence[Message[Effect]]) -> list[OutRecord]:
        """Deliver the batch within ``budget_s``: past it, Retriable — the effects delivered so far are in the
        ledger, the runtime backs off (polling, so the consumer keeps its place in the group) and the redo
        skips them. A hung tool thus never holds the role past ``max.poll.interval.ms``."""
        deadline = self._clock() + self._budget_s
        self._tickets.deadline = deadline
        try:
            for done, message in enumerate(batch):
                if self._clock() > deadline:
                    raise Retriable(
                        f"delivery budget of {self._budget_s:.0f}s spent after {done} of {len(batch)} effects"
                    )
                self.deliver(message.value)
        finally:
            self._tickets.deadline = None
        return []

    def deliver(self, effect: Effect) -> None:
        """Deliver one effect (a no-op when it was delivered before)."""
        if isinstance(effect, TicketOpen):
            self._tickets.open(effect.effect_id, effect.ticket)
        elif isinstance(effect, TicketComment):
            self._tickets.comment(effect.effect_id, effect.incident, effect.text)
        elif isinstance(effect, TicketClose):
            self._tickets.close(effect.effect_id, effect.incident, effect.text)
        else:
            self._write(effect)

    def _write(self, effect: DatahubWrite) -> None:
        if self._rest is None:
            raise Fatal(
                f"effect {effect.effect_id} is a DataHub REST write, but this effects role has no REST writer "
                "(the incidents role runs with datahub.write_path=rest, this one does not)"
            )
        if self._ledger.seen(effect.effect_id):
            return
        mcp = proposal(effect)
        if effect.keep is not None and isinstance(self._rest, AspectReader) and mcp.entityUrn and mcp.aspect:
            # Read-merge-write: what a person edited in DataHub since Pareis last wrote it stays.
            current = self._rest.read_aspect(mcp.entityUrn, str(mcp.aspectName))
            merged = keep_edits(json.loads(mcp.aspect.value), current, effect.keep)
            mcp.aspect = GenericAspectClass(value=json.dumps(merged).encode(), contentType=mcp.aspect.contentType)
        self._rest.write([mcp])
        self._ledger.record(effect.effect_id)
