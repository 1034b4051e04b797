"""Decoding: framing, typed errors, legacy (v1) resolution, the header fast path, PlatformEvent frames."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import orjson
import pytest
from datahub.metadata import schema_classes as sc
from hypothesis import given, settings
from hypothesis import strategies as st

from pareis.datahub.wire import schemas
from pareis.datahub.wire.aspects import is_timeseries, mcl_topic, timeseries_aspects, typed_aspect
from pareis.datahub.wire.changelog import ChangeLog
from pareis.datahub.wire.codec import Decoder, Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.errors import DecodeError, Origin, Poison

VERSIONED = "MetadataChangeLog_Versioned_v1"
URN = "urn:li:dataset:(urn:li:dataPlatform:snowflake,db.s.orders,PROD)"
ORIGIN = Origin("MetadataChangeLog_Versioned_v1", 3, 1234)
CHANGE_TYPES = ("UPSERT", "CREATE", "UPDATE", "DELETE", "PATCH", "RESTATE", "CREATE_ENTITY")


def frame(schema_id: int, schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    out.write(b"\x00" + schema_id.to_bytes(4, "big"))
    fastavro.schemaless_writer(out, schema, record)
    return out.getvalue()


def status_mcl(**overrides: Any) -> dict[str, Any]:
    record = mcl_record(
        entity_urn=URN,
        aspect_name="status",
        aspect={"removed": False},
        system_metadata={"lastObserved": 5, "runId": "r1", "version": "3"},
        created={"time": 7, "actor": "urn:li:corpuser:a"},
    )
    record.update(overrides)
    return record


@pytest.fixture
def decoder() -> Decoder:
    return Decoder(VendoredSchemaSource())


def current_frame(record: dict[str, Any], schema_id: int = 18) -> bytes:
    return frame(schema_id, schemas.current(schemas.MCL).parsed, record)


def reason(exc: pytest.ExceptionInfo[DecodeError]) -> str:
    return exc.value.reason


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"", "shorter than its 5-byte header"),
        (b"\x00\x00\x00", "shorter than its 5-byte header"),
        (b"\x02\x00\x00\x00\x12abc", "magic byte 0x02"),
        (b"\x01" + bytes(16) + b"abc", "schema-GUID framing"),
        (b'{"json": true}', "magic byte 0x7b"),
    ],
)
def test_bad_framing_is_a_located_decode_error(decoder: Decoder, value: bytes, expected: str) -> None:
    for decode in (decoder.header, decoder.decode_mcl, decoder.decode_mcp, decoder.decode_platform_event):
        with pytest.raises(DecodeError) as info:
            decode(value, ORIGIN)
        assert reason(info) == "framing"
        assert expected in info.value.detail
        assert info.value.origin == ORIGIN
        assert "MetadataChangeLog_Versioned_v1[3]@1234" in str(info.value)


def test_unknown_schema_id_is_named(decoder: Decoder) -> None:
    value = current_frame(status_mcl(), schema_id=77)
    for decode in (decoder.header, decoder.decode_mcl):
        with pytest.raises(DecodeError) as info:
            decode(value, ORIGIN)
        assert reason(info) == "unknown-schema"
        assert "77" in info.value.detail
        assert info.value.origin == ORIGIN


def test_frame_of_another_kind_is_refused(decoder: Decoder) -> None:
    mcp = Encoder(VendoredSchemaSource(), "MetadataChangeProposal_v1").encode_mcp(
        {"entityType": "dataset", "entityUrn": URN, "changeType": "UPSERT", "aspectName": "status"}
    )
    with pytest.raises(DecodeError) as info:
        decoder.decode_mcl(mcp)
    assert reason(info) == "unknown-schema"
    assert "MetadataChangeProposal, not MetadataChangeLog" in info.value.detail
    assert decoder.decode_mcp(mcp).header == ("dataset", URN, "UPSERT", "status")


def test_truncated_and_padded_bodies_are_avro_errors(decoder: Decoder) -> None:
    value = current_frame(status_mcl())
    for cut in (6, len(value) // 2, len(value) - 1):
        with pytest.raises(DecodeError) as info:
            decoder.decode_mcl(value[:cut], ORIGIN)
        assert reason(info) == "avro"
    with pytest.raises(DecodeError) as info:
        decoder.decode_mcl(value + b"\x00\x00", ORIGIN)
    assert reason(info) == "avro"
    assert "2 bytes left" in info.value.detail


def test_decoded_change_log_carries_every_field(decoder: Decoder) -> None:
    previous = {"value": b'{"removed":true}', "contentType": "application/json"}
    change = decoder.decode_mcl(
        current_frame(status_mcl(previousAspectValue=previous, headers={"If-Version-Match": "2"})), ORIGIN
    )
    assert change == ChangeLog(
        entity_type="dataset",
        entity_urn=URN,
        change_type="UPSERT",
        aspect_name="status",
        aspect=b'{"removed":false}',
        previous_aspect=b'{"removed":true}',
        system_metadata={
            "lastObserved": 5,
            "runId": "r1",
            "lastRunId": "no-run-id-provided",
            "pipelineName": None,
            "registryName": None,
            "registryVersion": None,
            "properties": None,
            "version": "3",
            "schemaVersion": None,
            "aspectCreated": None,
            "aspectModified": None,
        },
        created={"time": 7, "actor": "urn:li:corpuser:a", "impersonator": None, "message": None},
        headers={"If-Version-Match": "2"},
        schema_id=18,
        content_type="application/json",
    )
    assert change.origin == ORIGIN
    assert change.aspect_json() == {"removed": False}
    assert change.previous_aspect_json() == {"removed": True}


def test_delete_has_no_aspect(decoder: Decoder) -> None:
    change = decoder.decode_mcl(current_frame(status_mcl(changeType="DELETE", aspect=None)))
    assert change.change_type == "DELETE"
    assert change.aspect is None and change.aspect_json() is None and change.content_type is None


def test_malformed_aspect_json_is_an_aspect_json_error(decoder: Decoder) -> None:
    bad = {"value": b'{"removed": fal', "contentType": "application/json"}
    change = decoder.decode_mcl(current_frame(status_mcl(aspect=bad)), ORIGIN)
    with pytest.raises(DecodeError) as info:
        change.aspect_json()
    assert reason(info) == "aspect-json"
    assert info.value.origin == ORIGIN
    assert URN in info.value.detail


def test_typed_aspect_errors() -> None:
    with pytest.raises(DecodeError) as info:
        typed_aspect("noSuchAspect", {})
    assert reason(info) == "unknown-aspect"
    with pytest.raises(DecodeError) as info:
        typed_aspect("upstreamLineage", [1, 2])
    assert reason(info) == "aspect-json"
    with pytest.raises(DecodeError) as info:
        typed_aspect("siblings", {"primary": True})
    assert reason(info) == "aspect-json"
    assert "missing required field" in info.value.detail
    misfit = {"siblings": "not-a-list-of-urns", "primary": {"x": 1}}
    with pytest.raises(DecodeError) as info:
        typed_aspect("siblings", misfit)
    assert reason(info) == "aspect-json"
    assert typed_aspect("siblings", misfit, validate=False).primary == {"x": 1}


def test_v1_message_resolves_into_the_current_shape(decoder: Decoder) -> None:
    v1 = schemas.vendored(schemas.V1_MCL).parsed
    record = status_mcl()
    for schema_id in (2, 3, 11, 12):
        old = decoder.decode_mcl(frame(schema_id, v1, record), ORIGIN)
        new = decoder.decode_mcl(current_frame(record))
        assert old.schema_id == schema_id
        assert old == ChangeLog(**{**_fields(new), "schema_id": schema_id})
        assert old.system_metadata is not None
        assert old.system_metadata["schemaVersion"] is None and old.system_metadata["aspectModified"] is None
        assert decoder.header(frame(schema_id, v1, record)) == new.header


def test_v1_bytes_are_not_current_bytes(decoder: Decoder) -> None:
    # Why decoding goes by writer id: the same record under the current id does not decode as such.
    v1_bytes = frame(2, schemas.vendored(schemas.V1_MCL).parsed, status_mcl())
    relabelled = v1_bytes[:4] + bytes([18]) + v1_bytes[5:]
    try:
        change = decoder.decode_mcl(relabelled)
    except DecodeError as exc:
        assert exc.reason == "avro"
    else:
        assert change.created != decoder.decode_mcl(v1_bytes).created


def test_v1_proposal_resolves(decoder: Decoder) -> None:
    v1 = schemas.vendored(schemas.V1_MCP).parsed
    record = {"entityType": "dataset", "entityUrn": URN, "changeType": "UPSERT", "aspectName": "status"}
    change = decoder.decode_mcp(frame(0, v1, record))
    assert change.header == ("dataset", URN, "UPSERT", "status")
    assert change.previous_aspect is None and change.created is None


def _fields(change: ChangeLog) -> dict[str, Any]:
    return {name: getattr(change, name) for name in ChangeLog.__slots__ if name != "origin"}


AUDIT_HEADER = {
    "time": 1,
    "server": "gms-0",
    "instance": "i001",
    "appName": "gms",
    "messageId": b"0123456789abcdef",
    "auditVersion": 1,
    "fabricUrn": None,
    "clusterConnectionString": "kafka:9092",
}
texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)


@pytest.mark.slow  # hundreds of Hypothesis examples: `make test` runs it, `make unit` does not
@settings(max_examples=300, deadline=None)
@given(
    entity_type=texts,
    urn=st.none() | texts,
    change_type=st.sampled_from(CHANGE_TYPES),
    aspect_name=st.none() | texts,
    audit=st.booleans(),
    key_aspect=st.none() | st.binary(max_size=200),
    v1=st.booleans(),
)
def test_header_fast_path_agrees_with_full_decode(
    entity_type: str,
    urn: str | None,
    change_type: str,
    aspect_name: str | None,
    audit: bool,
    key_aspect: bytes | None,
    v1: bool,
) -> None:
    record = status_mcl(
        entityType=entity_type,
        entityUrn=urn,
        changeType=change_type,
        aspectName=aspect_name,
        auditHeader=AUDIT_HEADER if audit else None,
        entityKeyAspect=None if key_aspect is None else {"value": key_aspect, "contentType": "application/json"},
    )
    schema = schemas.vendored(schemas.V1_MCL).parsed if v1 else schemas.current(schemas.MCL).parsed
    value = frame(2 if v1 else 18, schema, record)
    decoder = Decoder(VendoredSchemaSource())
    assert decoder.header(value) == decoder.decode_mcl(value).header == (entity_type, urn, change_type, aspect_name)


def test_header_reader_is_built_from_the_writer_schema() -> None:
    # A writer that reorders fields and adds an unknown record before the header still reads correctly.
    schema = json.loads(schemas.text(schemas.CURRENT_FILES[schemas.MCL]))
    extra = {
        "name": "extra",
        "type": {
            "type": "record",
            "name": "Extra",
            "fields": [
                {"name": "tags", "type": {"type": "array", "items": "string"}},
                {"name": "weights", "type": {"type": "map", "values": ["null", "double", "boolean"]}},
                {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
                {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
                {"name": "f", "type": "float"},
            ],
        },
    }
    fields = schema["fields"]
    schema["fields"] = [fields[0], extra, fields[5], fields[3], fields[1], fields[4], fields[2], *fields[6:]]
    writer = schemas.parse_writer(500, schema).parsed
    record = status_mcl(
        extra={
            "tags": ["a", "b"],
            "weights": {"x": 1.5, "y": None, "z": True},
            "digest": b"abcd",
            "kind": "B",
            "f": 2.0,
        }
    )

    class OneSchema(VendoredSchemaSource):
        def writer_schema(self, schema_id: int) -> schemas.WriterSchema:
            return schemas.parse_writer(schema_id, schema)

    decoder = Decoder(OneSchema())
    value = frame(500, writer, record)
    assert decoder.header(value) == ("dataset", URN, "UPSERT", "status")
    assert decoder.decode_mcl(value).header == ("dataset", URN, "UPSERT", "status")


def test_platform_event_round_trip(decoder: Decoder) -> None:
    payload = orjson.dumps(
        {
            "entityType": "assertion",
            "entityUrn": "urn:li:assertion:x",
            "category": "RUN",
            "operation": "COMPLETED",
            "parameters": {"runResult": "COMPLETE", "assertionResult": "FAILURE"},
            "auditStamp": {"time": 9, "actor": "urn:li:corpuser:datahub"},
            "version": 0,
        }
    )
    event = sc.PlatformEventClass(
        header=sc.PlatformEventHeaderClass(timestampMillis=9),
        name="entityChangeEvent",
        payload=sc.GenericPayloadClass(value=payload, contentType="application/json"),
    )
    value = Encoder(VendoredSchemaSource(), "PlatformEvent_v1").encode_platform_event(event)
    decoded = decoder.decode_platform_event(value, ORIGIN)
    assert (decoded.name, decoded.timestamp_ms, decoded.schema_id) == ("entityChangeEvent", 9, 4)
    assert decoded.payload_json()["parameters"]["assertionResult"] == "FAILURE"
    kind, record = decoder.decode_record(value)
    assert kind == "PlatformEvent"
    assert sc.PlatformEventClass.from_obj(record) == event
    with pytest.raises(DecodeError) as info:
        decoder.header(value)
    assert reason(info) == "unknown-schema"
    broken = Encoder(VendoredSchemaSource(), "PlatformEvent_v1").encode_platform_event(
        {"header": {"timestampMillis": 1}, "name": "x", "payload": {"value": b"{", "contentType": "application/json"}}
    )
    with pytest.raises(DecodeError) as info:
        decoder.decode_platform_event(broken).payload_json()
    assert reason(info) == "aspect-json"


def test_timeseries_routing_follows_acryl_datahub() -> None:
    assert timeseries_aspects() == {
        "assertionRunEvent",
        "chartUsageStatistics",
        "dashboardUsageStatistics",
        "dataProcessInstanceRunEvent",
        "datahubIngestionCheckpoint",
        "datahubIngestionRunSummary",
        "datasetProfile",
        "datasetUsageStatistics",
        "documentUsageStatistics",
        "operation",
        "queryUsageStatistics",
    }
    assert is_timeseries("assertionRunEvent") and not is_timeseries("assertionInfo")
    assert not is_timeseries(None) and not is_timeseries("noSuchAspect")
    topics = {"versioned": "V", "timeseries": "T"}
    assert mcl_topic("datasetProfile", **topics) == "T"
    assert mcl_topic("upstreamLineage", **topics) == "V"


def test_encoder_ids_follow_the_topic() -> None:
    encoder = Encoder(VendoredSchemaSource(timeseries_topic="ts"))
    record = status_mcl()
    assert encoder.encode_mcl(record, "ts")[:5] == b"\x00\x00\x00\x00\x13"
    assert encoder.encode_mcl(record, VERSIONED)[:5] == b"\x00\x00\x00\x00\x12"
    with pytest.raises(ValueError, match="no topic"):
        encoder.encode_mcl(record)


def test_off_schema_record_is_refused_on_encode() -> None:
    encoder = Encoder(VendoredSchemaSource(), VERSIONED)
    with pytest.raises(Poison, match="cannot encode MetadataChangeLog"):
        encoder.encode_mcl(status_mcl(changeType="MERGE"))
    with pytest.raises(Poison):
        encoder.encode_mcl(status_mcl(unknownField=1))
    with pytest.raises(Poison):
        encoder.encode_mcl({"entityUrn": URN})


system_metadatas = st.none() | st.fixed_dictionaries(
    {"lastObserved": st.integers(min_value=-(2**63), max_value=2**63 - 1), "runId": texts},
    optional={"version": st.none() | texts, "pipelineName": st.none() | texts},
)
generic_aspects = st.none() | st.fixed_dictionaries({"value": st.binary(max_size=300), "contentType": texts})


@pytest.mark.slow  # hundreds of Hypothesis examples: `make test` runs it, `make unit` does not
@settings(max_examples=300, deadline=None)
@given(
    change_type=st.sampled_from(CHANGE_TYPES),
    aspect=generic_aspects,
    previous=generic_aspects,
    system=system_metadatas,
    previous_system=system_metadatas,
    headers=st.none() | st.dictionaries(texts, texts, max_size=3),
    audit=st.booleans(),
    v1=st.booleans(),
)
def test_decode_without_previous_equals_the_full_decode_but_the_previous_fields(
    change_type: str,
    aspect: dict[str, Any] | None,
    previous: dict[str, Any] | None,
    system: dict[str, Any] | None,
    previous_system: dict[str, Any] | None,
    headers: dict[str, str] | None,
    audit: bool,
    v1: bool,
) -> None:
    record = status_mcl(
        changeType=change_type,
        aspect=aspect,
        previousAspectValue=previous,
        systemMetadata=system,
        previousSystemMetadata=previous_system,
        headers=headers,
        auditHeader=AUDIT_HEADER if audit else None,
    )
    schema = schemas.vendored(schemas.V1_MCL).parsed if v1 else schemas.current(schemas.MCL).parsed
    value = frame(2 if v1 else 18, schema, record)
    decoder = Decoder(VendoredSchemaSource())
    full = decoder.decode_mcl(value, ORIGIN)
    lean = decoder.decode_mcl(value, ORIGIN, previous=False)
    assert lean.previous_aspect is None
    assert _fields(lean) == {**_fields(full), "previous_aspect": None}
    assert lean.origin == ORIGIN
    assert decoder.decode_mcl(value) == full  # the full plan is not replaced by the lean one


def test_decode_without_previous_uses_a_second_compiled_plan(decoder: Decoder) -> None:
    previous = {"value": b'{"removed":true}', "contentType": "application/json"}
    value = current_frame(status_mcl(previousAspectValue=previous, previousSystemMetadata={"lastObserved": 1}))
    assert decoder.decode_mcl(value).previous_aspect == b'{"removed":true}'
    assert decoder.decode_mcl(value, previous=False).previous_aspect is None
    plan = decoder._plans[18]
    assert plan.compiled_change_log is not None and plan.compiled_current is not None
    assert plan.compiled_current is not plan.compiled_change_log
    record, end = plan.compiled_current(value, 5)
    assert "previousAspectValue" not in record and "previousSystemMetadata" not in record and end == len(value)


def test_decode_without_previous_still_refuses_a_truncated_prior_value(decoder: Decoder) -> None:
    previous = {"value": b"x" * 50, "contentType": "application/json"}
    value = current_frame(status_mcl(previousAspectValue=previous, previousSystemMetadata={"lastObserved": 1}))
    for cut in range(len(value) - 1, 5, -7):
        with pytest.raises(DecodeError) as exc:
            decoder.decode_mcl(value[:cut], ORIGIN, previous=False)
        assert reason(exc) == "avro" and exc.value.origin == ORIGIN
