"""The backends every store contract suite runs on: in process memory, a standalone Redis and a Redis Cluster.

``backend`` (registered in ``tests/conftest.py``) is parametrised ``memory``, ``redis`` and ``redis-cluster`` (the
Redis ones marked ``integration``: ``make unit`` runs the memory one only). A suite builds its store from it::

    @pytest.fixture
    def store(backend: Backend) -> IncidentStore:
        if backend.client is None:
            return MemoryIncidentStore()
        return RedisIncidentStore(backend.client, prefix="test:")

so each contract test runs once per backend, against an empty store (the Redis fixtures empty their database or
cluster before each test). ``redis_backend_url`` does the same for tests that need a URL (the roles build their own
clients).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

REDIS = (
    pytest.param("redis", marks=pytest.mark.integration),
    pytest.param("redis-cluster", marks=pytest.mark.integration),
)
BACKENDS = ("memory", *REDIS)
_CLIENTS = {"redis": "redis_client", "redis-cluster": "redis_cluster_client"}
_URLS = {"redis": "redis_url", "redis-cluster": "redis_cluster_url"}


@dataclass(frozen=True)
class Backend:
    """One backend: its name and, on Redis, a client on an empty database (``redis.Redis`` or ``RedisCluster``,
    bytes in and out); None in memory."""

    name: str
    client: Any = None

    def emptied(self) -> Any:
        """The client, its database or cluster emptied again (for the examples of one property test)."""
        from tests.support import stack

        if self.name == "redis":
            self.client.flushdb()
        elif self.name == "redis-cluster":
            stack.clear_redis_cluster(self.client)
        return self.client


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """The backend of this run of the test (see the module docstring)."""
    name: str = request.param
    if name == "memory":
        return Backend(name)
    return Backend(name, request.getfixturevalue(_CLIENTS[name]))


@pytest.fixture(params=REDIS)
def redis_backend(request: pytest.FixtureRequest) -> Backend:
    """The Redis backends only (standalone, then cluster): for what exists on Redis alone."""
    name: str = request.param
    return Backend(name, request.getfixturevalue(_CLIENTS[name]))


@pytest.fixture(params=REDIS)
def redis_backend_url(request: pytest.FixtureRequest) -> str:
    """The URL of an empty standalone Redis database, then of the (emptied) Redis Cluster: a whole-pipeline test
    over it runs once on each."""
    url: str = request.getfixturevalue(_URLS[request.param])
    return url
