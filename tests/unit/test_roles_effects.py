"""The effects role: tickets through TicketDelivery, REST proposals through the writer, each once."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import StatusClass

from pareis.contracts.records import Message, OutRecord, RawMessage, header
from pareis.core.impact import Severity
from pareis.datahub.writes.writer import Mcp, MemoryWriter
from pareis.errors import Fatal, Poison, Retriable
from pareis.kafka.batch import BatchProcessor
from pareis.kafka.dlq import ERROR_CLASS
from pareis.kafka.role import Pipeline
from pareis.roles import effects
from pareis.roles.effects import EffectsHandler
from pareis.roles.messages import DatahubWrite, Effect, TicketClose, TicketComment, TicketOpen, encode
from pareis.store.ledger import MemoryLedger
from pareis.tickets.delivery import TicketDelivery
from pareis.tickets.memory import MemoryTicketer
from pareis.tickets.port import IncidentTicket
from pareis.tickets.retry import RetryPolicy

INCIDENT = "urn:li:incident:pareis-00000000000000000000000000000001"
DATASET = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.orders,PROD)"
TOPIC = "pareis.effects.v1"


def status_write(effect_id: str, removed: bool = False) -> DatahubWrite:
    mcp = MetadataChangeProposalWrapper(entityUrn=DATASET, aspect=StatusClass(removed=removed))
    return DatahubWrite(effect_id, INCIDENT, mcp.to_obj())


LIFECYCLE: list[Effect] = [
    TicketOpen("e0/ticket", IncidentTicket(INCIDENT, "Incident on orders", "what happened", Severity.HIGH)),
    TicketComment("e1/ticket", INCIDENT, "a second assertion fails"),
    TicketClose("e2/ticket", INCIDENT, "postmortem: healed"),
]


class Ports:
    def __init__(self, rest: MemoryWriter | None = None) -> None:
        self.tools = [MemoryTicketer("slack"), MemoryTicketer("jira")]
        self.ledger = MemoryLedger()
        self.rest = rest
        delivery = TicketDelivery(self.tools, self.ledger, RetryPolicy(attempts=1))
        self.handler = EffectsHandler(delivery, self.ledger, rest)

    def deliver(self, values: Sequence[Effect]) -> list[OutRecord]:
        return self.handler([Message(TOPIC, 0, i, INCIDENT.encode(), v) for i, v in enumerate(values)])


def test_an_incidents_tickets_are_opened_commented_and_closed_in_every_tool() -> None:
    ports = Ports()
    assert ports.deliver(LIFECYCLE) == []
    for tool in ports.tools:
        (ticket,) = tool.tickets
        assert ticket.incident.incident_urn == INCIDENT and ticket.incident.severity is Severity.HIGH
        assert ticket.comments == ["a second assertion fails", "postmortem: healed"] and ticket.closed


def test_redelivered_effects_are_no_ops() -> None:
    ports = Ports(MemoryWriter())
    batch = [*LIFECYCLE, status_write("e0/datahub/0")]
    ports.deliver(batch)
    ports.deliver(batch)
    for tool in ports.tools:
        assert len(tool.tickets) == 1 and len(tool.tickets[0].comments) == 2
    assert ports.rest is not None and len(ports.rest.proposals) == 1


def test_a_rest_write_reaches_the_writer_as_the_proposal_it_carries() -> None:
    ports = Ports(MemoryWriter())
    ports.deliver([status_write("e0/datahub/0", removed=True)])
    assert ports.rest is not None
    (written,) = ports.rest.proposals
    assert written.entityUrn == DATASET and written.aspectName == "status"
    assert ports.ledger.seen("e0/datahub/0")


class FailingWriter:
    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def write(self, mcps: Sequence[Mcp]) -> tuple[OutRecord, ...]:
        self.calls += 1
        raise self.error


@pytest.mark.parametrize("error", [Retriable("GMS down"), Poison("GMS rejected: 422")])
def test_a_failed_write_is_not_recorded_and_keeps_its_class(error: Exception) -> None:
    ledger = MemoryLedger()
    writer = FailingWriter(error)
    handler = EffectsHandler(TicketDelivery([], ledger), ledger, writer)
    with pytest.raises(type(error)):
        handler([Message(TOPIC, 0, 0, None, status_write("e5/datahub/0"))])
    assert not ledger.seen("e5/datahub/0")
    assert writer.calls == 1


def test_a_rest_write_without_a_rest_writer_stops_the_role() -> None:
    with pytest.raises(Fatal, match="no REST writer"):
        Ports(rest=None).deliver([status_write("e0/datahub/0")])


def test_through_the_runtime_a_refused_effect_is_dead_lettered_and_the_rest_delivered() -> None:
    ports = Ports(MemoryWriter())
    values = [
        TicketComment("orphan/ticket", "urn:li:incident:pareis-never-opened", "no ticket to comment on"),
        *LIFECYCLE,
        DatahubWrite("bad/datahub/0", INCIDENT, {"entityUrn": DATASET, "changeType": "UPSERT", "aspectName": 5}),
    ]
    raws = [RawMessage(TOPIC, 0, i, INCIDENT.encode(), encode(v)) for i, v in enumerate(values)]
    raws.append(RawMessage(TOPIC, 0, len(raws), None, b'{"v": 1, "kind": "ticket.open"}'))
    pipeline = Pipeline(effects.decode, ports.handler)
    result = BatchProcessor("effects", pipeline, "dlq").process(raws)
    dead = [r for r in result.outputs if r.topic == "dlq"]
    assert sorted(r.value for r in dead) == sorted([raws[0].value, raws[-2].value, raws[-1].value])
    assert {header(r.headers, ERROR_CLASS) for r in dead} == {b"NoTicket", b"DecodeError"}
    for tool in ports.tools:
        assert len(tool.tickets) == 1 and tool.tickets[0].closed


@pytest.mark.parametrize(
    "mcp",
    [
        {"entityUrn": DATASET, "changeType": "UPSERT", "aspectName": "status", "aspect": 7},
        {"entityUrn": DATASET, "changeType": "NOT_A_CHANGE", "aspectName": "status"},
    ],
)
def test_a_proposal_acryl_cannot_read_is_poison(mcp: dict[str, object]) -> None:
    with pytest.raises(Poison, match="e9/datahub/0"):
        effects.proposal(DatahubWrite("e9/datahub/0", INCIDENT, mcp))
