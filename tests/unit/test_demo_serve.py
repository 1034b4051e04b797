"""`pareis demo --serve`: the demo runs, then Mission Control serves its final in-memory state until SIGINT."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.support import sample
from tests.support.stack import wait_until

pytestmark = pytest.mark.slow  # a subprocess runs the whole demo first
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bytes(response.read())
    except OSError:
        return None


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_demo_serve_serves_the_final_state_until_interrupted(tmp_path: Path) -> None:
    port = _free_port()
    command = [sys.executable, "-m", "pareis.cli", "demo", "--timeline", str(sample.TIMELINE), "--out", str(tmp_path)]
    process = subprocess.Popen(
        [*command, "--serve", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "COLUMNS": "200"},
        # Ctrl-C as a terminal delivers it: a run started in the background (CI under `nohup … &`) ignores SIGINT,
        # and the child would inherit that, so the interrupt below would be lost.
        preexec_fn=_default_sigint,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _get(f"{base}/healthz"), 120, "Mission Control after the demo")
        [incident] = json.loads(_get(f"{base}/api/incidents") or b"[]")
        assert incident["state"] == "RESOLVED"  # the sample's incident heals by its last day
        page = (_get(f"{base}/incidents/{incident['urn']}") or b"").decode()
        assert "Postmortem" in page and "CONTAMINATED" in page
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    text = output.decode()
    # uvicorn shuts down gracefully, then re-raises the signal: the shell's "interrupted" status, 128 + SIGINT.
    assert process.returncode == 128 + signal.SIGINT, text
    assert "ACTIVE → RESOLVED" in text and f"Mission Control on http://127.0.0.1:{port}/" in text
