"""Running Mission Control in the foreground until SIGINT/SIGTERM (``pareis serve``, ``pareis demo --serve``), on
uvicorn."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import uvicorn
from starlette.types import ASGIApp

from pareis.answers.sources import Sources
from pareis.web.app import create_app, wall_clock_ms
from pareis.web.present import when


def uvicorn_config(app: ASGIApp, host: str, port: int) -> uvicorn.Config:
    """How Mission Control runs on uvicorn (``port`` 0: a free one)."""
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
    guard: contextlib.AbstractContextManager[object] | None = None,
    announce: Callable[[str], None] = print,
    clock_fixed: bool = False,
) -> None:
    """Serve ``sources`` on ``host:port`` until interrupted: uvicorn stops gracefully on SIGINT or SIGTERM, then
    re-raises the signal, so the process ends as interrupted (status 130 or 143). ``clock_fixed``: ``clock`` is a
    given time (``--at``, a snapshot's newest time), which the pages state."""
    app = create_app(sources, token=token, clock=clock, guard=guard, clock_fixed=clock_fixed)
    at = f", evaluated at {when(clock())}" if clock_fixed else ""
    announce(f"Mission Control on http://{host}:{port}/ ({sources.origin}{at}); Ctrl-C stops it")
    uvicorn.Server(uvicorn_config(app, host, port)).run()
