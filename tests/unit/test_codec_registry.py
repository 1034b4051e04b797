"""Schema sources: the Confluent-registry source against the in-process mock registry, error translation, and the
vendored source's fixed ids."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.common._httpx_compat import httpx as client_httpx
from confluent_kafka.schema_registry.error import SchemaRegistryError

from pareis.datahub.wire import schemas
from pareis.datahub.wire.codec import Decoder, Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.wire.schema_registry import RegistrySchemaSource
from pareis.errors import DecodeError, Fatal, Origin, Retriable

TOPIC = "MetadataChangeLog_Versioned_v1"
URN = "urn:li:dataset:(urn:li:dataPlatform:hive,t,PROD)"


class Counting:
    """Wraps a registry client and counts the calls that would be network round trips."""

    def __init__(self, inner: SchemaRegistryClient) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def get_schema(self, schema_id: int) -> Any:
        self.calls.append(f"get_schema {schema_id}")
        return self.inner.get_schema(schema_id)

    def register_schema(self, subject: str, schema: Schema) -> int:
        self.calls.append(f"register {subject}")
        return int(self.inner.register_schema(subject, schema))

    def lookup_schema(self, subject: str, schema: Schema) -> Any:
        self.calls.append(f"lookup {subject}")
        return self.inner.lookup_schema(subject, schema)


class Failing:
    """A registry client whose every call raises ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def get_schema(self, schema_id: int) -> Any:
        raise self.error

    def register_schema(self, subject: str, schema: Schema) -> int:
        raise self.error

    def lookup_schema(self, subject: str, schema: Schema) -> Any:
        raise self.error


@pytest.fixture
def registry() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": "mock://registry-tests"})


def record() -> dict[str, Any]:
    return mcl_record(entity_urn=URN, aspect_name="status", aspect={"removed": True})


def test_encode_registers_the_topic_subject_once(registry: SchemaRegistryClient) -> None:
    client = Counting(registry)
    source = RegistrySchemaSource(client)  # type: ignore[arg-type]
    encoder = Encoder(source, TOPIC)
    first, second = encoder.encode_mcl(record()), encoder.encode_mcl(record())
    assert client.calls == [f"register {TOPIC}-value"]
    sid = int.from_bytes(first[1:5], "big")
    assert registry.get_latest_version(f"{TOPIC}-value").schema_id == sid
    assert first == second


def test_decode_fetches_each_writer_schema_once(registry: SchemaRegistryClient) -> None:
    value = Encoder(RegistrySchemaSource(registry), TOPIC).encode_mcl(record())
    client = Counting(registry)
    decoder = Decoder(RegistrySchemaSource(client))  # type: ignore[arg-type]
    for _ in range(3):
        assert decoder.decode_mcl(value).aspect_json() == {"removed": True}
        assert decoder.header(value).aspect_name == "status"
    assert client.calls == [f"get_schema {int.from_bytes(value[1:5], 'big')}"]


def test_legacy_writer_registered_in_the_registry_resolves(registry: SchemaRegistryClient) -> None:
    sid = registry.register_schema(f"{TOPIC}-value", Schema(schemas.text(schemas.V1_MCL), "AVRO"))
    body = io.BytesIO(b"\x00" + sid.to_bytes(4, "big"))
    body.seek(5)
    fastavro.schemaless_writer(body, schemas.vendored(schemas.V1_MCL).parsed, record())
    change = Decoder(RegistrySchemaSource(registry)).decode_mcl(body.getvalue())
    assert change.schema_id == sid
    assert change.system_metadata is None and change.aspect_json() == {"removed": True}


def test_unknown_id_is_an_unknown_schema_decode_error(registry: SchemaRegistryClient) -> None:
    origin = Origin(TOPIC, 0, 42)
    with pytest.raises(DecodeError) as info:
        Decoder(RegistrySchemaSource(registry)).decode_mcl(b"\x00\x00\x00\x03\xe7" + b"\x00" * 20, origin)
    assert info.value.reason == "unknown-schema"
    assert "999" in info.value.detail and info.value.origin == origin


