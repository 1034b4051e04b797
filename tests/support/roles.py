"""A tiny role program the runtime's integration tests run as a subprocess (to SIGKILL and SIGTERM it).

    python -m tests.support.roles KIND --input T --group G --dlq T [options]

Kinds (the handler each test needs; all go through the real runtime, :func:`pareis.bootstrap.run_roles`):

* ``redis``: effects in Redis, idempotent: ``HSET <prefix>:effects <topic>:<partition>:<offset> <value>`` per
  message, then ``INCRBY <prefix>:applied <n>`` (counts redos too). Redis errors become Retriable.
* ``transform``: one output per input on ``--output``: same key, value ``out:<value>``, header ``src``.
* ``datahub``: decodes MCLs with the DataHub codec and parses the aspect JSON (malformed JSON is poison); one
  output per good input on ``--output``: key = entity URN, value = aspect name.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import redis

from pareis import bootstrap
from pareis.config import KafkaSettings, RuntimeSettings, Settings, Topics
from pareis.errors import Retriable
from pareis.kafka.records import Message, OutRecord, RawMessage
from pareis.kafka.role import Delivery, Pipeline, Role
from pareis.telemetry.logging import configure_logging


def _bytes(raw: RawMessage) -> bytes | None:
    return raw.value


def redis_pipeline(url: str, prefix: str) -> Pipeline[bytes]:
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


def transform_pipeline(output: str) -> Pipeline[bytes]:
    def handle(batch: Sequence[Message[bytes]]) -> Iterable[OutRecord]:
        return [
            OutRecord(output, m.key, b"out:" + m.value, (("src", f"{m.partition}:{m.offset}".encode()),)) for m in batch
        ]

    return Pipeline(decode=_bytes, handle=handle)


def datahub_pipeline(settings: Settings, output: str) -> Pipeline[Any]:
    decode_change = bootstrap.changelog_decoder(settings)

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
    a = p.parse_args(argv)
    settings = Settings(
        kafka=KafkaSettings(bootstrap_servers=a.bootstrap, topics=Topics(dlq=a.dlq)),
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
    if a.kind == "redis":
        build = lambda: redis_pipeline(a.redis, a.prefix)  # noqa: E731
    elif a.kind == "transform":
        build = lambda: transform_pipeline(a.output)  # noqa: E731
    else:
        build = lambda: datahub_pipeline(settings, a.output)  # noqa: E731
    role = Role(a.kind, (a.input,), a.group, Delivery(a.delivery), build, (a.output, a.dlq))
    return bootstrap.run_roles([role], settings)


if __name__ == "__main__":
    sys.exit(main())
