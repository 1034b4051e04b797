"""A tiny role program the runtime's integration tests run as a subprocess (to SIGKILL and SIGTERM it).

    python -m tests.support.roles KIND --input T --group G --dlq T [options]

Kinds (the handler each test needs; all go through the real runtime, :func:`pareis.compose.process.run_roles`):

* ``redis``: effects in Redis, idempotent: ``HSET <prefix>:effects <topic>:<partition>:<offset> <value>`` per
  message, then ``INCRBY <prefix>:applied <n>`` (counts redos too). Redis errors become Retriable.
* ``transform``: one output per input on ``--output``: same key, value ``out:<value>``, header ``src``;
  ``--batch-work-ms`` paces it (simulated work per batch); ``--bug-on VALUE`` makes the handler raise a
  ``KeyError`` (a bug of ours, not bad input) on a message of that value.
* ``datahub``: decodes MCLs with the DataHub codec and parses the aspect JSON (malformed JSON is poison); one
  output per good input on ``--output``: key = entity URN, value = aspect name.

:class:`RoleProcess` starts, probes, kills and stops that program from a test; the functions after it read what a
test checks in Kafka (outputs, committed offsets, group state).
"""

from __future__ import annotations

import argparse
import faulthandler
import functools
import json
import logging
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from pareis.compose.decoding import changelog_decoder
from pareis.compose.process import run_roles
from pareis.config import KafkaSettings, RuntimeSettings, Settings, Topics
from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.errors import Retriable
from pareis.kafka.role import Delivery, Pipeline, Role
from pareis.telemetry.logging import configure_logging
from tests.support.stack import wait_until

__all__ = ["wait_until"]  # re-exported: the tests import the poller from here too

if TYPE_CHECKING:
    import httpx


def _bytes(raw: RawMessage) -> bytes | None:
    return raw.value


def redis_pipeline(url: str, prefix: str) -> Pipeline[bytes]:
    import redis  # here, not at the top: the other kinds start faster without it

    client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)

    def handle(batch: Sequence[Message[bytes]]) -> Iterable[OutRecord]:
        try:
            pipe = client.pipeline(transaction=False)
            for m in batch:
                pipe.hset(f"{prefix}:effects", f"{m.topic}:{m.partition}:{m.offset}", m.value)
            pipe.incrby(f"{prefix}:applied", len(batch))
            pipe.execute()
        except redis.RedisError as exc:
            raise Retriable(f"redis: {exc}") from exc
        return ()

    def ping() -> None:
        client.ping()

    return Pipeline(decode=_bytes, handle=handle, checks={"redis": ping}, close=client.close)


def transform_pipeline(output: str, work_s: float = 0.0, bug_on: bytes | None = None) -> Pipeline[bytes]:
    def handle(batch: Sequence[Message[bytes]]) -> Iterable[OutRecord]:
        if bug_on is not None and any(m.value == bug_on for m in batch):
            raise KeyError("a handler bug")
        if work_s:
            time.sleep(work_s)  # simulated work per batch: paces the role (a workload, not a synchronisation)
        return [
            OutRecord(output, m.key, b"out:" + m.value, (("src", f"{m.partition}:{m.offset}".encode()),)) for m in batch
        ]

    return Pipeline(decode=_bytes, handle=handle)


