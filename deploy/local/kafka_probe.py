#!/usr/bin/env python3
"""Readiness probe for the local Kafka broker: exit 0 when a Metadata request answers with at least one broker.

Standard library only, so that `stack.sh up` works before the project's venv exists (any python3 will do).
Speaks the Kafka wire protocol directly: an ApiVersions v0 request to learn which Metadata versions the
broker accepts, then a Metadata request (a non-flexible version, 3..8, whose broker list layout is the same)
for no topics. Usage: kafka_probe.py HOST:PORT [TIMEOUT_SECONDS]. Exit 1 with a reason on stderr otherwise.
"""

from __future__ import annotations

import socket
import struct
import sys

API_METADATA = 3
API_VERSIONS = 18
CLIENT_ID = b"pareis-stack-probe"


def _request(sock: socket.socket, api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    """Send one request with header v1 and return the response body (after the correlation id)."""
    header = struct.pack(">hhih", api_key, version, correlation_id, len(CLIENT_ID)) + CLIENT_ID
    payload = header + body
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    size = struct.unpack(">i", _read_exact(sock, 4))[0]
    response = _read_exact(sock, size)
    (got_id,) = struct.unpack_from(">i", response, 0)
    if got_id != correlation_id:
        raise RuntimeError(f"correlation id {got_id} != {correlation_id}")
    return response[4:]


def _read_exact(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise RuntimeError("connection closed by the broker")
        chunks += chunk
    return bytes(chunks)


def probe(host: str, port: int, timeout: float) -> int:
    """Return the number of brokers the cluster's metadata lists; raise on any protocol or socket error."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        body = _request(sock, API_VERSIONS, 0, 1, b"")
        error_code, count = struct.unpack_from(">hi", body, 0)
        if error_code != 0:
            raise RuntimeError(f"ApiVersions error code {error_code}")
        ranges = {}
        for i in range(count):
            key, low, high = struct.unpack_from(">hhh", body, 6 + 6 * i)
            ranges[key] = (low, high)
        if API_METADATA not in ranges:
            raise RuntimeError("broker does not accept Metadata requests yet")
        low, high = ranges[API_METADATA]
        version = min(max(low, 3), 8)
        if not low <= version <= high:
            raise RuntimeError(f"no Metadata version in 3..8 among {low}..{high}")
        # topics: empty array (no topic metadata wanted); v4+ adds allow_auto_topic_creation=false;
        # v8 adds include_cluster/topic_authorized_operations=false.
        request = struct.pack(">i", 0)
        if version >= 4:
            request += b"\x00"
        if version >= 8:
            request += b"\x00\x00"
        body = _request(sock, API_METADATA, version, 2, request)
        # v3..v8: throttle_time_ms int32, then brokers array.
        (brokers,) = struct.unpack_from(">i", body, 4)
        return int(brokers)


def main(argv: list[str]) -> int:
    """CLI entry point; see the module docstring."""
    if len(argv) not in (2, 3):
        print(f"usage: {argv[0]} HOST:PORT [TIMEOUT_SECONDS]", file=sys.stderr)
        return 2
    host, _, port = argv[1].rpartition(":")
    timeout = float(argv[2]) if len(argv) == 3 else 3.0
    try:
        brokers = probe(host, int(port), timeout)
    except (OSError, RuntimeError, struct.error) as exc:
        print(f"kafka at {argv[1]} not ready: {exc}", file=sys.stderr)
        return 1
    if brokers < 1:
        print(f"kafka at {argv[1]} answers but lists no broker yet", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
