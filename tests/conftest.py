"""Shared fixtures: real Kafka, Redis and PostgreSQL for the tests that ask for them, and nothing for the rest.

Every service fixture is lazy: a test that requests none of them starts and touches nothing. The first test
that needs a service runs ``deploy/local/stack.sh up <service>`` (a quick no-op when ``make test`` already
started it) unless an override variable points elsewhere, then checks that the service answers. A service that
can't be had FAILS the requesting tests with the script's output and the service's log tail; it never skips
them. Overrides (the stack is then never started for that service):

* ``PAREIS_TEST_KAFKA_BOOTSTRAP`` — bootstrap servers, e.g. ``broker:9092``;
* ``PAREIS_TEST_REDIS_URL`` — a Redis URL; database 15 when the URL names none (it is flushed per test!);
* ``PAREIS_TEST_POSTGRES_DSN`` — a libpq DSN / URL.

Fixtures: ``kafka_bootstrap`` (session, str), ``kafka_admin`` (session, AdminClient), ``new_topic`` (factory
``new_topic(partitions=1, **config) -> name``; topics deleted at teardown), ``new_group`` (a fresh group id),
``redis_url`` (a flushed test database), ``redis_client`` (``redis.Redis`` on it, bytes in and out),
``postgres_dsn`` (session). Helpers for tests live in :mod:`tests.support.stack`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import redis
    from confluent_kafka.admin import AdminClient

    from tests.support.stack import NewTopic


def _endpoint(service: str) -> str:
    """Where ``service`` answers, or ``pytest.fail`` with why not. Imported late: unit runs never load it."""
    from tests.support import stack

    getter = {
        "kafka": stack.kafka_endpoint,
        "redis": stack.redis_endpoint,
        "postgres": stack.postgres_endpoint,
    }[service]
    try:
        return getter()
    except stack.StackError as exc:
        pytest.fail(f"required test service {service} is unavailable:\n{exc}", pytrace=False)


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    """Bootstrap servers of a Kafka broker that answers (ours on 127.0.0.1:9092 unless overridden)."""
    return _endpoint("kafka")


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap: str) -> AdminClient:
    """An AdminClient on ``kafka_bootstrap``, shared by the session."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": kafka_bootstrap})


@pytest.fixture
def new_topic(kafka_admin: AdminClient) -> Iterator[NewTopic]:
    """Factory of fresh topics: ``new_topic(partitions=1, **config) -> name``.

    Each call creates a uniquely named topic (``test-<uuid>``) with replication factor 1 and the given topic
    configs (``cleanup_policy="compact"`` style keywords map to ``cleanup.policy``), and returns once every
    partition has a leader. The topics are deleted when the test ends.
    """
    from tests.support.stack import create_topic, delete_topics

    created: list[str] = []

    def factory(partitions: int = 1, **config: str) -> str:
        name = f"test-{uuid.uuid4().hex}"
        create_topic(kafka_admin, name, partitions, {k.replace("_", "."): v for k, v in config.items()})
        created.append(name)
        return name

    yield factory
    delete_topics(kafka_admin, created)


@pytest.fixture
def new_group() -> str:
    """A fresh consumer group id (``test-group-<uuid>``); touches no service."""
    return f"test-group-{uuid.uuid4().hex}"


@pytest.fixture(scope="session")
def _redis_server_url() -> str:
    return _endpoint("redis")


@pytest.fixture
def redis_url(_redis_server_url: str) -> str:
    """URL of a Redis database (15 on our server) that is empty when the test starts."""
    import redis

    with redis.Redis.from_url(_redis_server_url) as client:
        client.flushdb()
    return _redis_server_url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """``redis.Redis`` on ``redis_url`` with ``decode_responses=False`` (bytes in, bytes out)."""
    import redis

    client = redis.Redis.from_url(redis_url, decode_responses=False)
    yield client
    client.close()


@pytest.fixture(scope="session")
def postgres_dsn() -> str:
    """DSN of a PostgreSQL database that answers (ours: ``postgresql://pareis:pareis@127.0.0.1:5432/pareis``)."""
    return _endpoint("postgres")
