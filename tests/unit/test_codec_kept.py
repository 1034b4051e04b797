"""``Decoder.kept_mcl`` — the roles' one-pass filter + decode — answers exactly what ``header`` +
``decode_mcl(previous=False)`` answer: the same frames dropped, the same DecodeErrors (reason and text), and the
same values for everything the roles read; the values it leaves out are still checked as the full decode checks
them (a malformed skipped field is Poison as before)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pareis.compose.decoding import changelog_decoder
from pareis.config import Settings
from pareis.contracts.records import RawMessage
from pareis.datahub.files.metadata_file import read_proposals
from pareis.datahub.translate.lineage import LINEAGE_ASPECTS, stamp_of
from pareis.datahub.wire.changelog import ChangeLog
from pareis.datahub.wire.codec import ROLE_CREATED, ROLE_SYSTEM_METADATA, Decoder, Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.marks import is_own_write
from pareis.errors import DecodeError, Origin
from tests.support.goldens import every_golden

VERSIONED = "MetadataChangeLog_Versioned_v1"
URN = "urn:li:dataset:(urn:li:dataPlatform:snowflake,db.s.orders,PROD)"
ORIGIN = Origin(VERSIONED, 3, 42)
WANTED: list[Collection[str | None] | None] = [None, frozenset(LINEAGE_ASPECTS), frozenset({"status"}), frozenset()]


def role_view(change: ChangeLog) -> tuple[Any, ...]:
    """Everything a role reads of a ChangeLog (with the keys of system metadata and ``created`` they read)."""
    sm, created = change.system_metadata, change.created
    return (
        change.entity_type,
        change.entity_urn,
        change.change_type,
        change.aspect_name,
        change.aspect,
        change.content_type,
        change.schema_id,
        change.origin,
        None if sm is None else {k: sm.get(k) for k in sorted(ROLE_SYSTEM_METADATA)},
        None if created is None else {k: created.get(k) for k in sorted(ROLE_CREATED)},
    )


def two_step(decoder: Decoder, value: bytes, wanted: Collection[str | None] | None) -> tuple[Any, ...]:
    try:
        if wanted is not None and decoder.header(value, ORIGIN).aspect_name not in wanted:
            return ("dropped",)
        return ("kept", role_view(decoder.decode_mcl(value, ORIGIN, previous=False)))
    except DecodeError as exc:
        return ("error", exc.reason, str(exc), exc.origin)


def one_pass(decoder: Decoder, value: bytes, wanted: Collection[str | None] | None) -> tuple[Any, ...]:
    try:
        change = decoder.kept_mcl(value, wanted, ORIGIN)
    except DecodeError as exc:
        return ("error", exc.reason, str(exc), exc.origin)
    if change is None:
        return ("dropped",)
    sm, created = change.system_metadata, change.created
    assert sm is None or set(sm) == ROLE_SYSTEM_METADATA
    assert created is None or set(created) == ROLE_CREATED
    assert change.previous_aspect is None and change.headers is None
    return ("kept", role_view(change))


def assert_same(value: bytes, *, fresh: bool = False) -> None:
    """Same answer for every filter (``fresh``: also from decoders whose first frame this is)."""
    for wanted in WANTED:
        expected = two_step(DECODER, value, wanted)
        assert one_pass(DECODER, value, wanted) == expected  # plan cached: the compiled one-pass reader
        if fresh:
            assert two_step(Decoder(VendoredSchemaSource()), value, wanted) == expected
            assert one_pass(Decoder(VendoredSchemaSource()), value, wanted) == expected


def stamp(actor: str = "urn:li:corpuser:x", time: int = 1_717_000_000_123) -> dict[str, Any]:
    return {"time": time, "actor": actor, "impersonator": "urn:li:corpuser:imp", "message": "via ui"}


def full_frame(run_id: str = "snowflake-run-1", **changes: Any) -> bytes:
    """A versioned MCL with every optional part present (auditHeader, headers, prior value and metadata)."""
    lineage = {"upstreams": [{"dataset": URN, "type": "TRANSFORMED", "auditStamp": stamp()}]}
    system = {
        "lastObserved": 1_717_000_000_999,
        "runId": run_id,
        "lastRunId": "snowflake-run-0",
        "pipelineName": "urn:li:dataHubIngestionSource:snowflake",
        "registryName": "reg",
        "registryVersion": "1.0",
        "properties": {"clientId": "acryl-datahub", "writer": "someone"},
        "version": "7",
        "schemaVersion": 3,
        "aspectCreated": stamp(),
        "aspectModified": stamp(),
    }
    record = mcl_record(
        entity_urn=URN,
        aspect_name="upstreamLineage",
        aspect=lineage,
        previous_aspect=lineage,
        system_metadata=system,
        previous_system_metadata=dict(system, runId="snowflake-run-0"),
        created=stamp(),
        headers={"h": "v"},
    )
    record["auditHeader"] = {"time": 1, "server": "s", "appName": "gms", "messageId": bytes(16)}
    record.update(changes)
    return ENCODER.encode_mcl(record, VERSIONED)


ENCODER = Encoder(VendoredSchemaSource())
DECODER = Decoder(VendoredSchemaSource())


def test_the_compiled_one_pass_reader_serves_current_frames() -> None:
    value = full_frame()
    change = DECODER.kept_mcl(value, None)
    plan = DECODER._plans[int.from_bytes(value[1:5], "big")]
    assert plan.compiled_kept is not None
    record, end = plan.compiled_kept(value, 5, None)
    assert end == len(value) and record is not None
    assert change is not None and change.system_metadata == {
        "lastObserved": 1_717_000_000_999,
        "pipelineName": "urn:li:dataHubIngestionSource:snowflake",
        "properties": {"clientId": "acryl-datahub", "writer": "someone"},
        "version": "7",
    }
    assert change.created == {"time": 1_717_000_000_123, "actor": "urn:li:corpuser:x"}
    assert plan.compiled_kept(value, 5, frozenset({"status"})) == (None, value.index(b"upstreamLineage") + 15)


def test_what_the_roles_read_is_unchanged() -> None:
    settings = Settings()
    for frame in (full_frame(), full_frame(created=None, systemMetadata=None)):
        full = DECODER.decode_mcl(frame, previous=False)
        kept = DECODER.kept_mcl(frame, None)
        assert kept is not None
        assert stamp_of(kept.system_metadata, kept.created) == stamp_of(full.system_metadata, full.created)
        own = is_own_write(kept.system_metadata, kept.created, settings.datahub)
        assert own == is_own_write(full.system_metadata, full.created, settings.datahub)
        assert role_view(kept) == role_view(full)


def test_every_truncation_and_byte_change_gets_the_same_answer() -> None:
    value = full_frame()
    for cut in range(len(value)):
        assert_same(value[:cut])
    for at in range(len(value)):
        for byte in {0x00, 0x02, 0x7F, 0x80, 0xFF, value[at] ^ 0x01}:
            assert_same(value[:at] + bytes((byte,)) + value[at + 1 :])
    assert_same(value + b"\x00")


@pytest.mark.parametrize(
    "field", ["runId", "lastRunId", "registryName", "registryVersion", "impersonator", "message", "header value"]
)
def test_invalid_utf8_in_a_left_out_string_is_still_poison(field: str) -> None:
    # Strings decode_mcl decoded but no role reads are not built by kept_mcl, yet still UTF-8-checked.
    marker = "MARK\u00e9"
    if field == "header value":
        value = full_frame(headers={"h": marker})
    elif field in ("impersonator", "message"):
        value = full_frame(created=dict(stamp(), **{field: marker}))
    else:
        value = full_frame(
            systemMetadata=dict(DECODER.decode_mcl(full_frame()).system_metadata or {}, **{field: marker})
        )
    assert value.count(marker.encode()) == 1
    bad = value.replace(marker.encode(), b"MARK\xff\xfe")
    assert_same(bad, fresh=True)
    plan = DECODER._plans[int.from_bytes(bad[1:5], "big")]
    assert plan.compiled_kept is not None
    with pytest.raises(ValueError):  # the compiled reader itself rejects it (UnicodeDecodeError)
        plan.compiled_kept(bad, 5, None)
    with pytest.raises(DecodeError) as caught:
        DECODER.kept_mcl(bad, None, ORIGIN)
    assert caught.value.reason == "avro" and caught.value.origin == ORIGIN
    assert_same(bad)


def test_a_malformed_skipped_prior_value_is_still_poison() -> None:
    value = full_frame()
    # The previous system metadata's runId length, made to run past the end of the frame.
    at = value.rindex(b"snowflake-run-0") - 1
    assert value[at] == 2 * len("snowflake-run-0")
    bad = value[:at] + b"\xfe\x7f" + value[at + 1 :]  # 8,191 bytes
    with pytest.raises(DecodeError, match="run past"):
        DECODER.kept_mcl(bad, None, ORIGIN)
    assert_same(bad, fresh=True)


def test_the_role_decoder_dead_letters_what_it_dead_lettered() -> None:
    decode = changelog_decoder(Settings(), LINEAGE_ASPECTS)
    good = full_frame()
    change = decode(RawMessage(VERSIONED, 3, 42, None, good))
    assert change is not None and change.origin == ORIGIN and change.aspect_name == "upstreamLineage"
    bad = good.replace(b"snowflake-run-1", b"snowflake-run\xff\xfe")
    with pytest.raises(DecodeError) as caught:
        decode(RawMessage(VERSIONED, 3, 42, None, bad))
    assert caught.value.reason == "avro" and caught.value.origin == ORIGIN
    assert decode(RawMessage(VERSIONED, 3, 42, None, full_frame(aspectName="globalTags"))) is None


texts = st.text(max_size=12)
maybe = st.none() | texts
stamps = st.none() | st.fixed_dictionaries(
    {"time": st.integers(-(2**63), 2**63 - 1), "actor": texts, "impersonator": maybe, "message": maybe}
)
systems = st.none() | st.fixed_dictionaries(
    {
        "lastObserved": st.none() | st.integers(-(2**63), 2**63 - 1),
        "runId": maybe,
        "lastRunId": maybe,
        "pipelineName": maybe,
        "registryName": maybe,
        "registryVersion": maybe,
        "properties": st.none() | st.dictionaries(texts, texts, max_size=3),
        "version": maybe,
        "schemaVersion": st.none() | st.integers(-(2**63), 2**63 - 1),
        "aspectCreated": stamps,
        "aspectModified": stamps,
    }
)
records = st.fixed_dictionaries(
    {
        "entityType": texts,
        "entityUrn": maybe,
        "changeType": st.sampled_from(["UPSERT", "DELETE", "PATCH", "RESTATE"]),
        "aspectName": st.none() | st.sampled_from(["status", "upstreamLineage", "globalTags", ""]),
        "aspect": st.none() | st.fixed_dictionaries({"value": st.binary(max_size=200), "contentType": texts}),
        "systemMetadata": systems,
        "headers": st.none() | st.dictionaries(texts, texts, max_size=3),
        "previousAspectValue": st.none()
        | st.fixed_dictionaries({"value": st.binary(max_size=50), "contentType": texts}),
        "previousSystemMetadata": systems,
        "created": stamps,
    }
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records, st.integers(0, 2**16))
def test_equals_the_two_step_decode_on_generated_envelopes(record: dict[str, Any], cut: int) -> None:
    value = ENCODER.encode_mcl(record, VERSIONED)
    assert_same(value)
    assert_same(value[: 5 + cut % max(1, len(value) - 5)])


def golden_frames() -> list[bytes]:
    frames = []
    for proposal in read_proposals(every_golden()):
        if proposal.change_type not in ("UPSERT", "DELETE", "RESTATE", "CREATE"):
            continue
        record = mcl_record(
            entity_urn=proposal.entity_urn,
            entity_type=proposal.entity_type,
            aspect_name=proposal.aspect_name,
            aspect=proposal.aspect,
            change_type=proposal.change_type,
            previous_aspect=proposal.aspect,
            content_type=proposal.content_type,
            created={"time": 1_717_000_000_000, "actor": "urn:li:corpuser:datahub"},
        )
        system = proposal.system_metadata
        for key in ("systemMetadata", "previousSystemMetadata"):
            record[key] = {k: v for k, v in (system or {}).items() if k in SYSTEM_FIELDS} or None
        frames.append(ENCODER.encode_mcl(record, VERSIONED))
    return frames


SYSTEM_FIELDS = frozenset({"lastObserved", "runId", "lastRunId", "pipelineName", "properties", "version"})


def test_equals_the_two_step_decode_on_the_goldens() -> None:
    frames = golden_frames()
    assert len(frames) > 1000
    for value in frames:
        for wanted in WANTED:
            assert one_pass(DECODER, value, wanted) == two_step(DECODER, value, wanted)
