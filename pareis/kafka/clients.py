"""Kafka client construction: the consumer, the (transactional) producer and the admin client of a role.

Configuration is derived from :class:`pareis.config.Settings` here and nowhere else; ``kafka.properties`` (security,
SASL, tuning) is applied to every client last, so operators can override any default.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from pareis.config import Settings
from pareis.errors import Fatal
from pareis.kafka.dlq import MESSAGE_MAX_BYTES
from pareis.kafka.role import Delivery, Role

ErrorCallback = Callable[[KafkaError], None]
CommitCallback = Callable[[KafkaError | None, list[TopicPartition]], None]
_LIBRDKAFKA_LOG = logging.getLogger("librdkafka")
_FETCH_BYTES = 16 * 1024 * 1024
_FETCH_QUEUE_BACKOFF_MS = 10


def instance_id(settings: Settings) -> str:
    """This process's stable id among its role's replicas: the setting, else the host (pod) name."""
    return settings.runtime.instance_id or socket.gethostname()


def transactional_id(settings: Settings, role: Role) -> str:
    """``<prefix>-<role>-<instance>``: stable across restarts of one instance, so a restart fences its zombie."""
    return f"{settings.kafka.transactional_id_prefix}-{role.name}-{instance_id(settings)}"


def _base(settings: Settings) -> dict[str, Any]:
    return {"bootstrap.servers": settings.kafka.bootstrap_servers, "client.id": f"pareis-{instance_id(settings)}"}


def consumer_config(settings: Settings, role: Role) -> dict[str, Any]:
    """The consumer of ``role``: cooperative rebalancing, manual commits, committed reads only.

    ``max.poll.interval.ms`` must cover one batch (decode + handler + commit); the runtime keeps polling while it
    backs off, so a back-off never counts against it. ``max.partition.fetch.bytes`` is raised from librdkafka's
    1 MiB: at DataHub's change-log sizes (a few KB a message) a 1 MiB fetch is ~300 messages, so with a backlog
    the fetcher, one round trip per fetch, fell behind a role reading ~20k messages a second and the loop waited
    in ``consume`` (bench/RESULTS.md, Runtime). Memory stays bounded by ``queued.max.messages.kbytes``.

    ``fetch.queue.backoff.ms`` is lowered from librdkafka's 1,000 ms: once a partition's local queue passes its
    thresholds (64 MiB, ~18,000 change-log messages) the fetcher waits that long before it looks again, and a role
    that drains the queue in less time than that then waits in ``consume`` for the rest of the second. With a
    backlog that capped a role at ~25,000 messages a second whatever its own speed, the loop blocked ~75% of the
    time; at 10 ms the queue is refilled as it drains (a bare consumer doing 12 µs of work a message: 24k → 60k
    msg/s, bench/RESULTS.md, Runtime).
    """
    run = settings.runtime.for_role(role.name)
    batch_budget_ms = int(run.batch_timeout_s * 1000) + run.commit_interval_ms + 60_000
    config: dict[str, Any] = {
        **_base(settings),
        "group.id": role.group,
        "partition.assignment.strategy": "cooperative-sticky",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "session.timeout.ms": run.session_timeout_ms,
        "heartbeat.interval.ms": max(500, run.session_timeout_ms // 5),
        "max.poll.interval.ms": max(run.max_poll_interval_ms, batch_budget_ms, run.session_timeout_ms),
        "max.partition.fetch.bytes": _FETCH_BYTES,
        "fetch.queue.backoff.ms": _FETCH_QUEUE_BACKOFF_MS,
    }
    if run.static_membership:
        config["group.instance.id"] = f"{role.name}-{instance_id(settings)}"
    return {**config, **settings.kafka.properties}


def producer_config(settings: Settings, role: Role) -> dict[str, Any]:
    """The producer of ``role``: idempotent; transactional in exactly-once mode."""
    config: dict[str, Any] = {
        **_base(settings),
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "compression.type": "lz4",
    }
    if role.delivery is Delivery.EXACTLY_ONCE:
        config["transactional.id"] = transactional_id(settings, role)
        config["transaction.timeout.ms"] = max(60_000, 4 * settings.runtime.for_role(role.name).commit_interval_ms)
    return {**config, **settings.kafka.properties}


def new_consumer(
    config: Mapping[str, Any], on_error: ErrorCallback, on_commit: CommitCallback | None = None
) -> Consumer:
    """A consumer whose librdkafka logs go through Python logging (so they come out as structured logs);
    ``on_commit`` is told the replies to asynchronous commits (during a poll, on the polling thread)."""
    callbacks: dict[str, Any] = {"error_cb": on_error, "logger": _LIBRDKAFKA_LOG}
    if on_commit is not None:
        callbacks["on_commit"] = on_commit
    return Consumer({**config, **callbacks})


def new_producer(config: Mapping[str, Any], on_error: ErrorCallback) -> Producer:
    return Producer({**config, "error_cb": on_error, "logger": _LIBRDKAFKA_LOG})


def library_logger() -> logging.Logger:
    """The logger librdkafka's own lines go through (never its stderr), for clients built elsewhere."""
    return _LIBRDKAFKA_LOG


def quiet(err: KafkaError) -> bool:
    """Whether a non-fatal client error is one librdkafka has already logged (through :func:`library_logger`):
    a broker connection failing. Logging it again would say everything twice."""
    # librdkafka's local error codes are public API, spelled with a leading underscore.
    return err.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE)


def wait_for_brokers(
    client: Consumer | Producer,
    bootstrap_servers: str,
    timeout_s: float,
    *,
    stop: threading.Event | None = None,
    attempt_s: float = 3.0,
) -> None:
    """Return once the brokers answer a metadata request; :class:`~pareis.errors.Fatal` naming
    ``bootstrap_servers`` after ``timeout_s`` (the process exits 1 instead of retrying for minutes in silence).

    The first failed attempt (``attempt_s`` at most) is logged at once, naming the address and the wait left.
    """
    log = structlog.get_logger(__name__)
    deadline = time.monotonic() + timeout_s
    warned = False
    while True:
        left = deadline - time.monotonic()
        try:
            client.list_topics(timeout=max(0.1, min(attempt_s, left)))
            if warned:
                log.info("kafka brokers reachable", bootstrap_servers=bootstrap_servers)
            return
        except KafkaException as exc:
            error = str(exc.args[0].str() if exc.args and isinstance(exc.args[0], KafkaError) else exc)
        left = deadline - time.monotonic()
        if not warned:
            log.warning(
                "kafka brokers unreachable; waiting",
                bootstrap_servers=bootstrap_servers,
                gives_up_in_s=max(0, round(left)),
                error=error,
            )
            warned = True
        if left <= 0 or (stop is not None and stop.is_set()):
            raise Fatal(f"kafka brokers unreachable at {bootstrap_servers} for {timeout_s:.0f}s: {error}")


def message_max_bytes(settings: Settings) -> int:
    """The largest record a role's producer sends: ``message.max.bytes`` from ``kafka.properties``, else
    librdkafka's default."""
    return int(settings.kafka.properties.get("message.max.bytes", MESSAGE_MAX_BYTES))


def new_admin(settings: Settings) -> AdminClient:
    """An admin client (topic administration) on the cluster the settings name, with ``kafka.properties``."""
    config: dict[str, Any] = {**_base(settings), **settings.kafka.properties, "logger": _LIBRDKAFKA_LOG}
    return AdminClient(config)
