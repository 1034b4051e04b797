"""Runtime wiring: role resolution and the change-log decoder roles share."""

from __future__ import annotations

import pytest

from pareis.compose.decoding import changelog_decoder
from pareis.compose.roles import REGISTRY, ROLE_NAMES, resolve_roles
from pareis.config import Settings
from pareis.contracts.records import RawMessage
from pareis.datahub.wire.codec import Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.errors import DecodeError

TOPIC = "MetadataChangeLog_Versioned_v1"
URN = "urn:li:dataset:(urn:li:dataPlatform:snowflake,db.s.orders,PROD)"


def frame(aspect_name: str, aspect: object = None, pipeline: str | None = None) -> bytes:
    system = {"lastObserved": 0, "runId": "r", "pipelineName": pipeline} if pipeline else None
    record = mcl_record(entity_urn=URN, aspect_name=aspect_name, aspect=aspect, system_metadata=system)
    return Encoder(VendoredSchemaSource(), TOPIC).encode_mcl(record)


def raw(value: bytes, offset: int = 9) -> RawMessage:
    return RawMessage(TOPIC, 2, offset, URN.encode(), value)


def test_resolve_roles_expands_all_and_rejects_unknown_names() -> None:
    settings = Settings()
    assert [r.name for r in resolve_roles(["all"], settings)] == list(ROLE_NAMES)
    assert tuple(REGISTRY) == ROLE_NAMES, "the settings' role names and the registry's are one list"
    assert [r.name for r in resolve_roles(["effects", "effects"], settings)] == ["effects"]
    with pytest.raises(ValueError, match="unknown role"):
        resolve_roles(["nope"], settings)


def test_changelog_decoder_filters_on_the_aspect_before_decoding() -> None:
    decode = changelog_decoder(Settings(), aspects={"upstreamLineage"})
    assert decode(raw(frame("datasetProperties", {"name": "x"}))) is None
    change = decode(raw(frame("upstreamLineage", {"upstreams": []})))
    assert change is not None and change.entity_urn == URN and change.aspect_json() == {"upstreams": []}


def test_changelog_decoder_skips_the_prior_value() -> None:
    record = mcl_record(entity_urn=URN, aspect_name="upstreamLineage", aspect={"upstreams": []}, previous_aspect={})
    value = Encoder(VendoredSchemaSource(), TOPIC).encode_mcl(record)
    change = changelog_decoder(Settings(), aspects={"upstreamLineage"})(raw(value))
    assert change is not None and change.aspect_json() == {"upstreams": []}
    assert change.previous_aspect is None  # no role reads it: decoded with previous=False


def test_changelog_decoder_drops_pareis_own_writes() -> None:
    decode = changelog_decoder(Settings())
    assert decode(raw(frame("globalTags", {"tags": []}, pipeline="pareis"))) is None
    assert decode(raw(frame("globalTags", {"tags": []}, pipeline="someone-else"))) is not None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"\x07garbage", "framing"),
        (b"\x00\x00\x00\x03\xe7" + b"\x02", "unknown-schema"),
        (None, "avro"),  # truncated below
    ],
)
def test_changelog_decoder_errors_are_located_decode_errors(value: bytes | None, reason: str) -> None:
    if value is None:
        value = frame("upstreamLineage", {"upstreams": []})[:-7]
    with pytest.raises(DecodeError) as caught:
        changelog_decoder(Settings(), aspects={"upstreamLineage"})(raw(value, offset=41))
    assert caught.value.reason == reason
    assert caught.value.origin is not None and caught.value.origin.offset == 41
