"""`pareis replay` on the real broker: each change on the right topic, keyed by its entity, readable by DataHub."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import MetadataChangeLogClass

from pareis.datahub.files.metadata_file import read_proposals
from pareis.datahub.gms.emulator import ChangeLogEmulator
from pareis.datahub.wire.aspects import is_timeseries
from pareis.datahub.wire.codec import Decoder, Encoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.wire.schema_registry import RegistrySchemaSource
from pareis.kafka.publisher import KafkaPublisher
from pareis.replay import Replayer, proposal_clock

pytestmark = pytest.mark.integration
SAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "sample" / "timeline.json"


def consume_all(bootstrap: str, topic: str, group: str, expected: int) -> list[tuple[bytes, bytes]]:
    config = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    consumer = Consumer({**config, "enable.auto.commit": False})
    consumer.subscribe([topic])
    out: list[tuple[bytes, bytes]] = []
    try:
        for _ in range(120):  # bounded: at most ~120 s of empty polls
            for message in consumer.consume(500, 1.0):
                assert message.error() is None, message.error()
                out.append((message.key(), message.value()))
            if len(out) >= expected:
                break
    finally:
        consumer.close()
    return out


def test_replay_lands_each_change_on_its_topic_readable_by_acryl(
    kafka_bootstrap: str, new_topic: Callable[..., str], new_group: str
) -> None:
    versioned, timeseries = new_topic(3), new_topic(3)
    registry = SchemaRegistryClient.new_client({"url": "mock://replay"})
    proposals = list(read_proposals([SAMPLE]))
    replayer = Replayer(
        ChangeLogEmulator(is_timeseries),
        Encoder(RegistrySchemaSource(registry)),
        KafkaPublisher(kafka_bootstrap),
        {"versioned": versioned, "timeseries": timeseries},
        proposal_clock(0),
    )
    report = replayer.run(proposals)
    expected_ts = sum(is_timeseries(p.aspect_name) for p in proposals)
    assert report.published[timeseries] == expected_ts > 0
    assert report.hook_writes > 0  # the sample's warehouse tables get their dbt siblings as GMS's hook writes them
    assert report.published[versioned] == len(proposals) - expected_ts - report.unchanged + report.hook_writes

    deserializer = AvroDeserializer(registry, return_record_name=True)
    for topic, timeseries_topic in ((versioned, False), (timeseries, True)):
        messages = consume_all(kafka_bootstrap, topic, new_group + topic, report.published[topic])
        assert len(messages) == report.published[topic]
        for key, value in messages:
            obj = deserializer(value, SerializationContext(topic, MessageField.VALUE))
            mcl = MetadataChangeLogClass.from_obj(obj, tuples=True)
            assert mcl.validate()
            assert key.decode() == mcl.entityUrn
            assert is_timeseries(mcl.aspectName) is timeseries_topic
            wrapped = MetadataChangeProposalWrapper.try_from_mcl(mcl)
            if mcl.changeType == "UPSERT":
                assert isinstance(wrapped, MetadataChangeProposalWrapper) and wrapped.aspect is not None
                assert wrapped.aspect.validate()


def test_replay_command_publishes_with_datahub_internal_ids(
    kafka_bootstrap: str, new_topic: Callable[..., str], new_group: str
) -> None:
    versioned, timeseries = new_topic(), new_topic()
    command = [sys.executable, "-m", "pareis.cli", "replay", str(SAMPLE)]
    command += ["--bootstrap-servers", kafka_bootstrap, "--versioned-topic", versioned]
    command += ["--timeseries-topic", timeseries]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ}, check=False)
    assert done.returncode == 0, done.stderr
    decoder = Decoder(VendoredSchemaSource(timeseries))
    runs = consume_all(kafka_bootstrap, timeseries, new_group, 18)
    assert len(runs) == 18
    changes = [decoder.decode_mcl(value) for _, value in runs]
    assert {c.aspect_name for c in changes} == {"assertionRunEvent"}
    assert all(value[1:5] == (19).to_bytes(4, "big") for _, value in runs), "GMS frames the timeseries log with id 19"
