"""Mission Control served from a daemon thread on a free port, for the browser tests."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

from pareis.web.server import uvicorn_config


@contextlib.contextmanager
def serving(app: Starlette, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``app`` (:func:`pareis.web.app.create_app`) from a daemon thread on a free port; yields its base URL,
    stops it on exit."""
    server = uvicorn.Server(uvicorn_config(app, host, 0))
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
        follower = getattr(app.state, "follower", None)
        if follower is not None:
            follower.close()  # end the event streams first, so the server stops at once
        server.should_exit = True
        thread.join(10)
