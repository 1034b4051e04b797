"""redis-server processes a test starts for itself, on free ports, so that it may reconfigure, flush, kill and
restart them (the shared test Redis and cluster are never reconfigured or restarted).

``private_redis`` (a fixture: import it into the test module) is a factory: ``private_redis(*options) -> Server``,
each server from Debian's ``redis-server`` with ``--save "" --appendonly no`` and ``noeviction`` unless the options
say otherwise; every server is stopped when the test ends. ``private_cluster`` is a whole Redis Cluster of the
test's own (:class:`Cluster`)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from tests.support.roles import free_port
from tests.support.stack import wait_until

DEFAULTS = ("--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction")


class Server:
    """One redis-server on 127.0.0.1:``port``, in its own directory."""

    def __init__(self, directory: Path, options: tuple[str, ...]) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is needed (deploy/local/redis.sh installs it)"
        # A cluster node also listens on its port + 10000 (the cluster bus): an ephemeral port may leave no room.
        self.port = _free_base(1) if "--cluster-enabled" in options else free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(directory)]
        self._args += [*DEFAULTS, *options]
        self._proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        """Start it (again, on the same port and options: a restart without persistence comes back empty)."""
        self._proc = subprocess.Popen(self._args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)

        def up() -> bool:
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                return False
            except redis.ResponseError:  # loading its data
                return False

        wait_until(up, 20, f"redis-server on port {self.port}")
        client.close()

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(10)
            self._proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
            self._proc = None


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Factory of :class:`Server` (see the module docstring)."""
    servers: list[Server] = []

    def start(*options: str) -> Server:
        directory = tmp_path / f"redis-{len(servers)}"
        directory.mkdir()
        server = Server(directory, options)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


class Cluster:
    """A Redis Cluster of the test's own (3 primaries, 3 replicas), made by ``deploy/local/redis-cluster.sh`` in a
    directory of its own on six free ports: a primary can be killed and restarted without touching the shared one."""

    def __init__(self, directory: Path) -> None:
        self.base = _free_base()
        self.url = f"redis+cluster://127.0.0.1:{self.base}"
        self._env = {
            **os.environ,
            "PAREIS_STACK_DIR": str(directory),
            "PAREIS_STACK_REDIS_CLUSTER_PORT": str(self.base),
        }
        self._dir = directory
        self._script("up")

    def _script(self, *args: str) -> None:
        done = subprocess.run(
            [str(CLUSTER_SCRIPT), *args], env=self._env, capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0, f"redis-cluster.sh {' '.join(args)}: {done.stdout}{done.stderr}"

    def node_pid(self, port: int) -> int:
        return int((self._dir / "redis-cluster" / str(port) / "redis.pid").read_text().strip())

    def kill(self, port: int) -> None:
        """SIGKILL the node on ``port``, as a crash of its machine."""
        os.kill(self.node_pid(port), signal.SIGKILL)

    def up(self) -> None:
        """Start what is not running (a killed node rejoins; a failed-over primary comes back as a replica)."""
        self._script("up")

    def down(self) -> None:
        self._script("down", "--purge")


CLUSTER_SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "local" / "redis-cluster.sh"


def _free_base(count: int = 6) -> int:
    """A first port of ``count`` free ones whose cluster-bus ports (+10000) are free too."""
    for base in range(21000 + random.randrange(0, 4000), 30000, 17):
        ports = [p for i in range(count) for p in (base + i, base + i + 10000)]
        if all(_free(p) for p in ports):
            return base
    raise AssertionError(f"no {count} free ports for cluster nodes")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.fixture
def private_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A :class:`Cluster` of the test's own, purged when the test ends."""
    cluster = Cluster(tmp_path / "stack")
    yield cluster
    cluster.down()
