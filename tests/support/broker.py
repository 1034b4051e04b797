"""A Kafka broker of a test's own, to stop and start under load without disturbing the shared one.

:class:`ThrowawayBroker` runs ``deploy/local/kafka.sh`` — the very script that starts the local stack's broker —
on two free ports with its state (data, log, pid) in a directory of the test's, and the local stack's jar cache
(``.stack/kafka/libs``: fetched from Maven Central by the script on first use, exactly as ``stack.sh up kafka``
does, and reused afterwards). ``down`` is the script's: SIGTERM and a controlled shutdown; ``up`` again starts
the same node on the same data.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import TracebackType

from tests.support.roles import free_port
from tests.support.stack import REPO_DIR, STACK_UP_TIMEOUT_S

KAFKA_SCRIPT = REPO_DIR / "deploy" / "local" / "kafka.sh"
SHARED_LIBS = REPO_DIR / ".stack" / "kafka" / "libs"


class ThrowawayBroker:
    """One KRaft node on ``127.0.0.1:<free port>``, its state under ``state``."""

    def __init__(self, state: Path, heap: str = "-Xms128m -Xmx384m") -> None:
        self.state = state
        self.port = free_port()
        self.controller_port = free_port()
        self.env = {
            **os.environ,
            "PAREIS_STACK_DIR": str(state),
            "PAREIS_STACK_KAFKA_PORT": str(self.port),
            "PAREIS_STACK_KAFKA_CONTROLLER_PORT": str(self.controller_port),
            "PAREIS_STACK_KAFKA_LIBS": str(SHARED_LIBS),
            "PAREIS_STACK_KAFKA_HEAP": heap,
        }

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.state / "logs" / "kafka.log"

    def up(self) -> None:
        """Start the node (formatting its log dir the first time) and return once it answers metadata requests."""
        self._script("up")

    def down(self) -> None:
        """Stop the node (SIGTERM: a controlled shutdown) and return once it has exited; its data stays."""
        self._script("down")

    def _script(self, action: str) -> None:
        done = subprocess.run(
            [str(KAFKA_SCRIPT), action],
            cwd=REPO_DIR,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=STACK_UP_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"kafka.sh {action} on port {self.port} failed:\n{done.stdout}{done.stderr}")

    def __enter__(self) -> ThrowawayBroker:
        self.up()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.down()
