"""Structured logs stay one JSON object per line when many threads log at once (``pareis run all`` runs every role
in one process): a line is written whole, never with another thread's line between it and its newline."""

from __future__ import annotations

import io
import json
import sys
import threading
from pathlib import Path

import pytest
import structlog

from pareis.telemetry.logging import configure_logging


class Wrapped(io.TextIOBase):
    """A stream written through Python code (as a capture, a colouring or a forwarding wrapper is): threads switch
    between two of its writes, as they may on any stream between two writes of one line."""

    def __init__(self, inner: io.TextIOBase) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        return self._inner.write(text)

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        self._inner.close()


THREADS = 8
LINES = 400


@pytest.mark.unit
def test_lines_logged_by_many_threads_at_once_are_each_one_json_object(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "roles.log"
    out = Wrapped(path.open("w", buffering=1))
    monkeypatch.setattr(sys, "stderr", out)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can: an unguarded gap is hit
    try:
        configure_logging("INFO", json=True)
        start = threading.Barrier(THREADS)

        def log(role: str) -> None:
            logger = structlog.get_logger()
            start.wait()
            for i in range(LINES):
                logger.info("committed; leaving the group", role=role, n=i)

        threads = [threading.Thread(target=log, args=(f"role-{t}",)) for t in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
        structlog.reset_defaults()
        out.close()
    lines = path.read_text().splitlines()
    assert len(lines) == THREADS * LINES
    seen = {(e["role"], e["n"]) for e in (json.loads(line) for line in lines)}
    assert len(seen) == THREADS * LINES
