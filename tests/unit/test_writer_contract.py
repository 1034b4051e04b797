"""The DataHub write port's contract, run against the in-memory writer and the REST writer (through acryl's
``DatahubRestEmitter`` against the fake GMS, on both its Rest.li and OpenAPI paths): the proposals given are the
proposals that arrive, in order. Then the Kafka writer: records keyed by entity URN whose values decode back to
the same proposals."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.definitions import definition_mcps
from pareis.datahub.writes.incident_writes import intent_mcps
from pareis.datahub.writes.rest import RestWriter
from pareis.datahub.writes.writer import DatahubWriter, KafkaWriter, Mcp, MemoryWriter
from tests.support.fake_gms import FakeGms, Received, normal_system_metadata, received_from
from tests.support.writer_scenario import SETTINGS, story

STORY = story()
ALL = [
    *definition_mcps(SETTINGS),
    *intent_mcps(STORY.open, SETTINGS),
    *intent_mcps(STORY.update, SETTINGS),
    *intent_mcps(STORY.resolve, SETTINGS),
]


@dataclass
class Subject:
    name: str
    writer: DatahubWriter
    received: Callable[[], list[Received]]


@pytest.fixture(params=["memory", "rest-restli", "rest-openapi"])
def subject(request: pytest.FixtureRequest) -> Iterator[Subject]:
    if request.param == "memory":
        memory = MemoryWriter()
        yield Subject("memory", memory, lambda: [received_from(m) for m in memory.proposals])
        return
    with FakeGms(token="secret") as gms:
        writer = RestWriter(gms.url, "secret", openapi=request.param == "rest-openapi")
        yield Subject(request.param, writer, lambda: gms.received)
        writer.close()


def test_it_satisfies_the_protocol(subject: Subject) -> None:
    assert isinstance(subject.writer, DatahubWriter)


def test_the_proposals_given_arrive_in_order_and_the_writer_delivers_them_itself(subject: Subject) -> None:
    assert subject.writer.write(ALL) == ()
    assert subject.received() == [received_from(m) for m in ALL]


def test_successive_writes_arrive_in_the_order_written(subject: Subject) -> None:
    batches = [intent_mcps(STORY.open, SETTINGS), intent_mcps(STORY.resolve, SETTINGS)]
    for batch in batches:
        subject.writer.write(batch)
    assert subject.received() == [received_from(m) for batch in batches for m in batch]


def test_an_empty_write_delivers_nothing(subject: Subject) -> None:
    assert subject.writer.write([]) == ()
    assert subject.received() == []


def test_writing_leaves_the_given_proposals_untouched(subject: Subject) -> None:
    mcps = intent_mcps(STORY.open, SETTINGS)
    before = [m.to_obj() for m in mcps]
    subject.writer.write(mcps)
    assert [m.to_obj() for m in mcps] == before


def test_the_rest_path_keeps_pareis_marks_and_adds_only_the_emitters_own_properties() -> None:
    with FakeGms() as gms:
        RestWriter(gms.url).write(ALL[:1])
        (proposal,) = gms.received
    assert proposal.system_metadata["pipelineName"] == "pareis"
    assert proposal.system_metadata["properties"] == {"writer": "pareis", "pareisEffectId": "definitions-v1"}


# --- Kafka -------------------------------------------------------------------------------------------------


class RecordingEncoder:
    def __init__(self) -> None:
        self.calls: list[tuple[str | None, str | None]] = []

    def encode_mcp(self, mcp: Mcp, topic: str | None = None) -> bytes:
        self.calls.append((mcp.entityUrn, topic))
        return f"{mcp.entityUrn}|{mcp.aspectName}".encode()


def test_the_kafka_writer_returns_one_record_per_proposal_keyed_by_entity_urn() -> None:
    encoder = RecordingEncoder()
    mcps = intent_mcps(STORY.open, SETTINGS)
    records = KafkaWriter(encoder, topic="dh.mcp").write(mcps)
    assert [r.topic for r in records] == ["dh.mcp"] * len(mcps)
    assert [r.key for r in records] == [str(m.entityUrn).encode() for m in mcps]
    assert [r.value for r in records] == [f"{m.entityUrn}|{m.aspectName}".encode() for m in mcps]
    assert encoder.calls == [(m.entityUrn, "dh.mcp") for m in mcps]


def test_kafka_records_decode_back_to_the_proposals_written() -> None:
    records = KafkaWriter.from_source(VendoredSchemaSource()).write(ALL)
    decoder = Decoder(VendoredSchemaSource())
    decoded = []
    for record in records:
        assert record.topic == "MetadataChangeProposal_v1" and record.value is not None
        mcp = decoder.decode_mcp(record.value)
        assert record.key == (mcp.entity_urn or "").encode()
        decoded.append(
            Received(
                entity_type=mcp.entity_type,
                entity_urn=mcp.entity_urn or "",
                change_type=mcp.change_type,
                aspect_name=mcp.aspect_name or "",
                aspect=mcp.aspect_json(),
                system_metadata=normal_system_metadata(mcp.system_metadata),
            )
        )
    assert decoded == [received_from(m) for m in ALL]
