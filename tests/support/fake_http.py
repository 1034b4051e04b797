"""The common part of the fake ticket APIs: a stdlib HTTP server on 127.0.0.1, in a thread.

Each fake (``fake_slack``, ``fake_jira``, ``fake_linear``) subclasses :class:`FakeServer` and implements
:meth:`FakeServer.authenticate` and :meth:`FakeServer.handle`. The base records every request (tests assert on
what the server received) and plays injected faults before the API logic runs: a status with the API's own
error body, ``Retry-After`` on demand, for the next *n* matching requests; or after applying them
(:meth:`FakeServer.apply_then_fail`, with ``lost`` for a response that never arrives), or late
(:meth:`FakeServer.hang_next`). :func:`serve_local`,
:func:`stop_local` and :func:`local_url` are the server's lifecycle, shared with ``fake_gms``.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit


def serve_local(handler: type[BaseHTTPRequestHandler], name: str) -> ThreadingHTTPServer:
    """A server of ``handler`` on a free port of 127.0.0.1, serving in the daemon thread ``name``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, name=name, daemon=True).start()
    return server


def stop_local(server: ThreadingHTTPServer) -> None:
    """Stop serving and close the socket of a :func:`serve_local` server."""
    server.shutdown()
    server.server_close()


def local_url(server: ThreadingHTTPServer | None) -> str:
    """The root of a :func:`serve_local` server (no trailing slash)."""
    assert server is not None, "server not started"
    host, port = server.server_address[:2]
    return f"http://{host!s}:{port}"


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it. Header names are lower-cased."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    def form(self) -> dict[str, str]:
        return {k: v[-1] for k, v in parse_qs(self.body.decode(), keep_blank_values=True).items()}


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
        return cls(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})})

    @classmethod
    def text(cls, status: int, text: str, headers: dict[str, str] | None = None) -> Reply:
        return cls(status, text.encode(), {"Content-Type": "text/plain; charset=utf-8", **(headers or {})})


@dataclass
class _Fault:
    reply: Reply
    times: int
    when: Callable[[Recorded], bool]
    applied: bool = False
    """Run the API logic first (the server applied the request), then answer the fault (or nothing)."""
    lost: bool = False
    """Answer nothing: the connection closes (a response lost in a proxy or a crash)."""
    hang_s: float = 0.0
    """Wait this long before answering (a hung server; the client's read timeout fires first)."""


class FakeServer:
    """Base of the fake APIs. Use as a context manager; ``url`` is the server's root (no trailing slash)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = threading.Lock()  # the API logic runs one request at a time, like a consistent store
        self._requests: list[Recorded] = []
        self._faults: list[_Fault] = []
        self._server: ThreadingHTTPServer | None = None

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes

            def _serve(self) -> None:
                fake._serve(self)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = serve_local(Handler, type(self).__name__)
        return self

    def stop(self) -> None:
        if self._server is not None:
            stop_local(self._server)
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return local_url(self._server)

    # --- what tests use --------------------------------------------------------------------------------------
    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    @property
    def pending_faults(self) -> int:
        """Injected faults not played yet."""
        with self._lock:
            return len(self._faults)

    def fail_next(
        self,
        status: int,
        *,
        times: int = 1,
        retry_after: str | None = None,
        reply: Reply | None = None,
        when: Callable[[Recorded], bool] = lambda request: True,
    ) -> None:
        """Answer the next ``times`` requests matching ``when`` with ``status`` (the API's error body)."""
        answer = reply or self.error_reply(status)
        if retry_after is not None:
            answer = Reply(answer.status, answer.body, {**answer.headers, "Retry-After": retry_after})
        with self._lock:
            self._faults.append(_Fault(answer, times, when))

    def apply_then_fail(
        self,
        status: int,
        *,
        times: int = 1,
        lost: bool = False,
        when: Callable[[Recorded], bool] = lambda request: True,
    ) -> None:
        """The next ``times`` requests matching ``when`` are applied (their effect is in the server's state), then
        answered ``status`` with the API's error body — or, with ``lost``, not answered at all."""
        with self._lock:
            self._faults.append(_Fault(self.error_reply(status), times, when, applied=True, lost=lost))

    def hang_next(
        self, seconds: float, *, times: int = 1, when: Callable[[Recorded], bool] = lambda request: True
    ) -> None:
        """The next ``times`` matching requests are answered only after ``seconds`` (nothing applied)."""
        with self._lock:
            self._faults.append(_Fault(self.error_reply(504), times, when, hang_s=seconds))

    # --- what subclasses implement ---------------------------------------------------------------------------
    def authenticate(self, request: Recorded) -> Reply | None:
        """None when the request carries the right credential, else the API's refusal."""
        raise NotImplementedError

    def handle(self, request: Recorded) -> Reply:
        raise NotImplementedError

    def error_reply(self, status: int) -> Reply:
        """The body this API sends with an injected ``status``."""
        return Reply.text(status, f"error {status}")

    # --- plumbing --------------------------------------------------------------------------------------------
    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        request = Recorded(
            method=handler.command,
            path=parts.path,
            query={k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()},
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=handler.rfile.read(length) if length else b"",
        )
        with self._lock:
            self._requests.append(request)
            fault = next((f for f in self._faults if f.when(request)), None)
            if fault is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
        try:
            if fault is not None and fault.hang_s:
                threading.Event().wait(fault.hang_s)  # a hung server: the client's timeout is what ends this
            if fault is None or fault.applied:
                with self._state:
                    applied = self.authenticate(request) or self.handle(request)
            reply = applied if fault is None else fault.reply
        except Exception as error:  # noqa: BLE001 (a bug in the fake must show as a 500, not a hung client)
            reply = Reply.text(500, f"fake server error: {error!r}")
        if fault is not None and fault.lost:
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        try:
            handler.send_response(reply.status)
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(reply.body)))
            handler.end_headers()
            handler.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (its timeout): fine
            handler.close_connection = True
