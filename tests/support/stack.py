"""The local stack as the test fixtures see it: where each service is, starting ours when needed, and checks.

Each ``*_endpoint`` function returns where a service answers, either the one named by its override variable
(``PAREIS_TEST_KAFKA_BOOTSTRAP``, ``PAREIS_TEST_REDIS_URL``, ``PAREIS_TEST_REDIS_CLUSTER_URL``,
``PAREIS_TEST_POSTGRES_DSN``; ours is then never started) or ours, started as ``PAREIS_TEST_STACK`` says
(:func:`stack_mode`): ``local`` — ``deploy/local/stack.sh up <service>`` (a no-op that re-checks readiness when it
already runs); ``testcontainers`` — a throwaway container of testcontainers' module for it
(:mod:`tests.support.containers`); ``auto`` (the default) — testcontainers when a Docker engine answers, else local.
Either way the service is asked a real question before the endpoint is returned; any failure raises
:class:`StackError` whose message carries the script's output and the tail of the service's log. The fixtures turn
that into ``pytest.fail``: a required service that can't be had fails the tests, never skips them. The Redis Cluster
(3 primaries, 3 replicas) is always ours from ``deploy/local`` (there is no one-container cluster), leased whole by
one session at a time (:func:`redis_cluster_endpoint`).

Nothing here runs at import time, so unit tests that import the package never touch a service.
"""

from __future__ import annotations

import functools
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from confluent_kafka.admin import AdminClient

REPO_DIR = Path(__file__).resolve().parents[2]
STACK_SCRIPT = REPO_DIR / "deploy" / "local" / "stack.sh"
LOG_DIR = REPO_DIR / ".stack" / "logs"

STACK_ENV = "PAREIS_TEST_STACK"
STACK_MODES = ("auto", "local", "testcontainers")
KAFKA_ENV = "PAREIS_TEST_KAFKA_BOOTSTRAP"
REDIS_ENV = "PAREIS_TEST_REDIS_URL"
REDIS_CLUSTER_ENV = "PAREIS_TEST_REDIS_CLUSTER_URL"
POSTGRES_ENV = "PAREIS_TEST_POSTGRES_DSN"

LOCAL_KAFKA = "127.0.0.1:9092"
LOCAL_REDIS = "redis://127.0.0.1:6379"
LOCAL_REDIS_CLUSTER = "redis+cluster://127.0.0.1:7000"
CLUSTER_LEASE = "pareis-test:lease:cluster"
"""The key a session holds while it uses the cluster (a cluster has one database: sessions cannot share it)."""
CLUSTER_LEASE_WAIT_S = 300.0
LOCAL_POSTGRES = "postgresql://pareis:pareis@127.0.0.1:5432/pareis"


# A cold start may fetch the Kafka jars and apt-get install Redis or Postgres; stay under pytest-timeout's 600 s
# so that the failure is ours, with the log tail, rather than a bare timeout.
STACK_UP_TIMEOUT_S = 540.0
CHECK_TIMEOUT_S = 15.0


class StackError(RuntimeError):
    """A service of the test stack can't be started or doesn't answer; the message says why."""


class NewTopic(Protocol):
    """The ``new_topic`` fixture: ``new_topic(partitions=1, **config) -> name`` creates a fresh topic."""

    def __call__(self, partitions: int = 1, **config: str) -> str: ...


def log_tail(service: str, lines: int = 40) -> str:
    """The last ``lines`` lines of ``.stack/logs/<service>.log``, or a note that there is none."""
    path = LOG_DIR / f"{service}.log"
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return f"---- last {lines} lines of {path} ----\n" + "\n".join(text.splitlines()[-lines:])


