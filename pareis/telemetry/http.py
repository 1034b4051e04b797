"""The per-process HTTP endpoint: ``/metrics`` (Prometheus text), ``/healthz`` and ``/readyz`` (JSON, 200/503)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from pareis.telemetry.health import Health, Report


class TelemetryServer:
    """Serves ``registry`` and ``health`` on ``host:port`` from a daemon thread (port 0: any free port)."""

    def __init__(self, registry: CollectorRegistry, health: Health, host: str = "0.0.0.0", port: int = 9400):
        self.registry = registry
        self.health = health
        try:
            self._server = ThreadingHTTPServer((host, port), self._handler_class())
        except OSError as exc:  # a port in use, a bad host: say which setting, not only the errno
            raise OSError(exc.errno, f"cannot listen on {host}:{port} (runtime.http_port): {exc.strerror}") from exc
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="telemetry-http", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> TelemetryServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(server.registry))
                elif path == "/healthz":
                    self._report(server.health.liveness())
                elif path == "/readyz":
                    self._report(server.health.readiness())
                else:
                    self._send(404, "text/plain", b"not found\n")

            def _report(self, report: Report) -> None:
                body = orjson.dumps({"ok": report.ok, "details": report.details})
                self._send(200 if report.ok else 503, "application/json", body)

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return None  # probes every few seconds would drown the logs

        return Handler