def datahub_pipeline(settings: Settings, output: str) -> Pipeline[Any]:
    decode_change = changelog_decoder(settings)

    def decode(raw: RawMessage) -> Any:
        change = decode_change(raw)
        if change is not None:
            change.aspect_json()  # malformed aspect JSON is poison (DecodeError "aspect-json")
        return change

    def handle(batch: Sequence[Message[Any]]) -> Iterable[OutRecord]:
        return [
            OutRecord(output, (m.value.entity_urn or "").encode(), (m.value.aspect_name or "").encode()) for m in batch
        ]

    return Pipeline(decode=decode, handle=handle)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tests.support.roles")
    p.add_argument("kind", choices=["redis", "transform", "datahub"])
    p.add_argument("--input", required=True)
    p.add_argument("--output", default="unused-output")
    p.add_argument("--group", required=True)
    p.add_argument("--dlq", required=True)
    p.add_argument("--delivery", choices=[d.value for d in Delivery], default=Delivery.AT_LEAST_ONCE.value)
    p.add_argument("--bootstrap", default="127.0.0.1:9092")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    p.add_argument("--prefix", default="test")
    p.add_argument("--instance", default="test-instance")
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--commit-every", type=int, default=200)
    p.add_argument("--commit-interval-ms", type=int, default=200)
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument("--static", action="store_true", help="static group membership (fast restarts)")
    p.add_argument("--backoff-max-s", type=float, default=1.0)
    p.add_argument("--grace-s", type=float, default=10.0)
    p.add_argument("--http-port", type=int, default=0)
    p.add_argument("--batch-work-ms", type=float, default=0.0, help="transform: simulated work per batch")
    p.add_argument("--bug-on", default=None, help="transform: raise KeyError on a message of this value")
    p.add_argument("--rdkafka-debug", default="", help="librdkafka debug contexts, e.g. cgrp,fetch")
    p.add_argument("--schema-registry", default=None, help="datahub: decode through this registry")
    p.add_argument("--kafka-property", action="append", default=[], help="KEY=VALUE, a librdkafka property")
    p.add_argument("--wait-go", action="store_true", help="start only after a line on stdin (a warm standby)")
    a = p.parse_args(argv)
    settings = Settings(
        kafka=KafkaSettings(
            bootstrap_servers=a.bootstrap,
            schema_registry_url=a.schema_registry,
            topics=Topics(dlq=a.dlq),
            properties={
                **({"debug": a.rdkafka_debug} if a.rdkafka_debug else {}),
                **dict(item.split("=", 1) for item in a.kafka_property),
            },
        ),
        runtime=RuntimeSettings(
            batch_size=a.batch_size,
            batch_timeout_s=0.1,
            commit_every=a.commit_every,
            commit_interval_ms=a.commit_interval_ms,
            backoff_initial_s=0.1,
            backoff_max_s=a.backoff_max_s,
            shutdown_grace_s=a.grace_s,
            http_host="127.0.0.1",
            http_port=a.http_port,
            instance_id=a.instance,
            session_timeout_ms=a.session_timeout_ms,
            static_membership=a.static,
        ),
        log_level="INFO",
    )
    configure_logging("INFO", json=True)
    if a.rdkafka_debug:
        logging.getLogger("librdkafka").setLevel(logging.DEBUG)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>` dumps every thread's stack into the log
    if a.kind == "redis":
        build = lambda: redis_pipeline(a.redis, a.prefix)  # noqa: E731
    elif a.kind == "transform":
        bug_on = a.bug_on.encode() if a.bug_on is not None else None
        build = lambda: transform_pipeline(a.output, a.batch_work_ms / 1000, bug_on)  # noqa: E731
    else:
        build = lambda: datahub_pipeline(settings, a.output)  # noqa: E731
    role = Role(a.kind, (a.input,), a.group, Delivery(a.delivery), build, (a.output, a.dlq))
    if a.wait_go:
        sys.stdin.readline()
    return run_roles([role], settings)


MISSING_TOPICS_STAY_MISSING = (
    *("--kafka-property", "allow.auto.create.topics=false"),
    *("--kafka-property", "topic.metadata.propagation.max.ms=1000"),
)
"""Arguments of a role whose output topic does not exist (yet): it must not be auto-created, and its records fail
after a second instead of waiting for the topic."""


# --- driving the program from a test ---------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RoleProcess:
    """One run of this program as a subprocess; ``args`` are its command-line arguments after KIND."""

    def __init__(self, kind: str, log_dir: Path, *args: str, standby: bool = False) -> None:
        """``standby``: the interpreter starts and imports everything, but the role starts only on :meth:`go`
        (so a test can restart a killed role at once, without the interpreter's start-up time)."""
        self.kind = kind
        self.args = [*args, "--wait-go"] if standby else list(args)
        self.standby = standby
        self.port = free_port()
        self.log_path = log_dir / f"{kind}-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RoleProcess:
        root = Path(__file__).resolve().parents[2]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.support.roles", self.kind, *self.args, "--http-port", str(self.port)],
                cwd=root,
                stdin=subprocess.PIPE if self.standby else subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    def go(self) -> RoleProcess:
        """Start the role of a standby process."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.close()
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def get(self, path: str) -> httpx.Response | None:
        import httpx

        try:
            return httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=2)
        except httpx.TransportError:
            return None

    def ready(self) -> bool:
        if not self.running:
            raise AssertionError(f"role process exited ({self.proc and self.proc.returncode}); see {self.log_path}")
        response = self.get("/readyz")
        return response is not None and response.status_code == 200

    def wait_ready(self, timeout_s: float = 60) -> RoleProcess:
        wait_until(self.ready, timeout_s, f"{self.kind} role ready")
        return self

    def metric(self, name: str) -> float:
        """The sum of every series of metric ``name`` (0 when absent or the endpoint is down); fails once the
        process has exited."""
        if not self.running:
            raise AssertionError(f"role process exited ({self.proc and self.proc.returncode}); see {self.log_path}")
        response = self.get("/metrics")
        if response is None:
            return 0.0
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in response.text.splitlines()
            if line.startswith(name) and line[len(name) : len(name) + 1] in ("{", " ")
        )

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def terminate(self, timeout_s: float) -> int:
        """SIGTERM, then wait at most ``timeout_s`` for the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout_s)

    def log(self) -> list[dict[str, Any]]:
        lines = self.log_path.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def __enter__(self) -> RoleProcess:
        return self if self.proc is not None else self.start()

    def __exit__(self, *_: object) -> None:
        if self.running:
            self.kill()


def events(role: RoleProcess, name: str) -> list[dict[str, Any]]:
    """The log lines of ``role`` whose event is ``name``."""
    return [e for e in role.log() if e["event"] == name]


def outputs_once(seen: list[Any], records: list[tuple[bytes, bytes]]) -> None:
    """The transform kind's outputs ``seen`` hold each input's output (``out:<value>``) exactly once."""
    values = Counter(m.value() for m in seen)
    doubled = {v: n for v, n in values.items() if n > 1}
    assert not doubled, f"{len(doubled)} outputs written more than once, e.g. {sorted(doubled)[:3]}"
    assert set(values) == {b"out:" + v for _, v in records}, "every input's output, nothing else"


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes]]) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    count = 0
    for key, value in records:
        producer.produce(topic, value, key)
        count += 1
        if count % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    return count


def read_topic(bootstrap: str, topic: str, expected: int, timeout_s: float = 60) -> list[Any]:
    """Every record of ``topic`` a read_committed consumer sees, once ``expected`` have arrived (and a moment
    after, so that extra records — duplicates — are seen too)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([topic])
    seen: list[Any] = []
    try:

        def enough() -> bool:
            seen.extend(m for m in consumer.consume(1000, 0.2) if m.error() is None)
            return len(seen) >= expected

        wait_until(enough, timeout_s, f"{expected} records on {topic} (have {len(seen)})", every_s=0)
        quiet_until = time.monotonic() + 1.0
        while time.monotonic() < quiet_until:  # drain: anything more is a duplicate
            seen.extend(m for m in consumer.consume(1000, 0.2) if m.error() is None)
    finally:
        consumer.close()
    return seen


def read_to_end(bootstrap: str, topic: str, partitions: int, timeout_s: float = 60) -> list[Any]:
    """Every committed record of ``topic``: each partition read from its beginning (read_committed) until the
    consumer's position reaches the partition's end offset. No quiet period: a duplicate anywhere before the end
    is read, and a transaction still open (its records not yet readable) keeps the reader from reaching the end,
    which fails the read instead of hiding them."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    ends = end_offsets(bootstrap, topic, partitions)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen: list[Any] = []
    try:

        def at_end() -> bool:
            seen.extend(m for m in consumer.consume(1000, 0.2) if m.error() is None)
            positions = consumer.position([TopicPartition(topic, p) for p in range(partitions)])
            return all(ends[tp.partition] == 0 or tp.offset >= ends[tp.partition] for tp in positions)

        wait_until(at_end, timeout_s, f"{topic} read to its end offsets {ends} (have {len(seen)})", every_s=0)
    finally:
        consumer.close()
    return seen


@functools.cache
def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def committed(bootstrap: str, group: str, topic: str, partitions: int, timeout_s: float = 30) -> dict[int, int]:
    """The group's committed offset per partition (-1001 when none)."""
    admin = _admin(bootstrap)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    result = admin.list_consumer_group_offsets([request], request_timeout=timeout_s)[group].result(timeout_s)
    return {tp.partition: tp.offset for tp in result.topic_partitions}


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{uuid.uuid4()}"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in range(partitions)}
    finally:
        consumer.close()


def caught_up(bootstrap: str, group: str, topic: str, partitions: int) -> bool:
    """Whether ``group`` has committed the end of every partition of ``topic`` (an empty partition needs no
    commit). For topics written without transactions: on a transactional one the end counts the commit markers."""
    done = {p: max(offset, 0) for p, offset in committed(bootstrap, group, topic, partitions).items()}
    return done == end_offsets(bootstrap, topic, partitions)


def group_members(bootstrap: str, group: str) -> dict[str, list[int]]:
    """Member client host/id → assigned partitions, as the group coordinator sees them."""
    admin = _admin(bootstrap)
    description = admin.describe_consumer_groups([group])[group].result(30)
    return {m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions) for m in description.members}


if __name__ == "__main__":
    sys.exit(main())
