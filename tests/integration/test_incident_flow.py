"""The incidents path through the real runtime: the sample timeline replayed onto Kafka, the lineage, assertions and
incidents roles run by :func:`pareis.compose.process.run_roles` over Redis, and the DataHub writes read back from the
MetadataChangeProposal topic with ``read_committed`` (the incidents role writes them transactionally).

Expectations (see tests/unit/test_roles_flow.py for how they follow from the sample's builder): one incident on
the warehouse sibling of stg_transactions, opened at day 6 and resolved at day 8, exactly once each.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
import redis
from confluent_kafka import Consumer

from pareis.compose.process import run_roles
from pareis.compose.replay import kafka_sink, replayer
from pareis.compose.roles import resolve_roles
from pareis.config import KafkaSettings, RuntimeSettings, Settings, Topics
from pareis.core.incident_urn import incident_urn
from pareis.core.lifecycle import Status
from pareis.datahub.codec import Decoder
from pareis.datahub.registry import VendoredSchemaSource
from pareis.roles.messages import TicketClose, TicketOpen, decode_effect
from pareis.store.incidents_redis import RedisIncidentStore
from tests.support import sample
from tests.support.roles import caught_up as group_caught_up
from tests.support.roles import wait_until
from tests.support.stack import NewTopic, read_to_end

pytestmark = pytest.mark.integration

PARTITIONS = 3
B = sample.builder()
KEY = sample.stg_warehouse()
INCIDENT = incident_urn(KEY, B.T0 + 6 * B.DAY)


def settings_for(kafka_bootstrap: str, new_topic: NewTopic, group: str, redis_url: str) -> Settings:
    topics = Topics(
        mcl_versioned=new_topic(PARTITIONS),
        mcl_timeseries=new_topic(PARTITIONS),
        mcp=new_topic(PARTITIONS),
        signals=new_topic(PARTITIONS),
        effects=new_topic(PARTITIONS),
        dlq=new_topic(1),
    )
    return Settings(
        kafka=KafkaSettings(
            bootstrap_servers=kafka_bootstrap, group_prefix=group, transactional_id_prefix=group, topics=topics
        ),
        redis_url=redis_url,
        runtime=RuntimeSettings(
            http_port=0,
            batch_timeout_s=0.05,
            commit_interval_ms=200,
            session_timeout_ms=6000,
            instance_id=uuid.uuid4().hex[:8],
        ),
        log_json=False,
    )


@contextmanager
def running(names: Sequence[str], settings: Settings) -> Iterator[None]:
    """The roles ``names`` in a thread, through the production entry point; stopped (cleanly) on exit."""
    stop = threading.Event()
    codes: list[int] = []
    roles = resolve_roles(names, settings)
    thread = threading.Thread(target=lambda: codes.append(run_roles(roles, settings, stop=stop)))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive() and codes == [0], f"roles {names} did not stop cleanly: {codes}"


def caught_up(settings: Settings, role: str, topic: str) -> bool:
    group = f"{settings.kafka.group_prefix}-{role}"
    return group_caught_up(settings.kafka.bootstrap_servers, group, topic, PARTITIONS)


def read_all(settings: Settings, topic: str, partitions: int = PARTITIONS) -> list[Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": settings.kafka.bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([topic])
    try:
        return read_to_end(consumer, partitions, timeout=60)
    finally:
        consumer.close()


def test_the_sample_incident_is_written_once_opened_and_once_resolved(
    kafka_bootstrap: str, new_topic: NewTopic, new_group: str, redis_url: str
) -> None:
    settings = settings_for(kafka_bootstrap, new_topic, new_group, redis_url)
    topics = settings.kafka.topics
    report = replayer(settings, kafka_sink(settings), default_ms=0).run_files([sample.TIMELINE])
    assert report.published[topics.mcl_timeseries] == 18

    # The lineage index first: an assertion run is keyed through siblings the index must already know.
    with running(["lineage"], settings):
        wait_until(lambda: caught_up(settings, "lineage", topics.mcl_versioned), 120, "lineage to catch up")
    with running(["assertions", "incidents"], settings):
        wait_until(lambda: caught_up(settings, "assertions", topics.mcl_timeseries), 120, "assertions to catch up")
        wait_until(lambda: caught_up(settings, "incidents", topics.signals), 120, "incidents to catch up")

    decoder = Decoder(VendoredSchemaSource())
    infos = []
    for message in read_all(settings, topics.mcp):
        change = decoder.decode_mcp(message.value())
        assert message.key() == (change.entity_urn or "").encode()
        if change.aspect_name == "incidentInfo":
            infos.append((change.entity_urn, change.aspect_json()))
    assert [(urn, info["status"]["state"]) for urn, info in infos] == [(INCIDENT, "ACTIVE"), (INCIDENT, "RESOLVED")]
    assert infos[0][1]["priority"] == 2 and infos[0][1]["entities"][0] == KEY

    effects = [decode_effect(m.value()) for m in read_all(settings, topics.effects)]
    assert [type(e) for e in effects] == [TicketOpen, TicketClose]
    assert {e.incident for e in effects} == {INCIDENT}
    assert read_all(settings, topics.dlq, partitions=1) == []

    with redis.Redis.from_url(redis_url) as client:
        state = RedisIncidentStore(client).get(KEY)
    assert state.status is Status.RESOLVED and state.incident is not None and state.incident.urn == INCIDENT
