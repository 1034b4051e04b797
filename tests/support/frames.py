"""Confluent-framed change-log frames for the runtime's integration tests (encoded with the vendored schemas)."""

from __future__ import annotations

from pareis.datahub.wire.codec import Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource

TOPIC = "MetadataChangeLog_Versioned_v1"


def good(i: int) -> bytes:
    urn = f"urn:li:dataset:(urn:li:dataPlatform:hive,db.table_{i},PROD)"
    record = mcl_record(entity_urn=urn, aspect_name="upstreamLineage", aspect={"upstreams": [], "n": i})
    return Encoder(VendoredSchemaSource(), TOPIC).encode_mcl(record)
