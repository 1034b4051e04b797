"""The local stack really works: Kafka (plain and transactional), Redis and Postgres answer as the code expects."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
import redis
from confluent_kafka import Consumer, Message, Producer

from tests.support.stack import REPO_DIR, NewTopic, consume, read_to_end

pytestmark = pytest.mark.integration

PROBE = REPO_DIR / "deploy" / "local" / "kafka_probe.py"


def _consumer(bootstrap: str, group: str, topic: str, isolation: str = "read_committed") -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    consumer.subscribe([topic])
    return consumer


def _values(messages: list[Message]) -> list[bytes]:
    """The messages' values, sorted; every message here has one."""
    values = [m.value() for m in messages]
    assert all(v is not None for v in values)
    return sorted(v for v in values if v is not None)


def _flush(producer: Producer) -> None:
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} messages still undelivered after 30 s"


def test_produce_and_consume_on_a_fresh_topic(kafka_bootstrap: str, new_topic: NewTopic, new_group: str) -> None:
    topic = new_topic(partitions=3)
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    sent = {(f"k{i % 5}".encode(), f"v{i}".encode()) for i in range(50)}
    for key, value in sorted(sent):
        producer.produce(topic, value, key, on_delivery=lambda err, _msg: errors.append(str(err)) if err else None)
    _flush(producer)
    assert errors == []

    consumer = _consumer(kafka_bootstrap, new_group, topic)
    try:
        messages = consume(consumer, len(sent))
    finally:
        consumer.close()
    assert {(m.key(), m.value()) for m in messages} == sent
    # Kafka partitions by key: every key lives in exactly one partition.
    partitions_of_key: dict[bytes | None, set[int | None]] = {}
    for m in messages:
        partitions_of_key.setdefault(m.key(), set()).add(m.partition())
    assert all(len(parts) == 1 for parts in partitions_of_key.values())


def test_transactions_commit_and_abort(kafka_bootstrap: str, new_topic: NewTopic, new_group: str) -> None:
    topic = new_topic(partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"test-tx-{uuid.uuid4().hex}"})
    producer.init_transactions(60)

    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, f"committed-{i}".encode(), f"k{i}".encode())
    producer.commit_transaction(30)

    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, f"aborted-{i}".encode(), f"k{i}".encode())
    _flush(producer)  # the aborted records really reach the log; only the abort marker hides them
    producer.abort_transaction(30)

    producer.begin_transaction()
    producer.produce(topic, b"committed-last", b"k0")
    producer.commit_transaction(30)

    # Every transaction is finished, so reading each partition to its end sees all there is to see.
    committed = _consumer(kafka_bootstrap, new_group, topic, "read_committed")
    try:
        seen = _values(read_to_end(committed, partitions=2))
    finally:
        committed.close()
    assert seen == sorted([f"committed-{i}".encode() for i in range(5)] + [b"committed-last"])

    # The aborted records are in the log all the same: isolation, not luck, kept them out.
    uncommitted = _consumer(kafka_bootstrap, f"{new_group}-uncommitted", topic, "read_uncommitted")
    try:
        everything = _values(read_to_end(uncommitted, partitions=2))
    finally:
        uncommitted.close()
    assert everything == sorted(seen + [f"aborted-{i}".encode() for i in range(5)])


def test_kafka_probe_script_answers_and_fails_fast(kafka_bootstrap: str) -> None:
    first = kafka_bootstrap.split(",")[0]
    ok = subprocess.run([sys.executable, str(PROBE), first, "5"], capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    # A port nothing listens on (port 1 is privileged and unused here): refused at once, exit 1.
    refused = subprocess.run([sys.executable, str(PROBE), "127.0.0.1:1", "2"], capture_output=True, timeout=30)
    assert refused.returncode == 1


def test_redis_set_get_on_a_flushed_database(redis_url: str, redis_client: redis.Redis) -> None:
    assert redis_client.dbsize() == 0
    redis_client.set(b"pareis:test", b"\x00\xffbytes")
    assert redis_client.get(b"pareis:test") == b"\x00\xffbytes"
    assert redis_url.rstrip("/").rsplit("/", 1)[-1].isdigit()


def test_postgres_select_1(postgres_dsn: str) -> None:
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
        conn.execute("create temporary table t (x int)")
        conn.execute("insert into t values (41), (1)")
        assert conn.execute("select sum(x) from t").fetchone() == (42,)


def test_stack_script_rejects_unknown_services() -> None:
    script = Path(REPO_DIR, "deploy", "local", "stack.sh")
    done = subprocess.run([str(script), "up", "zookeeper"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "usage" in done.stderr
