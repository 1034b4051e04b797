"""Poison messages interleaved with good ones: every good one processed, every poison one dead-lettered with
its original bytes and headers naming where it came from and why, and the role never stops."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from pareis.datahub.wire.codec import Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.kafka import dlq
from tests.support.frames import TOPIC, good
from tests.support.roles import RoleProcess, produce, read_topic

pytestmark = pytest.mark.integration


def poison(i: int, rng: random.Random) -> tuple[bytes, str]:
    """A poison message of one of four kinds, and the DecodeError reason expected for it."""
    kind = i % 4
    if kind == 0:  # random bytes (not Confluent framing)
        return bytes([1 + rng.randrange(255)]) + rng.randbytes(40) + i.to_bytes(4, "big"), "framing"
    if kind == 1:  # a schema id no registry knows
        return b"\x00" + (90_000 + i).to_bytes(4, "big") + good(i)[5:], "unknown-schema"
    if kind == 2:  # Avro cut short
        return good(i)[:-9], "avro"
    urn = f"urn:li:dataset:(urn:li:dataPlatform:hive,db.broken_{i},PROD)"
    record = mcl_record(entity_urn=urn, aspect_name="upstreamLineage", aspect=b'{"upstreams": [')
    return Encoder(VendoredSchemaSource(), TOPIC).encode_mcl(record), "aspect-json"


def test_poison_goes_to_the_dlq_and_the_role_goes_on(
    kafka_bootstrap: str, new_topic: Callable[..., str], new_group: str, tmp_path: Path
) -> None:
    source, output, dead = new_topic(partitions=3), new_topic(), new_topic()
    rng = random.Random(5)
    records: list[tuple[bytes, bytes]] = []
    expected_reason: dict[bytes, str] = {}
    for i in range(1200):
        if i % 6 == 5:
            value, reason = poison(i, rng)
            expected_reason[value] = reason
        else:
            value = good(i)
        records.append((f"key-{i % 17}".encode(), value))
    produce(kafka_bootstrap, source, records)
    good_count = len(records) - len(expected_reason)

    args = ("--input", source, "--output", output, "--dlq", dead, "--group", new_group, "--batch-size", "64")
    with RoleProcess("datahub", tmp_path, *args) as role:
        outputs = read_topic(kafka_bootstrap, output, good_count)
        letters = read_topic(kafka_bootstrap, dead, len(expected_reason))
        assert role.running and role.ready(), "the role must not stop on poison"
        assert role.metric("pareis_messages_dead_lettered_total") == len(expected_reason)
        assert role.terminate(15) == 0

    assert len(outputs) == good_count
    assert {m.value() for m in outputs} == {b"upstreamLineage"}
    assert len(letters) == len(expected_reason)
    originals = {(m.partition(), m.offset()): m.value() for m in read_topic(kafka_bootstrap, source, len(records))}
    for letter in letters:
        headers = dict(letter.headers())
        value = letter.value()
        assert value in expected_reason, "the original bytes, unchanged"
        assert headers[dlq.SOURCE_TOPIC] == source.encode()
        where = (int(headers[dlq.SOURCE_PARTITION]), int(headers[dlq.SOURCE_OFFSET]))
        assert originals[where] == value, "the headers locate the original message"
        assert letter.key() is not None and letter.key().startswith(b"key-")
        assert headers[dlq.ROLE] == b"datahub"
        assert headers[dlq.ERROR_CLASS] == b"DecodeError"
        assert headers[dlq.ERROR_REASON].decode() == expected_reason[value]
        assert headers[dlq.ERROR_MESSAGE]
