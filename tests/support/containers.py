"""The testcontainers seam: Kafka (KRaft, transactions), Redis and PostgreSQL in throwaway containers, one of each
per test process, started on first use and removed at exit. Used when ``PAREIS_TEST_STACK`` selects
``testcontainers`` (:func:`tests.support.stack.stack_mode`); kept thin on purpose: each function returns the
endpoint the fixtures would otherwise get from ``deploy/local``."""

from __future__ import annotations

import atexit
import functools
from typing import Any

KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"
REDIS_IMAGE = "redis:7"
POSTGRES_IMAGE = "postgres:16"


def _started(container: Any) -> Any:
    container.start()
    atexit.register(container.stop)
    return container


@functools.cache
def kafka() -> str:
    """Bootstrap servers of a single KRaft broker that supports transactions."""
    from testcontainers.community.kafka import KafkaContainer

    broker = (
        KafkaContainer(KAFKA_IMAGE)
        .with_kraft()
        .with_env("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
    )
    return str(_started(broker).get_bootstrap_server())


@functools.cache
def redis() -> str:
    """A Redis URL (no database: the session leases one, as on the local stack)."""
    from testcontainers.community.redis import RedisContainer

    server = _started(RedisContainer(REDIS_IMAGE))
    return f"redis://{server.get_container_host_ip()}:{server.get_exposed_port(6379)}"


@functools.cache
def postgres() -> str:
    """A libpq URL of a fresh ``pareis`` database."""
    from testcontainers.community.postgres import PostgresContainer

    server = _started(PostgresContainer(POSTGRES_IMAGE, username="pareis", password="pareis", dbname="pareis"))
    return str(server.get_connection_url(driver=None))


def docker_reachable() -> bool:
    """Whether a Docker engine answers (``DOCKER_HOST`` or the default socket), within two seconds."""
    try:
        import docker

        client = docker.from_env(timeout=2)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # noqa: BLE001 (no SDK, no socket, no permission, no answer: all mean "not reachable")
        return False
