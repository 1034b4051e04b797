"""Fuzz: whatever bytes arrive, the decoder answers with a result or a DecodeError — never another exception,
never a hang (pytest-timeout bounds each test; the header reader refuses implausible block counts)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pareis.datahub.wire.codec import Decoder, Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.errors import DecodeError, Origin

URN = "urn:li:dataset:(urn:li:dataPlatform:snowflake,db.s.orders,PROD)"
ORIGIN = Origin("MetadataChangeLog_Versioned_v1", 0, 7)
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _valid_frames() -> list[bytes]:
    encoder = Encoder(VendoredSchemaSource())
    lineage = {
        "upstreams": [{"dataset": URN, "type": "TRANSFORMED", "auditStamp": {"time": 0, "actor": "urn:li:corpuser:x"}}]
    }
    full = mcl_record(
        entity_urn=URN,
        aspect_name="upstreamLineage",
        aspect=lineage,
        previous_aspect=lineage,
        system_metadata={"lastObserved": 1, "runId": "r", "properties": {"a": "b"}, "version": "2"},
        previous_system_metadata={"lastObserved": 0, "runId": "r"},
        created={"time": 1, "actor": "urn:li:corpuser:x"},
        headers={"h": "v"},
    )
    full["auditHeader"] = {"time": 1, "server": "s", "appName": "gms", "messageId": bytes(16)}
    return [
        encoder.encode_mcl(full, "MetadataChangeLog_Versioned_v1"),
        encoder.encode_mcl(mcl_record(entity_urn=URN, aspect_name="status", aspect={"removed": False}), "x"),
        encoder.encode_mcp({"entityType": "dataset", "entityUrn": URN, "changeType": "UPSERT"}, "p"),
        encoder.encode_platform_event(
            {
                "header": {"timestampMillis": 1},
                "name": "entityChangeEvent",
                "payload": {"value": b"{}", "contentType": "j"},
            },
            "pe",
        ),
    ]


FRAMES = _valid_frames()
DECODER = Decoder(VendoredSchemaSource())


def _calls(decoder: Decoder) -> list[Callable[[bytes, Origin], Any]]:
    return [
        decoder.header,
        decoder.decode_mcl,
        lambda v, o: decoder.decode_mcl(v, o, previous=False),
        decoder.decode_mcp,
        decoder.decode_platform_event,
        decoder.decode_record,
        lambda v, o: decoder.decode_mcl(v, o).aspect_json(),
        lambda v, o: decoder.kept_mcl(v, None, o),
        lambda v, o: decoder.kept_mcl(v, frozenset({"upstreamLineage"}), o),
    ]


def _only_decode_errors(value: bytes) -> None:
    for call in _calls(DECODER):
        try:
            call(value, ORIGIN)
        except DecodeError as exc:
            assert exc.origin == ORIGIN
            assert exc.reason in {"framing", "unknown-schema", "avro", "aspect-json"}


@pytest.mark.timeout(300)
@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(value: bytes) -> None:
    _only_decode_errors(value)


@pytest.mark.timeout(300)
@FUZZ
@given(st.sampled_from([2, 3, 4, 16, 18, 19, 0, 11]), st.binary(max_size=400))
def test_random_bodies_under_known_ids(schema_id: int, body: bytes) -> None:
    _only_decode_errors(b"\x00" + schema_id.to_bytes(4, "big") + body)


@pytest.mark.timeout(300)
@FUZZ
@given(st.sampled_from(FRAMES), st.data())
def test_truncated_frames(frame: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(frame) - 1))
    _only_decode_errors(frame[:cut])


@pytest.mark.timeout(300)
@FUZZ
@given(
    st.sampled_from(FRAMES),
    st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), min_size=1, max_size=8),
)
def test_mutated_frames(frame: bytes, edits: list[tuple[int, int]]) -> None:
    mutated = bytearray(frame)
    for where, byte in edits:
        mutated[5 + where % (len(frame) - 5)] = byte
    _only_decode_errors(bytes(mutated))


@pytest.mark.timeout(300)
@FUZZ
@given(st.sampled_from(FRAMES), st.integers(min_value=5), st.binary(min_size=1, max_size=12))
def test_frames_with_inserted_bytes(frame: bytes, where: int, extra: bytes) -> None:
    at = 5 + where % (len(frame) - 5)
    _only_decode_errors(frame[:at] + extra + frame[at:])


def test_huge_counts_and_lengths_fail_fast() -> None:
    # auditHeader present (branch 1) with a server string claiming 2**62 bytes; an entityKeyAspect with a huge
    # value length; a multi-byte varint that never ends.
    huge = b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"
    for body in (b"\x02\x02" + huge, b"\x00\x02ab\x00\x02" + huge, b"\x02" + b"\xff" * 40):
        for call in _calls(DECODER):
            with pytest.raises(DecodeError):
                call(b"\x00\x00\x00\x00\x12" + body, ORIGIN)
