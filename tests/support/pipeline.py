"""The pipeline harness of the integration tests that run the roles on real Kafka and Redis: fresh topics per test
(:func:`settings_for`), the roles through the production entry point in a thread (:func:`running`), and reads of
what they produced and committed."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer

from pareis.compose.process import run_roles
from pareis.compose.roles import resolve_roles
from pareis.config import KafkaSettings, RuntimeSettings, Settings, Topics
from pareis.core.incident_urn import incident_urn
from tests.support import sample
from tests.support.roles import caught_up as group_caught_up
from tests.support.stack import NewTopic, read_to_end

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
