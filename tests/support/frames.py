"""Confluent-framed change-log frames for the runtime's integration tests (encoded with the vendored schemas)."""

from __future__ import annotations

from typing import Any

from pareis.datahub.wire.codec import Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource

TOPIC = "MetadataChangeLog_Versioned_v1"


def good(i: int) -> bytes:
    urn = f"urn:li:dataset:(urn:li:dataPlatform:hive,db.table_{i},PROD)"
    record = mcl_record(entity_urn=urn, aspect_name="upstreamLineage", aspect={"upstreams": [], "n": i})
    return Encoder(VendoredSchemaSource(), TOPIC).encode_mcl(record)


def run_event(topic: str, assertion: str, dataset: str, ts: int, run_id: str) -> bytes:
    """A failing ``assertionRunEvent`` of ``assertion`` on ``dataset`` at ``ts``, as the timeseries change log
    carries it to ``topic``."""
    aspect: dict[str, Any] = {
        "timestampMillis": ts,
        "runId": run_id,
        "asserteeUrn": dataset,
        "assertionUrn": assertion,
        "status": "COMPLETE",
        "result": {"type": "FAILURE", "nativeResults": {"failures": "3"}},
    }
    created = {"time": ts, "actor": "urn:li:corpuser:datahub"}
    record = mcl_record(entity_urn=assertion, aspect_name="assertionRunEvent", aspect=aspect, created=created)
    return Encoder(VendoredSchemaSource(), topic).encode_mcl(record)
