"""Live re-evaluation on the real stack (DESIGN §3): Kafka, Redis and the production entry point of the lineage,
assertions and incidents roles. The sample's incident is opened by its day-6 runs; then, with no further run,
churn_4 is registered (the sample's day-7 lineage) and gets tagged, blocked and marked contaminated; then the feature
total_spend is re-pointed away from the poison and what it alone put at risk (ltv) is untagged. The watch index the
roles share lives in Redis (pareis.store.watch_redis)."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from datahub.emitter.mce_builder import make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCPW
from datahub.ingestion.sink.file import write_metadata_file
from datahub.metadata.schema_classes import MLFeaturePropertiesClass, SystemMetadataClass

from pareis.compose.replay import kafka_sink, replayer
from pareis.config import Settings
from pareis.core.intents import TAG_AT_RISK
from pareis.core.lifecycle import Status
from pareis.core.names import short_name
from pareis.datahub.files.metadata_file import Proposal, read_proposals
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.definitions import CONTAMINATION_URN, RETRAIN_STATUS_URN
from pareis.roles.messages import LineageSignal, TicketComment, TicketOpen, decode_effect, decode_signal
from pareis.store.incidents_redis import RedisIncidentStore
from pareis.store.watch_redis import RedisWatchStore
from tests.support import sample
from tests.support.pipeline import KEY, caught_up, read_all, running, settings_for
from tests.support.roles import wait_until
from tests.support.stack import NewTopic

pytestmark = pytest.mark.integration

B = sample.builder()
DAY7 = B.T0 + 7 * B.DAY
CHURN_4 = sample.model("churn", 4)
LTV = [sample.model("ltv", v) for v in (1, 2)]
TOTAL_SPEND = sample.feature("total_spend")


def clock(p: Proposal) -> int:
    return int((p.system_metadata or {}).get("lastObserved") or 0)


def caught_up_all(settings: Settings) -> None:
    t = settings.kafka.topics
    wait_until(lambda: caught_up(settings, "lineage", t.mcl_versioned), 120, "lineage to catch up")
    wait_until(lambda: caught_up(settings, "assertions", t.mcl_timeseries), 120, "assertions to catch up")
    wait_until(lambda: caught_up(settings, "incidents", t.signals), 120, "incidents to catch up")


def writes(settings: Settings) -> list[tuple[str, str, Any]]:
    """(entity, aspect, JSON) of every committed proposal on the MCP topic, in order per entity."""
    decoder = Decoder(VendoredSchemaSource())
    out = []
    for message in read_all(settings, settings.kafka.topics.mcp):
        change = decoder.decode_mcp(message.value())
        out.append((change.entity_urn or "", change.aspect_name or "", change.aspect_json()))
    return out


def tag_ops(ws: list[tuple[str, str, Any]], urn: str) -> list[str]:
    ops = []
    for entity, aspect, value in ws:
        if entity == urn and aspect == "globalTags":
            patch = value["patch"] if isinstance(value, dict) else value
            ops += [op["op"] for op in patch if TAG_AT_RISK in op["path"]]
    return ops


def properties(ws: list[tuple[str, str, Any]], urn: str) -> dict[str, Any]:
    """The last value of each structured property patched on ``urn``."""
    out: dict[str, Any] = {}
    for entity, aspect, value in ws:
        if entity == urn and aspect == "structuredProperties":
            for op in value["patch"] if isinstance(value, dict) else value:
                if op["op"] == "add":
                    (typed,) = op["value"]["values"][0].values()
                    out[op["value"]["propertyUrn"]] = typed
    return out


def test_a_version_registered_mid_incident_is_tagged_and_a_re_pointed_feature_untags(
    kafka_bootstrap: str, new_topic: NewTopic, new_group: str, redis_url: str, tmp_path: Any
) -> None:
    settings = settings_for(kafka_bootstrap, new_topic, new_group, redis_url)
    proposals = list(read_proposals([sample.TIMELINE]))
    before = [p for p in proposals if clock(p) < DAY7]
    churn_4 = [p for p in proposals if clock(p) == DAY7 + 12 * 3_600_000]
    assert churn_4 and {p.entity_type for p in churn_4} >= {"mlModel", "dataProcessInstance"}
    replay = replayer(settings, kafka_sink(settings), default_ms=0)

    replay.run(before)
    with running(["lineage"], settings):  # the index first, as the incident flow test does
        wait_until(lambda: caught_up(settings, "lineage", settings.kafka.topics.mcl_versioned), 120, "lineage")
    with running(["lineage", "assertions", "incidents"], settings):
        caught_up_all(settings)
        with redis.Redis.from_url(redis_url) as client:
            assert RedisIncidentStore(client).get(KEY).status is Status.ACTIVE
            watched = RedisWatchStore(client).watches()
        assert set(watched) == {KEY} and TOTAL_SPEND in watched[KEY]
        assert tag_ops(writes(settings), CHURN_4) == []

        # churn_4 registered; no assertion run follows
        replay.run(churn_4)
        caught_up_all(settings)
        ws = writes(settings)
        assert tag_ops(ws, CHURN_4) == ["add"]
        props = properties(ws, CHURN_4)
        assert props[RETRAIN_STATUS_URN] == "BLOCKED" and props[CONTAMINATION_URN] == "CONTAMINATED"

        # total_spend re-pointed at a clean column: ltv is no longer reached
        clean = make_schema_field_urn(B.pg("analytics.customer_features"), "basket_size")
        repoint = MCPW(
            entityUrn=TOTAL_SPEND,
            aspect=MLFeaturePropertiesClass(sources=[clean]),
            systemMetadata=SystemMetadataClass(lastObserved=DAY7 + 13 * 3_600_000, runId="test"),
        )
        path = tmp_path / "repoint.json"
        write_metadata_file(path, [repoint])
        replay.run(read_proposals([path]))
        caught_up_all(settings)
        ws = writes(settings)
        for urn in [*LTV, TOTAL_SPEND]:
            assert tag_ops(ws, urn) == ["add", "remove"], urn
        assert tag_ops(ws, CHURN_4) == ["add"], "churn still reads avg_unit_price"

    signals = [decode_signal(m.value()) for m in read_all(settings, settings.kafka.topics.signals)]
    lineage = [s for s in signals if isinstance(s, LineageSignal)]
    assert lineage and {s.dataset for s in lineage} == {KEY}
    assert any(CHURN_4 in s.entities for s in lineage) and any(TOTAL_SPEND in s.entities for s in lineage)
    effects = [decode_effect(m.value()) for m in read_all(settings, settings.kafka.topics.effects)]
    assert [type(e) for e in effects] == [TicketOpen, TicketComment, TicketComment]
    first, second = (e.text for e in effects if isinstance(e, TicketComment))
    cause = [line for line in first.splitlines() if line.startswith("- after a lineage change of: ")]
    # Entities by short names (DESIGN §4); one batch may carry churn_4's training run too.
    assert len(cause) == 1 and short_name(CHURN_4) in cause[0] and f"+{short_name(CHURN_4)}" in first
    assert f"- after a lineage change of: {short_name(TOTAL_SPEND)}" in second and f"-{short_name(LTV[0])}" in second
    assert read_all(settings, settings.kafka.topics.dlq, partitions=1) == []
