"""Liveness and readiness of a process, as the HTTP endpoints report them.

* **alive** (``/healthz``): every registered loop has beaten within its allowed silence. A loop stuck longer than
  that (a hung handler, a wedged client) fails liveness, and Kubernetes restarts the container.
* **ready** (``/readyz``): every registered gate is open (a role has joined its group; it may own no partition when
  there are more replicas than partitions, which must not block a rollout) and every check passes (each dependency
  reachable; a check is ``() -> None`` and raises when it is not).

``/readyz`` is cheap and no amplifier: the dependency checks run at most once per ``check_every_s`` (their
results are reused meanwhile) and never concurrently, however often and by however many clients it is asked.
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

    def __init__(self, check_every_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._loops: dict[str, Heartbeat] = {}
        self._gates: dict[str, bool] = {}
        self._checks: dict[str, Check] = {}
        self._check_every_s = check_every_s
        self._clock = clock
        self._checking = threading.Lock()
        self._checked: tuple[float, dict[str, str]] | None = None

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
        results = self._check_results(checks)
        for name in sorted(checks):
            result = results.get(name, "not checked yet")
            ok = ok and result == "ok"
            details[name] = result
        return Report(ok, details)

    def _check_results(self, checks: dict[str, Check]) -> dict[str, str]:
        """The checks' results, run afresh only when the last run is older than ``check_every_s`` and no other
        request is running them (that one's results, or the last ones, are used instead)."""

        def usable(found: tuple[float, dict[str, str]] | None) -> bool:
            return found is not None and set(found[1]) == set(checks)  # a check added or removed: run afresh

        def fresh(found: tuple[float, dict[str, str]] | None) -> bool:
            return found is not None and self._clock() - found[0] < self._check_every_s

        checked = self._checked
        if checked is not None and usable(checked):
            if fresh(checked) or not self._checking.acquire(blocking=False):
                return checked[1]
        else:
            self._checking.acquire()
            checked = self._checked  # another request may have run them while this one waited
            if checked is not None and usable(checked) and fresh(checked):
                self._checking.release()
                return checked[1]
        try:
            results = {}
            for name, check in sorted(checks.items()):
                try:
                    check()
                    results[name] = "ok"
                except Exception as exc:  # noqa: BLE001 (the probe's boundary: any failure is a not-ready answer)
                    results[name] = f"{type(exc).__name__}: {exc}"
            self._checked = (self._clock(), results)
            return results
        finally:
            self._checking.release()
