"""Liveness and readiness of a process, as the HTTP endpoints report them.

* **alive** (``/healthz``): every registered loop has beaten within its allowed silence. A loop stuck longer than
  that (a hung handler, a wedged client) fails liveness, and Kubernetes restarts the container.
* **ready** (``/readyz``): every registered gate is open (a role has joined its group; it may own no partition when
  there are more replicas than partitions, which must not block a rollout) and every check passes (each dependency
  reachable; a check is ``() -> None`` and raises when it is not).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

Check = Callable[[], None]


@dataclass
class Heartbeat:
    """One loop's pulse; call :meth:`beat` once per iteration."""

    max_silence_s: float
    last: float = field(default_factory=time.monotonic)

    def beat(self) -> None:
        self.last = time.monotonic()

    def silent_for(self) -> float:
        return time.monotonic() - self.last


@dataclass(frozen=True)
class Report:
    ok: bool
    details: dict[str, str]


class Health:
    """The registry behind ``/healthz`` and ``/readyz``; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loops: dict[str, Heartbeat] = {}
        self._gates: dict[str, bool] = {}
        self._checks: dict[str, Check] = {}

    def loop(self, name: str, max_silence_s: float) -> Heartbeat:
        heartbeat = Heartbeat(max_silence_s)
        with self._lock:
            self._loops[name] = heartbeat
        return heartbeat

    def forget_loop(self, name: str) -> None:
        with self._lock:
            self._loops.pop(name, None)

    def gate(self, name: str, is_open: bool) -> None:
        with self._lock:
            self._gates[name] = is_open

    def check(self, name: str, check: Check) -> None:
        with self._lock:
            self._checks[name] = check

    def liveness(self) -> Report:
        with self._lock:
            loops = dict(self._loops)
        details = {}
        ok = True
        for name, heartbeat in sorted(loops.items()):
            silent = heartbeat.silent_for()
            alive = silent <= heartbeat.max_silence_s
            ok = ok and alive
            details[name] = "ok" if alive else f"silent for {silent:.0f}s"
        return Report(ok, details)

    def readiness(self) -> Report:
        with self._lock:
            gates, checks = dict(self._gates), dict(self._checks)
        details = {}
        ok = bool(gates or checks)
        for name, is_open in sorted(gates.items()):
            ok = ok and is_open
            details[name] = "ok" if is_open else "not ready"
        for name, check in sorted(checks.items()):
            try:
                check()
                details[name] = "ok"
            except Exception as exc:  # a probe reports any failure; it never raises
                ok = False
                details[name] = f"{type(exc).__name__}: {exc}"
        return Report(ok, details)
