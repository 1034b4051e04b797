"""redis-server processes a test starts for itself, on free ports, so that it may reconfigure, flush, kill and
restart them (the shared test Redis and cluster are never reconfigured or restarted).

``private_redis`` (a fixture: import it into the test module) is a factory: ``private_redis(*options) -> Server``,
each server from Debian's ``redis-server`` with ``--save "" --appendonly no`` and ``noeviction`` unless the options
say otherwise; every server is stopped when the test ends."""

from __future__ import annotations

import shutil
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
        self.port = free_port()
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
