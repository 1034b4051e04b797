"""An unreachable broker is named within seconds and ends the process with exit 1 after a bounded wait
(``kafka.connect_timeout_s``), for ``pareis run`` and ``pareis replay`` (issue 11, point 12). No broker is needed:
the address is a free local port nothing listens on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import structlog.testing
from confluent_kafka import Consumer

from pareis.errors import Fatal
from pareis.kafka.clients import library_logger, wait_for_brokers
from tests.support.roles import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_waiting_for_brokers_names_them_at_once_and_gives_up_at_the_deadline() -> None:
    address = f"127.0.0.1:{free_port()}"
    consumer = Consumer({"bootstrap.servers": address, "group.id": "probe", "logger": library_logger()})
    started = time.monotonic()
    try:
        with structlog.testing.capture_logs() as logs, pytest.raises(Fatal, match=f"unreachable at {address} for 4s"):
            wait_for_brokers(consumer, address, 4.0, attempt_s=1.0)
    finally:
        consumer.close()
    assert time.monotonic() - started < 10
    (warning,) = [e for e in logs if e["event"] == "kafka brokers unreachable; waiting"]
    assert warning["bootstrap_servers"] == address and warning["log_level"] == "warning"


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["run", "lineage"], marks=pytest.mark.integration),  # its Redis preflight comes first
        ["replay", "deploy/demo/sample/timeline.json"],
    ],
)
def test_the_command_exits_1_naming_the_brokers(command: list[str], request: pytest.FixtureRequest) -> None:
    redis_url = request.getfixturevalue("redis_url") if command[0] == "run" else "redis://127.0.0.1:1/0"
    address = f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAREIS_")}
    env |= {
        "PAREIS_KAFKA__BOOTSTRAP_SERVERS": address,
        "PAREIS_KAFKA__CONNECT_TIMEOUT_S": "3",
        "PAREIS_REDIS_URL": redis_url,
        "PAREIS_RUNTIME__HTTP_PORT": "0",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pareis.cli", *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 1, done.stderr + done.stdout
    output = done.stdout + done.stderr
    assert f"kafka brokers unreachable at {address} for 3s" in output
    assert "Traceback" not in output and "%3|" not in output, "librdkafka's lines go through the logger"
    if command[0] == "run":
        events = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        assert any(e["event"] == "kafka brokers unreachable; waiting" for e in events), output
