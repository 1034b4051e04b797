"""The deadline of every blocking Kafka call a role's loop makes, enforced by Pareis itself.

librdkafka does not always honour a call's timeout: after a broker restart, a transactional producer's
``send_offsets_to_transaction`` has been seen blocked for ever (issue 34: confluent-kafka 2.16.1 and 2.16.2, both on
librdkafka 2.16.0), and a thread blocked in C cannot be interrupted from Python. So the loop makes each blocking
call inside :meth:`~pareis.telemetry.health.Heartbeat.calling` with a limit (the timeout it gives the call, plus
:data:`GRACE_S`), and a :class:`Watchdog` thread looks at the loop every :data:`CHECK_EVERY_S`. Past a limit:

* liveness and readiness fail at once (the heartbeat reports the loop blocked, :mod:`pareis.telemetry.health`);
* ``on_blocked`` is told, once: a role logs one line naming the call and exits the process
  (:func:`exit_process`), so that the orchestrator restarts it from its committed offsets within seconds instead of
  after a liveness probe's minutes. Nothing is lost: what was not committed is redone by the next owner, and a
  restarted exactly-once instance fences its predecessor's transaction.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable

from pareis.telemetry.health import Call, Heartbeat

GRACE_S = 2.0
"""How long past its own timeout a call may still return before it counts as blocked (librdkafka's timeouts are
honoured to within milliseconds when they are honoured at all; the rest is room for a loaded machine)."""
CHECK_EVERY_S = 0.5
EXIT_BLOCKED = 1
"""The exit code of a process whose Kafka client blocked: the same as a Fatal's (restart from committed offsets)."""


def limit(timeout_s: float) -> float:
    """The limit of a call given ``timeout_s``: what it may take before the watchdog acts."""
    return timeout_s + GRACE_S


def bounded(call: Callable[[], object], seconds: float, name: str) -> bool:
    """Run ``call`` on a daemon thread of its own and wait at most ``seconds`` for it; whether it returned (a call
    still blocked is left behind: the process is about to exit)."""
    thread = threading.Thread(target=call, name=name, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive()


def exit_process(code: int = EXIT_BLOCKED) -> None:
    """Exit now with ``code``, after flushing what was written to stdout and stderr. ``os._exit``: a normal exit
    would wait for the blocked thread (and run nothing useful on the way out)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: exit all the same
            stream.flush()
    os._exit(code)


class Watchdog:
    """Watches ``heartbeat`` from a daemon thread of its own and calls ``on_blocked(call, late_s)`` once, when the
    call in progress has overrun its limit."""

    def __init__(
        self,
        name: str,
        heartbeat: Heartbeat,
        on_blocked: Callable[[Call, float], None],
        *,
        check_every_s: float = CHECK_EVERY_S,
    ) -> None:
        self.heartbeat = heartbeat
        self.on_blocked = on_blocked
        self.check_every_s = check_every_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"watchdog-{name}", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()

    def _watch(self) -> None:
        while not self._stopped.wait(self.check_every_s):
            found = self.heartbeat.overrun()
            if found is not None:
                self._stopped.set()
                self.on_blocked(*found)
