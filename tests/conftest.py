"""Shared fixtures: real Kafka, Redis and PostgreSQL for the tests that ask for them, and nothing for the rest.

Every service fixture is lazy: a test that requests none of them starts and touches nothing. The first test
that needs a service runs ``deploy/local/stack.sh up <service>`` (a quick no-op when ``make test`` already
started it) unless an override variable points elsewhere, then checks that the service answers. A service that
can't be had FAILS the requesting tests with the script's output and the service's log tail; it never skips
them. Overrides (the stack is then never started for that service):

* ``PAREIS_TEST_KAFKA_BOOTSTRAP`` — bootstrap servers, e.g. ``broker:9092``;
* ``PAREIS_TEST_REDIS_URL`` — a Redis URL (its database is flushed per test!); when it names no database, the
  session leases one of its own (:mod:`tests.support.redis_lease`), so two runs on one machine never collide;
* ``PAREIS_TEST_REDIS_CLUSTER_URL`` — a Redis Cluster URL (``redis+cluster://host:port``; every key but the
  session's lease is deleted per test!); without it, ``deploy/local/stack.sh up redis-cluster`` (127.0.0.1:7000–7005);
* ``PAREIS_TEST_POSTGRES_DSN`` — a libpq DSN / URL.

Fixtures: ``kafka_bootstrap`` (session, str), ``kafka_admin`` (session, AdminClient), ``new_topic`` (factory
``new_topic(partitions=1, **config) -> name``; topics deleted at teardown), ``new_group`` (a fresh group id),
``redis_url`` (a flushed test database), ``redis_client`` (``redis.Redis`` on it, bytes in and out),
``redis_cluster_url`` / ``redis_cluster_client`` (the same on the Redis Cluster), ``postgres_dsn`` (session), and
``backend`` (:mod:`tests.support.backends`: memory, standalone Redis, Redis Cluster — what every store contract suite
is parametrised over), ``redis_backend_url`` (standalone Redis, then Redis Cluster: for a whole-pipeline test), and
``private_redis`` (:mod:`tests.support.private_redis`: redis-server processes of the test's own). Helpers for tests live
in :mod:`tests.support.stack`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.backends import backend, redis_backend, redis_backend_url  # noqa: F401 - fixtures, for every module
from tests.support.private_redis import private_cluster, private_redis  # noqa: F401 - fixtures, for every module

if TYPE_CHECKING:
    import redis
    from confluent_kafka.admin import AdminClient
    from redis.cluster import RedisCluster

    from tests.support.stack import NewTopic


TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "e2e")
SERVICE_FIXTURES = frozenset(
    {
        "kafka_bootstrap",
        "kafka_admin",
        "new_topic",
        "_redis_server_url",
        "redis_url",
        "redis_client",
        "_redis_cluster_server_url",
        "redis_cluster_url",
        "redis_cluster_client",
        "postgres_dsn",
    }
)
"""Fixtures that reach a service: a test under ``tests/unit`` that uses one is an integration test."""
SLOW_MODULES = frozenset(
    {
        # builds the Helm chart, a wheel and a venv
        "test_helm_chart.py",
        "test_wheel.py",
        # run the read side on the whole demo recording or the goldens, many times (answers of CLI vs MCP vs acryl)
        "test_mcp_tools.py",
        "test_cli_gate.py",
        "test_gate_demo.py",
        "test_evidence.py",
        "test_metadata_file.py",
        # wait out real bounded timeouts (a hung ticket tool, an unreachable broker) or start subprocesses
        "test_tickets_bounds.py",
        "test_broker_unreachable.py",
        "test_mcp_http.py",
        "test_mcp_stdio.py",
        # sweep one fault over every request and every ledger write of an incident's ticket life, each run against
        # a fresh local HTTP server (≈ 300 servers, 20 s of the pure tier before)
        "test_tickets_exactly_once.py",
    }
)
"""Modules whose every test is slow (seconds each, for the reasons above): they run in ``make test``, not in
``make unit``, which stays the fast pure tier."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tier, by directory (``tests/unit|integration|e2e``); a test under ``tests/unit``
    that reaches a service (a service fixture, or a parameter marked ``integration``) is ``integration`` instead
    of ``unit``, so ``-m unit`` needs no service. Tests of :data:`SLOW_MODULES` are also ``slow``."""
    for item in items:
        folder = item.path.relative_to(TESTS).parts[0]
        tier = folder if folder in TIERS else None
        if tier == "unit" and (item.get_closest_marker("integration") or SERVICE_FIXTURES & set(item.fixturenames)):
            tier = "integration"
        if tier is not None and not item.get_closest_marker(tier):
            item.add_marker(getattr(pytest.mark, tier))
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def _endpoint(service: str) -> str:
    """Where ``service`` answers, or ``pytest.fail`` with why not. Imported late: unit runs never load it."""
    from tests.support import stack

    getter = {
        "kafka": stack.kafka_endpoint,
        "redis": stack.redis_endpoint,
        "redis-cluster": stack.redis_cluster_endpoint,
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
def _redis_server_url() -> Iterator[str]:
    from tests.support import stack

    url = _endpoint("redis")
    yield url
    stack.release_redis_db(url)


@pytest.fixture
def redis_url(_redis_server_url: str) -> str:
    """URL of this session's Redis database, empty when the test starts."""
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
def _redis_cluster_server_url() -> Iterator[str]:
    from tests.support import stack

    url = _endpoint("redis-cluster")
    yield url
    stack.release_redis_cluster(url)


@pytest.fixture
def redis_cluster_url(_redis_cluster_server_url: str) -> str:
    """URL (``redis+cluster://``) of the session's Redis Cluster, holding no key but the session's lease."""
    from tests.support import stack

    client = stack.redis_cluster_client(_redis_cluster_server_url)
    try:
        stack.clear_redis_cluster(client)
    finally:
        client.close()
    return _redis_cluster_server_url


@pytest.fixture
def redis_cluster_client(redis_cluster_url: str) -> Iterator[RedisCluster]:
    """``RedisCluster`` on ``redis_cluster_url``, bytes in and out, as Pareis builds it."""
    from tests.support import stack

    client = stack.redis_cluster_client(redis_cluster_url)
    yield client
    client.close()


@pytest.fixture(scope="session")
def postgres_dsn() -> str:
    """DSN of a PostgreSQL database that answers (ours: ``postgresql://pareis:pareis@127.0.0.1:5432/pareis``)."""
    return _endpoint("postgres")
