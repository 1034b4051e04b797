"""Running Mission Control: in the foreground until SIGINT/SIGTERM (``pareis serve``, ``pareis demo --serve``) or in
a background thread on a free port (tests, the benchmark), both on uvicorn."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn

from pareis.answers.sources import Sources
from pareis.web.app import create_app, wall_clock_ms
from pareis.web.present import when


def _config(app: Any, host: str, port: int) -> uvicorn.Config:
    # timeout_graceful_shutdown: open event streams never end by themselves; give them a second, then close.
    return uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, timeout_graceful_shutdown=1, lifespan="on"
    )


def run_app(
    sources: Sources,
    *,
    host: str = "127.0.0.1",
    port: int = 9420,
    token: str | None = None,
    clock: Callable[[], int] = wall_clock_ms,
    guard: contextlib.AbstractContextManager[Any] | None = None,
    announce: Callable[[str], None] = print,
    clock_fixed: bool = False,
) -> None:
    """Serve ``sources`` on ``host:port`` until interrupted: uvicorn stops gracefully on SIGINT or SIGTERM, then
    re-raises the signal, so the process ends as interrupted (status 130 or 143). ``clock_fixed``: ``clock`` is a
    given time (``--at``, a snapshot's newest time), which the pages state."""
    app = create_app(sources, token=token, clock=clock, guard=guard, clock_fixed=clock_fixed)
    at = f", evaluated at {when(clock())}" if clock_fixed else ""
    announce(f"Mission Control on http://{host}:{port}/ ({sources.origin}{at}); Ctrl-C stops it")
    uvicorn.Server(_config(app, host, port)).run()


@contextlib.contextmanager
def serving(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``app`` from a daemon thread on a free port; yields its base URL, stops it on exit."""
    server = uvicorn.Server(_config(app, host, 0))
    thread = threading.Thread(target=server.run, name="pareis-web", daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("Mission Control failed to start")
            thread.join(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://{host}:{port}"
    finally:
        follower = getattr(getattr(app, "state", None), "follower", None)
        if follower is not None:
            follower.close()  # end the event streams first, so the server stops at once
        server.should_exit = True
        thread.join(10)