def test_non_avro_schema_is_unknown_and_an_unparseable_one_the_registrys_fault(registry: SchemaRegistryClient) -> None:
    json_id = registry.register_schema("other-value", Schema('{"type": "object"}', "JSON"))
    with pytest.raises(DecodeError, match="JSON schema, not Avro") as info:
        RegistrySchemaSource(registry).writer_schema(json_id)
    assert info.value.reason == "unknown-schema"

    class Garbage:
        schema_type = "AVRO"
        schema_str = '{"type": "record", "name": "X", "fields": [{"name": "a", "type": "nope"}]}'

    class GarbageClient(Failing):
        def get_schema(self, schema_id: int) -> Any:
            return Garbage()

    with pytest.raises(Retriable, match="does not parse"):
        RegistrySchemaSource(GarbageClient(RuntimeError())).writer_schema(5)  # type: ignore[arg-type]


def test_unrelated_record_schema_is_refused_by_the_decoder(registry: SchemaRegistryClient) -> None:
    other = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}'
    sid = registry.register_schema("orders-value", Schema(other, "AVRO"))
    with pytest.raises(DecodeError, match="is Order") as info:
        Decoder(RegistrySchemaSource(registry)).header(b"\x00" + sid.to_bytes(4, "big") + b"\x02")
    assert info.value.reason == "unknown-schema"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (SchemaRegistryError(503, 50301, "unavailable"), Retriable),
        (SchemaRegistryError(500, 50001, "store error"), Retriable),
        (SchemaRegistryError(429, -1, "slow down"), Retriable),
        (httpx.ConnectError("connection refused"), Retriable),
        (client_httpx.ConnectError("connection refused"), Retriable),
        (httpx.ReadTimeout("timed out"), Retriable),
        (SchemaRegistryError(401, 40101, "unauthorized"), Fatal),
        (SchemaRegistryError(403, 40301, "forbidden"), Fatal),
        (SchemaRegistryError(409, 409, "incompatible schema"), Fatal),
        # Not the registry answering: a proxy's 404 page, a gateway's 400, an SSO page with 200 (JSON error).
        (SchemaRegistryError(404, -1, "Unknown Schema Registry Error: b'<html>'"), Retriable),
        (SchemaRegistryError(400, -1, "Unknown Schema Registry Error: b'<html>'"), Retriable),
        (json.JSONDecodeError("Expecting value", "<html>", 0), Retriable),
        (KeyError("schema"), Retriable),
    ],
)
def test_registry_failures_translate(error: Exception, expected: type[Exception]) -> None:
    source = RegistrySchemaSource(Failing(error))  # type: ignore[arg-type]
    with pytest.raises(expected) as info:
        source.writer_schema(7)
    assert info.value.__cause__ is error
    with pytest.raises(expected):
        source.schema_id(TOPIC, schemas.MCL)


def test_missing_subject_on_lookup_is_fatal_and_found_subject_is_used(registry: SchemaRegistryClient) -> None:
    source = RegistrySchemaSource(registry, auto_register=False)
    with pytest.raises(Fatal, match="404"):
        source.schema_id(TOPIC, schemas.MCL)
    sid = registry.register_schema(f"{TOPIC}-value", Schema(schemas.text(schemas.CURRENT_FILES[schemas.MCL]), "AVRO"))
    assert source.schema_id(TOPIC, schemas.MCL) == sid


def test_unreachable_registry_is_retriable() -> None:
    # Port 9 on localhost: nothing listens, so the connection is refused at once.
    conf: dict[str, Any] = {"max.retries": 0}
    source = RegistrySchemaSource.connect("http://127.0.0.1:9", **conf)
    with pytest.raises(Retriable, match="unreachable"):
        source.writer_schema(1)


def test_vendored_source_ids() -> None:
    source = VendoredSchemaSource(timeseries_topic="ts")
    assert source.schema_id(TOPIC, schemas.MCL) == 18
    assert source.schema_id("ts", schemas.MCL) == 19
    assert source.schema_id("MetadataChangeProposal_v1", schemas.MCP) == 16
    assert source.schema_id("PlatformEvent_v1", schemas.PLATFORM_EVENT) == 4
    with pytest.raises(ValueError):
        source.schema_id(TOPIC, "FailedMetadataChangeProposal")
    assert source.writer_schema(19).kind == schemas.MCL
    with pytest.raises(DecodeError) as info:
        source.writer_schema(5)
    assert info.value.reason == "unknown-schema"
