"""Back-pressure: Redis unreachable for 10 s → the role pauses and backs off, commits nothing past unprocessed
input, then resumes and processes everything. Redis is cut off through a TCP proxy this test controls (the shared
Redis keeps running for everyone else)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

from tests.support.roles import RoleProcess, committed, end_offsets, free_port, produce, wait_until

pytestmark = pytest.mark.integration

OUTAGE_S = 10.0


class Proxy:
    """A TCP proxy on 127.0.0.1 to ``target``; :meth:`down` refuses and cuts every connection, :meth:`up`
    listens again on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listening = threading.Event()
        self._listener: threading.Thread | None = None

    def up(self) -> Proxy:
        server = socket.create_server(("127.0.0.1", self.port))
        server.settimeout(0.1)
        self._listening.set()
        self._listener = threading.Thread(target=self._accept, args=(server,), daemon=True)
        self._listener.start()
        return self

    def down(self) -> None:
        self._listening.clear()
        if self._listener is not None:
            self._listener.join(5)
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()

    def _accept(self, server: socket.socket) -> None:
        with server:
            while self._listening.is_set():
                try:
                    client, _ = server.accept()
                except TimeoutError:
                    continue
                upstream = socket.create_connection(self.target)
                with self._lock:
                    self._sockets.update((client, upstream))
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def processed_offsets(client: redis.Redis, prefix: str) -> dict[int, int]:
    """The highest offset per partition whose effect is in Redis."""
    highest: dict[int, int] = {}
    for field in client.hkeys(f"{prefix}:effects"):
        _, partition, offset = field.decode().rsplit(":", 2)
        highest[int(partition)] = max(highest.get(int(partition), -1), int(offset))
    return highest


def test_redis_outage_pauses_backs_off_and_resumes_without_loss(
    kafka_bootstrap: str,
    new_topic: Callable[..., str],
    new_group: str,
    redis_url: str,
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    parts = urlsplit(redis_url)
    proxy = Proxy((parts.hostname or "127.0.0.1", parts.port or 6379)).up()
    proxied = urlunsplit(parts._replace(netloc=f"127.0.0.1:{proxy.port}"))
    topic, dead = new_topic(partitions=2), new_topic()
    args = ("--input", topic, "--dlq", dead, "--group", new_group, "--redis", proxied, "--prefix", "bp")
    try:
        with RoleProcess("redis", tmp_path, *args, "--backoff-max-s", "2") as role:
            role.wait_ready()
            produce(kafka_bootstrap, topic, ((f"k{i}".encode(), b"first") for i in range(500)))
            wait_until(lambda: redis_client.hlen("bp:effects") == 500, 60, "the first 500 effects")

            proxy.down()
            produce(kafka_bootstrap, topic, ((f"k{i}".encode(), b"second") for i in range(500)))
            outage_ends = time.monotonic() + OUTAGE_S
            while time.monotonic() < outage_ends:
                done = processed_offsets(redis_client, "bp")
                for partition, offset in committed(kafka_bootstrap, new_group, topic, 2).items():
                    assert offset <= done.get(partition, -1) + 1, "committed past unprocessed input"
                time.sleep(0.1)  # sampling interval of the invariant, not a synchronisation
            assert redis_client.hlen("bp:effects") == 500
            assert role.running
            assert role.metric("pareis_paused") == 1
            assert role.metric("pareis_backoffs_total") >= 3
            readiness = role.get("/readyz")
            assert readiness is not None and readiness.status_code == 503, "not ready while Redis is unreachable"

            proxy.up()
            wait_until(lambda: redis_client.hlen("bp:effects") == 1000, 60, "every effect after the outage")
            wait_until(lambda: role.metric("pareis_paused") == 0, 30, "resumed")
            wait_until(
                lambda: committed(kafka_bootstrap, new_group, topic, 2) == end_offsets(kafka_bootstrap, topic, 2),
                30,
                "offsets committed to the end",
            )
            assert role.terminate(15) == 0
    finally:
        proxy.down()
    values = redis_client.hvals("bp:effects")
    assert values.count(b"first") == 500 and values.count(b"second") == 500