def stack_up(service: str) -> None:
    """Run ``deploy/local/stack.sh up <service>``; raise :class:`StackError` with its output on failure."""
    command = [str(STACK_SCRIPT), "up", service]
    try:
        done = subprocess.run(
            command,
            cwd=REPO_DIR,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=STACK_UP_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise StackError(
            f"`{' '.join(command)}` did not finish within {STACK_UP_TIMEOUT_S:.0f}s\n{log_tail(service)}"
        ) from exc
    if done.returncode != 0:
        raise StackError(
            f"`{' '.join(command)}` failed with exit code {done.returncode}\n"
            f"{done.stdout}{done.stderr}\n{log_tail(service)}"
        )


def _checked(service: str, env: str, endpoint: str, check: Callable[[str], None]) -> str:
    """Ask ``check`` whether ``endpoint`` answers; raise :class:`StackError` naming where it came from."""
    try:
        check(endpoint)
    except Exception as exc:
        local = not os.environ.get(env) and _mode() == "local"
        origin = (
            f"from {env}"
            if os.environ.get(env)
            else f"started by {'deploy/local/stack.sh' if local else 'testcontainers'}"
        )
        tail = f"\n{log_tail(service)}" if local else ""
        raise StackError(
            f"{service} at {endpoint} ({origin}) does not answer: {type(exc).__name__}: {exc}{tail}"
        ) from exc
    return endpoint


def stack_mode(env: Mapping[str, str] | None = None, docker_reachable: Callable[[], bool] | None = None) -> str:
    """``local`` or ``testcontainers``: how to start the services no override variable names.

    ``PAREIS_TEST_STACK`` in ``env`` (default: the environment) is ``local``, ``testcontainers`` or ``auto`` (the
    default: ``testcontainers`` when ``docker_reachable()`` says a Docker engine answers, else ``local``); any other
    value is a :class:`StackError`.
    """
    env = os.environ if env is None else env
    mode = env.get(STACK_ENV, "").strip() or "auto"
    if mode not in STACK_MODES:
        raise StackError(f"{STACK_ENV}={mode!r}: expected one of {', '.join(STACK_MODES)}")
    if mode != "auto":
        return mode
    if docker_reachable is None:
        from tests.support.containers import docker_reachable
    return "testcontainers" if docker_reachable() else "local"


@functools.cache
def _mode() -> str:
    return stack_mode()


def _ours(service: str, local: str) -> str:
    """Where our ``service`` answers, started as :func:`stack_mode` says."""
    if _mode() == "testcontainers":
        from tests.support import containers

        start: Callable[[], str] = getattr(containers, service)
        try:
            return start()
        except Exception as exc:
            raise StackError(f"testcontainers could not start {service}: {type(exc).__name__}: {exc}") from exc
    stack_up(service)
    return local


@functools.cache
def kafka_endpoint() -> str:
    """Bootstrap servers of a Kafka that answers metadata requests (cached for the process)."""
    override = os.environ.get(KAFKA_ENV)
    return _checked("kafka", KAFKA_ENV, override or _ours("kafka", LOCAL_KAFKA), check_kafka)


@functools.cache
def session_id() -> str:
    """This test session's id (its Redis lease holds it)."""
    return f"{os.getpid()}-{uuid.uuid4().hex}"


@functools.cache
def redis_endpoint() -> str:
    """URL of a Redis server that answers PING, with this session's database in its path (cached): the one the
    override URL names, else one leased from :data:`tests.support.redis_lease.POOL` for this session."""
    override = os.environ.get(REDIS_ENV)
    server = _checked("redis", REDIS_ENV, override or _ours("redis", LOCAL_REDIS), check_redis)
    if redis_db(server) is not None:
        return server
    from tests.support import redis_lease

    with redis_registry(server) as registry:
        try:
            db = redis_lease.claim(registry, session_id())
        except redis_lease.NoFreeDatabase as exc:
            raise StackError(str(exc)) from exc
    return with_redis_db(server, db)


def redis_registry(url: str) -> Any:
    """A client on the lease registry database of the server at ``url`` (:mod:`tests.support.redis_lease`)."""
    import redis

    from tests.support import redis_lease

    registry = urlunsplit(urlsplit(url)._replace(path=f"/{redis_lease.REGISTRY_DB}"))
    return redis.Redis.from_url(registry, socket_timeout=CHECK_TIMEOUT_S)


def release_redis_db(url: str) -> None:
    """Give back the database this session leased in :func:`redis_endpoint` (a no-op when it holds no lease on
    it: the override URL named the database)."""
    from tests.support import redis_lease

    db = redis_db(url)
    if db is None:
        return
    with redis_registry(url) as registry:
        redis_lease.release(registry, session_id(), db)


def redis_db(url: str) -> int | None:
    """The database a Redis URL names, or None."""
    path = urlsplit(url).path.strip("/")
    return int(path) if path else None


@functools.cache
def redis_cluster_endpoint() -> str:
    """URL (``redis+cluster://``) of a Redis Cluster whose every slot is served, leased by this session (cached):
    the override's, else ours (``deploy/local/stack.sh up redis-cluster``, whatever ``PAREIS_TEST_STACK`` says).
    Waits up to :data:`CLUSTER_LEASE_WAIT_S` for another session to let go of it."""
    override = os.environ.get(REDIS_CLUSTER_ENV)
    if not override:
        stack_up("redis-cluster")
    url = _checked("redis-cluster", REDIS_CLUSTER_ENV, override or LOCAL_REDIS_CLUSTER, check_redis_cluster)
    client = redis_cluster_client(url)
    try:
        taken = wait_until(
            lambda: (
                client.set(CLUSTER_LEASE, session_id(), nx=True, ex=6 * 3600)
                or client.get(CLUSTER_LEASE) == session_id().encode()
            ),
            CLUSTER_LEASE_WAIT_S,
            f"the test lease on the Redis Cluster at {url} ({CLUSTER_LEASE}), held by another session",
            every_s=0.5,
        )
    except AssertionError as exc:
        raise StackError(str(exc)) from exc
    finally:
        client.close()
    assert taken
    return url


def redis_cluster_client(url: str) -> Any:
    """A ``RedisCluster`` (bytes in and out) on a ``redis+cluster://`` URL, built as Pareis builds it."""
    from pareis.compose.ports import redis_client

    return redis_client(url)


def release_redis_cluster(url: str) -> None:
    """Give the cluster back (when this session still holds it)."""
    client = redis_cluster_client(url)
    try:
        if client.get(CLUSTER_LEASE) == session_id().encode():
            client.delete(CLUSTER_LEASE)
    finally:
        client.close()


def clear_redis_cluster(client: Any) -> None:
    """Delete every key of the cluster but this session's lease, on every primary (the cluster's FLUSHALL would
    drop the lease too)."""
    for node in client.get_primaries():
        server = client.get_redis_connection(node)
        keys = [k for k in server.scan_iter(count=1000) if k != CLUSTER_LEASE.encode()]
        for start in range(0, len(keys), 500):
            pipe = server.pipeline(transaction=False)
            for key in keys[start : start + 500]:
                pipe.unlink(key)
            pipe.execute()


@functools.cache
def postgres_endpoint() -> str:
    """DSN of a PostgreSQL server that answers ``select 1`` (cached)."""
    override = os.environ.get(POSTGRES_ENV)
    return _checked("postgres", POSTGRES_ENV, override or _ours("postgres", LOCAL_POSTGRES), check_postgres)


def with_redis_db(url: str, db: int) -> str:
    """``url`` with database ``db`` in its path, unless the URL already names a database."""
    parts = urlsplit(url)
    if parts.path.strip("/"):
        return url
    return urlunsplit(parts._replace(path=f"/{db}"))


def check_kafka(bootstrap: str) -> None:
    """Raise unless a metadata request to ``bootstrap`` lists at least one broker."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    metadata = admin.list_topics(timeout=CHECK_TIMEOUT_S)
    if not metadata.brokers:
        raise StackError("metadata lists no broker")


def check_redis(url: str) -> None:
    """Raise unless the Redis server at ``url`` answers PING."""
    import redis

    with redis.Redis.from_url(url, socket_timeout=CHECK_TIMEOUT_S) as client:
        if not client.ping():
            raise StackError("PING did not answer PONG")


def check_redis_cluster(url: str) -> None:
    """Raise unless the cluster at ``url`` reports ``cluster_state:ok`` on every node it lists."""
    client = redis_cluster_client(url)
    try:
        for node in client.get_nodes():
            info = client.get_redis_connection(node).cluster("info")
            if info.get("cluster_state") != "ok":
                raise StackError(f"node {node.name} reports cluster_state {info.get('cluster_state')}")
    finally:
        client.close()


def check_postgres(dsn: str) -> None:
    """Raise unless the server at ``dsn`` answers ``select 1``."""
    import psycopg

    with psycopg.connect(dsn, connect_timeout=int(CHECK_TIMEOUT_S)) as conn:
        row = conn.execute("select 1").fetchone()
        if row != (1,):
            raise StackError(f"select 1 returned {row!r}")


def wait_until(condition: Callable[[], Any], timeout_s: float, what: str, every_s: float = 0.05) -> Any:
    """Poll ``condition`` until it returns something truthy, and return that; AssertionError naming ``what`` after
    ``timeout_s`` seconds. The readiness poll with a deadline every test uses where a fixed sleep would otherwise
    stand in for synchronisation."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(every_s)


def create_topic(admin: AdminClient, name: str, partitions: int, config: dict[str, str]) -> None:
    """Create ``name`` and wait until the cluster's metadata shows every partition with a leader."""
    from confluent_kafka.admin import NewTopic as KafkaNewTopic

    futures = admin.create_topics(
        [KafkaNewTopic(name, num_partitions=partitions, replication_factor=1, config=config)],
        operation_timeout=CHECK_TIMEOUT_S,
    )
    futures[name].result(timeout=CHECK_TIMEOUT_S)

    def ready() -> bool:
        topic = admin.list_topics(topic=name, timeout=CHECK_TIMEOUT_S).topics.get(name)
        return (
            topic is not None
            and topic.error is None
            and len(topic.partitions) == partitions
            and all(p.leader >= 0 for p in topic.partitions.values())
        )

    wait_until(ready, 30.0, f"topic {name} to have {partitions} partitions with leaders", every_s=0.1)


def delete_topics(admin: AdminClient, names: list[str]) -> None:
    """Delete ``names``, waiting for the broker to accept; errors other than 'already gone' are raised."""
    if not names:
        return
    futures = admin.delete_topics(names, operation_timeout=CHECK_TIMEOUT_S)
    for name, future in futures.items():
        try:
            future.result(timeout=CHECK_TIMEOUT_S)
        except KafkaException as exc:
            if "UNKNOWN_TOPIC_OR_PART" not in str(exc):
                raise StackError(f"could not delete topic {name}: {exc}") from exc


def consume(consumer: Consumer, count: int, timeout: float = 30.0) -> list[Message]:
    """Poll ``consumer`` until ``count`` messages (errors excluded) arrived; raise TimeoutError otherwise.

    Partition EOF events are skipped; any other consumer error is raised as :class:`StackError`.
    """
    messages: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(messages) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"got {len(messages)} of {count} messages within {timeout}s")
        message = consumer.poll(min(remaining, 1.0))
        if message is None:
            continue
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:  # informational, not a failure
                continue
            raise StackError(f"consumer error: {error}")
        messages.append(message)
    return messages


def read_to_end(consumer: Consumer, partitions: int, timeout: float = 30.0) -> list[Message]:
    """Every message ``consumer`` can read until each of its ``partitions`` partitions reports end-of-partition.

    The consumer must be configured with ``enable.partition.eof=True`` and subscribed to (or assigned) one topic
    of ``partitions`` partitions. Use it once the producers are done, to assert on everything a topic holds
    (with ``read_committed``, the end is the last stable offset) without a fixed wait. Raises TimeoutError.
    """
    messages: list[Message] = []
    at_end: set[int | None] = set()
    deadline = time.monotonic() + timeout
    while len(at_end) < partitions:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{len(at_end)} of {partitions} partitions read to the end within {timeout}s")
        message = consumer.poll(min(remaining, 1.0))
        if message is None:
            continue
        error = message.error()
        if error is None:
            messages.append(message)
        elif error.code() == KafkaError._PARTITION_EOF:
            at_end.add(message.partition())
        else:
            raise StackError(f"consumer error: {error}")
    return messages
