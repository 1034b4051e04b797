"""The compiled record reader returns exactly what fastavro returns, and the codec uses it only where no schema
resolution is involved."""

from __future__ import annotations

import io
import math
from typing import Any, cast

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pareis.datahub.wire import schemas
from pareis.datahub.wire.codec import Decoder, Encoder, mcl_record
from pareis.datahub.wire.prefix import BadAvro
from pareis.datahub.wire.record_reader import compile_record_reader
from pareis.datahub.wire.registry import VendoredSchemaSource


def parse(schema: dict[str, Any]) -> dict[str, Any]:
    return cast(dict[str, Any], fastavro.parse_schema(schema))


def read_with_fastavro(schema: dict[str, Any], value: bytes) -> dict[str, Any]:
    return cast(dict[str, Any], fastavro.schemaless_reader(io.BytesIO(value[5:]), schema))


EVERY_TYPE = parse(
    {
        "type": "record",
        "name": "Every",
        "namespace": "test",
        "fields": [
            {"name": "flag", "type": "boolean"},
            {"name": "small", "type": "int"},
            {"name": "big", "type": "long"},
            {"name": "ratio", "type": "float"},
            {"name": "exact", "type": "double"},
            {"name": "blob", "type": "bytes"},
            {"name": "text", "type": "string"},
            {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
            {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "props", "type": {"type": "map", "values": ["null", "long", "string"]}},
            {
                "name": "maybe",
                "type": ["null", {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "long"}]}],
            },
            {"name": "either", "type": ["string", "null", "Inner"]},
            {"name": "nested", "type": {"type": "array", "items": {"type": "map", "values": "Digest"}}},
            {"name": "kinds", "type": {"type": "array", "items": "Kind"}},
        ],
    }
)

texts = st.text(max_size=40)
values = st.fixed_dictionaries(
    {
        "flag": st.booleans(),
        "small": st.integers(-(2**31), 2**31 - 1),
        "big": st.integers(-(2**63), 2**63 - 1),
        "ratio": st.floats(width=32, allow_nan=False),
        "exact": st.floats(allow_nan=False),
        "blob": st.binary(max_size=60),
        "text": texts,
        "digest": st.binary(min_size=4, max_size=4),
        "kind": st.sampled_from(["A", "B", "C"]),
        "tags": st.lists(texts, max_size=5),
        "props": st.dictionaries(texts, st.none() | st.integers(-(2**63), 2**63 - 1) | texts, max_size=5),
        "maybe": st.none() | st.fixed_dictionaries({"x": st.integers(-(2**63), 2**63 - 1)}),
        "either": st.none() | texts | st.fixed_dictionaries({"x": st.integers(0, 9)}),
        "nested": st.lists(st.dictionaries(texts, st.binary(min_size=4, max_size=4), max_size=3), max_size=3),
        "kinds": st.lists(st.sampled_from(["A", "B", "C"]), max_size=4),
    }
)


def encode(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    out.write(b"\x00\x00\x00\x00\x01")
    fastavro.schemaless_writer(out, schema, record)
    return out.getvalue()


@pytest.mark.slow  # hundreds of Hypothesis examples: `make test` runs it, `make unit` does not
@settings(max_examples=300, deadline=None)
@given(values)
def test_equals_fastavro_on_every_type(record: dict[str, Any]) -> None:
    value = encode(EVERY_TYPE, record)
    expected = read_with_fastavro(EVERY_TYPE, value)
    got, end = compile_record_reader(EVERY_TYPE)(value, 5)
    assert end == len(value)
    assert got == expected
    assert math.isclose(got["ratio"], record["ratio"], rel_tol=1e-6) or got["ratio"] == record["ratio"]


def test_blocks_with_byte_sizes_are_read() -> None:
    # Writers may emit a negative block count followed by the block's byte size (Java's blocking encoder).
    schema = parse(
        {"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "array", "items": "long"}}]}
    )
    value = b"\x00\x00\x00\x00\x01" + b"\x05" + b"\x06" + b"\x02\x04\x06" + b"\x00"  # count -3, 3 bytes, [1, 2, 3]
    assert read_with_fastavro(schema, value) == {"a": [1, 2, 3]}
    assert compile_record_reader(schema)(value, 5) == ({"a": [1, 2, 3]}, len(value))


def test_malformed_input_raises_the_documented_errors() -> None:
    reader = compile_record_reader(EVERY_TYPE)
    value = encode(
        EVERY_TYPE,
        {
            "flag": True,
            "small": 1,
            "big": 2,
            "ratio": 1.0,
            "exact": 2.0,
            "blob": b"x",
            "text": "y",
            "digest": b"abcd",
            "kind": "C",
            "tags": ["t"],
            "props": {"k": 1},
            "maybe": None,
            "either": "e",
            "nested": [],
            "kinds": [],
        },
    )
    for cut in range(5, len(value)):
        with pytest.raises((BadAvro, IndexError, ValueError)):
            reader(value[:cut], 5)


def test_schemas_left_to_fastavro() -> None:
    with pytest.raises(ValueError, match="logical type"):
        compile_record_reader(
            parse(
                {
                    "type": "record",
                    "name": "T",
                    "fields": [{"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}],
                }
            )
        )
    with pytest.raises(ValueError, match="recursive"):
        compile_record_reader(
            parse({"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]})
        )


def test_codec_reads_current_frames_compiled_and_legacy_frames_with_fastavro() -> None:
    record = mcl_record(
        entity_urn="urn:li:dataset:(urn:li:dataPlatform:hive,t,PROD)",
        aspect_name="status",
        aspect={"removed": False},
        system_metadata={"lastObserved": 1, "runId": "r", "aspectCreated": {"time": 1, "actor": "urn:li:corpuser:a"}},
        created={"time": 2, "actor": "urn:li:corpuser:a"},
    )
    current = Encoder(VendoredSchemaSource(), "t").encode_mcl(record)
    compiled, _ = compile_record_reader(schemas.current(schemas.MCL).parsed)(current, 5)
    assert compiled == fastavro.schemaless_reader(io.BytesIO(current[5:]), schemas.current(schemas.MCL).parsed)

    decoder = Decoder(VendoredSchemaSource())
    assert decoder.decode_mcl(current).system_metadata == compiled["systemMetadata"]
    legacy = record | {"systemMetadata": {"lastObserved": 1, "runId": "r"}}
    out = io.BytesIO()
    out.write(b"\x00\x00\x00\x00\x02")
    fastavro.schemaless_writer(out, schemas.vendored(schemas.V1_MCL).parsed, legacy)
    resolved = decoder.decode_mcl(out.getvalue()).system_metadata
    assert resolved is not None and resolved["aspectCreated"] is None and resolved["schemaVersion"] is None
    plans = decoder._plans  # the plan per id records which reader serves it
    assert plans[18].compiled is not None and plans[2].compiled is None and plans[2].reader is not None


@settings(max_examples=100, deadline=None)
@given(values)
def test_kept_fields_equal_fastavro_and_the_rest_is_skipped(record: dict[str, Any]) -> None:
    value = encode(EVERY_TYPE, record)
    expected = read_with_fastavro(EVERY_TYPE, value)
    keep = frozenset({"flag", "text", "either", "kinds"})
    got, end = compile_record_reader(EVERY_TYPE, keep)(value, 5)
    assert end == len(value)
    assert got == {name: expected[name] for name in keep}
