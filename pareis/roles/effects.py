"""The effects role's behaviour: deliver each effect of ``pareis.effects.v1`` to the outside world, once.

* ``ticket.open`` / ``ticket.comment`` / ``ticket.close`` go through :class:`~pareis.tickets.delivery.TicketDelivery`
  (every configured tool; its ledger keys are ``<effect id>/<tool>``; opening finds an existing ticket first);
* ``datahub.write`` goes through the REST writer, skipped when the ledger has its effect id and recorded once
  GMS accepted it; one carrying ``keep`` (an Update's or Resolve's ``incidentInfo``) is merged first with the
  aspect GMS holds, keeping the priority, stage and assignees people changed
  (:mod:`pareis.datahub.writes.incident_merge`).

Each ticket and comment delivered is copied into the incident in DataHub (DESIGN §3, tickets inside DataHub) by
:class:`TicketMirror`: the ticket's link on ``incidentExternalLinks``, each comment on ``incidentNotes``
(:mod:`pareis.datahub.writes.ticket_links`), through the role's DataHub writer — delivered at once on the ``rest``
path, or as records of the MCP topic the role produces after the batch on the ``kafka`` path (only the effects
role knows a ticket's link). A redelivery copies them again (idempotent PATCHes), so a crash between a delivery
and its copy loses nothing.

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

import structlog
from datahub.metadata.schema_classes import GenericAspectClass, MetadataChangeProposalClass

from pareis.config import DatahubSettings
from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.datahub.writes.incident_merge import keep_edits
from pareis.datahub.writes.ticket_links import link_patch, note_patch
from pareis.datahub.writes.writer import AspectReader, DatahubWriter
from pareis.errors import Fatal, Poison, Retriable
from pareis.roles.messages import DatahubWrite, Effect, TicketClose, TicketComment, TicketOpen, decode_effect
from pareis.store.ledger import EffectLedger
from pareis.tickets.delivery import Posted, TicketDelivery

log = structlog.get_logger(__name__)


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


class TicketMirror:
    """Copies what the ticket delivery reports (:class:`~pareis.tickets.delivery.Posted`) into the incident in DataHub
    through ``writer``; the records the writer returns (the Kafka writer's) wait in :meth:`drain`.

    A copy GMS refuses for good (a server whose incidents have no ``incidentExternalLinks`` or ``incidentNotes``
    yet, before DataHub PR #16989) is logged and counted in :attr:`refused`: the ticket is delivered, and
    redelivering it would not change GMS's mind. Other errors are the writer's (Retriable: the effect is redone).
    A ticket without a URL (a Slack ref kept before refs carried permalinks) has no link to write.
    """

    def __init__(self, writer: DatahubWriter, settings: DatahubSettings) -> None:
        self._writer = writer
        self._settings = settings
        self._records: list[OutRecord] = []
        self.refused = 0

    def __call__(self, posted: Posted) -> None:
        ticket, at_ms, key = posted.ticket, posted.at_ms, posted.key
        if posted.text is not None:
            mcp = note_patch(self._settings, posted.incident, posted.text, key, ticket.url, at_ms=at_ms, effect_id=key)
        elif ticket.url is not None:
            mcp = link_patch(
                self._settings, posted.incident, ticket.tool, ticket.id, ticket.url, at_ms=at_ms, effect_id=key
            )
        else:
            log.warning("ticket without a URL: no link in DataHub", tool=ticket.tool, ticket=ticket.id)
            return
        try:
            self._records.extend(self._writer.write([mcp]))
        except Poison as exc:
            self.refused += 1
            log.warning("DataHub refused a ticket's copy", aspect=mcp.aspectName, key=posted.key, error=str(exc))

    def drain(self) -> list[OutRecord]:
        """The records written since the last drain (the MCP topic's, on the ``kafka`` path)."""
        out, self._records = self._records, []
        return out


class EffectsHandler:
    """The role's handler over its ports: ticket delivery (with its own ledger), the effect ledger for DataHub
    writes, the REST writer (None unless ``datahub.write_path`` is ``rest``), and the mirror that copies tickets
    into DataHub (the one ``tickets`` reports to; its records are the batch's outputs)."""

    def __init__(
        self,
        tickets: TicketDelivery,
        ledger: EffectLedger,
        rest: DatahubWriter | None,
        *,
        mirror: TicketMirror | None = None,
        budget_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._mirror = mirror
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
        if self._mirror is not None:
            self._mirror.drain()  # a failed batch's copies: its redo writes them again
        try:
            for done, message in enumerate(batch):
                if self._clock() > deadline:
                    raise Retriable(
                        f"delivery budget of {self._budget_s:.0f}s spent after {done} of {len(batch)} effects"
                    )
                self.deliver(message.value)
        finally:
            self._tickets.deadline = None
        return self._mirror.drain() if self._mirror is not None else []

    def deliver(self, effect: Effect) -> None:
        """Deliver one effect (a no-op when it was delivered before)."""
        if isinstance(effect, TicketOpen):
            self._tickets.open(effect.effect_id, effect.ticket, effect.at_ms)
        elif isinstance(effect, TicketComment):
            self._tickets.comment(effect.effect_id, effect.incident, effect.text, effect.at_ms)
        elif isinstance(effect, TicketClose):
            self._tickets.close(effect.effect_id, effect.incident, effect.text, effect.at_ms, effect.ticket)
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
