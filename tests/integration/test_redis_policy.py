"""Pareis refuses to start on a Redis that may evict its state (issue 11, point 4), against real redis-servers
started here with each policy (the shared test Redis is never reconfigured)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from pareis.compose import roles
from pareis.config import RedisSettings, Settings, TicketSettings
from pareis.errors import Fatal, Retriable
from pareis.kafka.role import Pipeline
from pareis.store.redis_policy import require_noeviction
from tests.support.private_redis import Server
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


# --- bad input: the URL's mode, the cluster's slots, persistence (issue 34) --------------------------------------
def lineage_started(url: str, **redis: object) -> None:
    """Build the lineage role's pipeline on ``url`` and start it (what `pareis run lineage` does first)."""
    settings = Settings(redis_url=url, redis=RedisSettings(**redis), tickets=TicketSettings(no_tools=True))
    pipeline = roles.lineage_process(settings)
    try:
        pipeline.start()
    finally:
        pipeline.close()


def test_a_cluster_url_naming_a_standalone_server_is_refused(private_redis: Callable[..., Server]) -> None:
    server = private_redis()
    with pytest.raises(Fatal, match=r"is not a cluster .*: name a standalone server with a redis:// URL") as refused:
        lineage_started(server.url.replace("redis://", "redis+cluster://").removesuffix("/0"))
    assert "\n" not in str(refused.value)


def test_a_standalone_url_naming_a_cluster_node_is_refused(redis_cluster_url: str) -> None:
    node = redis_cluster_url.replace("redis+cluster://", "redis://")
    with pytest.raises(Fatal, match=r"is a Redis Cluster node: name the cluster with a redis\+cluster://") as refused:
        lineage_started(node)
    assert "\n" not in str(refused.value)


def test_an_unreachable_cluster_is_retriable_in_one_line() -> None:
    with pytest.raises(Retriable, match="redis cluster unavailable") as refused:
        lineage_started(f"redis+cluster://127.0.0.1:{free_port()}")
    assert "\n" not in str(refused.value)


def test_a_cluster_with_slots_no_primary_serves_is_refused(private_redis: Callable[..., Server]) -> None:
    node = private_redis("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
    with redis.Redis(port=node.port) as client:
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 8000)  # a one-node cluster serving half the slots
        wait_until(lambda: client.cluster("info").get("cluster_slots_assigned") == "8001", 20, "the slots assigned")
    with pytest.raises((Fatal, Retriable)) as refused:
        lineage_started(f"redis+cluster://127.0.0.1:{node.port}")
    assert re.search(r"8001 of 16384 slots|8001 of 16384 covered", str(refused.value)), str(refused.value)
    assert "\n" not in str(refused.value)


def test_persistence_is_required_where_the_setting_asks_for_it(private_redis: Callable[..., Server]) -> None:
    without = private_redis()
    lineage_started(without.url)  # not asked: accepted
    with pytest.raises(Fatal, match=r"keeps no append-only file \(appendonly no\)") as refused:
        lineage_started(without.url, require_persistence=True)
    assert "\n" not in str(refused.value)
    with_aof = private_redis("--appendonly", "yes", "--appendfsync", "everysec")
    lineage_started(with_aof.url, require_persistence=True)


def test_a_role_on_a_bad_redis_exits_1_with_one_line_and_is_never_ready(private_redis: Callable[..., Server]) -> None:
    server = private_redis()
    env = {**os.environ, "PAREIS_REDIS_URL": server.url.replace("redis://", "redis+cluster://").removesuffix("/0")}
    env |= {"PAREIS_KAFKA__BOOTSTRAP_SERVERS": "127.0.0.1:1", "PAREIS_RUNTIME__HTTP_PORT": str(free_port())}
    command = [Path(sys.executable).with_name("pareis"), "run", "lineage"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    failed = [line for line in (done.stdout + done.stderr).splitlines() if "role failed" in line]
    assert len(failed) == 1 and "is not a cluster" in failed[0], done.stdout + done.stderr
