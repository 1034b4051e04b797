"""Pareis refuses to start on a Redis that may evict its state (issue 11, point 4), against real redis-servers
started here with each policy (the shared test Redis is never reconfigured)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from pareis.compose import roles
from pareis.config import Settings, TicketSettings
from pareis.errors import Fatal
from pareis.kafka.role import Pipeline
from pareis.store.redis_policy import require_noeviction
from tests.support.roles import free_port, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """Factory: ``start(policy) -> url`` of a fresh redis-server on a free port with that maxmemory-policy."""
    binary = shutil.which("redis-server")
    assert binary, "redis-server is needed (deploy/local/redis.sh installs it)"
    procs: list[subprocess.Popen[bytes]] = []

    def start(policy: str) -> str:
        port = free_port()
        args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += ["--dir", str(tmp_path), "--maxmemory", "64mb", "--maxmemory-policy", policy]
        procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        client = redis.Redis(port=port, socket_connect_timeout=0.5)

        def up() -> bool:
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                return False

        wait_until(up, 20, f"redis-server on port {port}")
        client.close()
        return f"redis://127.0.0.1:{port}/0"

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-ttl", "allkeys-random", "volatile-lru"])
def test_an_evicting_redis_is_refused_with_a_one_line_reason(redis_server: Callable[[str], str], policy: str) -> None:
    client = redis.Redis.from_url(redis_server(policy))
    with pytest.raises(Fatal, match=f"maxmemory-policy {policy}") as caught:
        require_noeviction(client)
    assert "\n" not in str(caught.value)
    client.close()


def test_noeviction_is_accepted(redis_server: Callable[[str], str]) -> None:
    client = redis.Redis.from_url(redis_server("noeviction"))
    assert require_noeviction(client) == "noeviction"
    client.close()


# (The incidents role shares the same preflight; building it writes DataHub definitions to Kafka first.)
@pytest.mark.parametrize("process", [roles.lineage_process, roles.assertions_process, roles.effects_process])
def test_every_role_on_redis_checks_the_policy_before_it_starts(
    redis_server: Callable[[str], str], process: Callable[[Settings], Pipeline[Any]]
) -> None:
    url = redis_server("allkeys-lru")
    settings = Settings(redis_url=url, tickets=TicketSettings(no_tools=True))
    pipeline = process(settings)
    try:
        with pytest.raises(Fatal, match="allkeys-lru"):
            pipeline.start()
    finally:
        pipeline.close()
