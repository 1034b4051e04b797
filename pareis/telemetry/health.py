"""Liveness and readiness of a process, as the HTTP endpoints report them.

* **alive** (``/healthz``): every registered loop has beaten within its allowed silence, and none is blocked in a
  call past that call's deadline (:meth:`Heartbeat.calling`). A loop silent longer than its allowed silence (a hung
  handler) fails liveness, and Kubernetes restarts the container; a loop blocked in a client call (a wedged Kafka
  client) fails it as soon as the call's deadline has passed, whatever the allowed silence.
* **ready** (``/readyz``): every registered gate is open (a role has joined its group; it may own no partition when
  there are more replicas than partitions, which must not block a rollout), every check passes (each dependency
  reachable; a check is ``() -> None`` and raises when it is not) and no loop is blocked past a call's deadline.

``/readyz`` is cheap and no amplifier: the dependency checks run at most once per ``check_every_s`` (their
results are reused meanwhile) and never concurrently, however often and by however many clients it is asked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

Check = Callable[[], None]


@dataclass
class Call:
    """A blocking call a loop is in: what, and the monotonic time by which it must have returned."""

    what: str
    limit_s: float
    deadline: float
    outer: Call | None = None
    """The call this one was made in (a rebalance callback's commit inside a poll), if any."""

    def within(self) -> list[str]:
        """What this call and every call it was made in are, innermost first."""
        found: list[str] = []
        call: Call | None = self
        while call is not None:
            found.append(call.what)
            call = call.outer
        return found


@dataclass
class Heartbeat:
    """One loop's pulse; call :meth:`beat` once per iteration, and wrap each blocking client call in
    :meth:`calling`."""

    max_silence_s: float
    clock: Callable[[], float] = time.monotonic
    last: float = 0.0
    call: Call | None = None
    """The innermost blocking call in progress, if any."""

    def __post_init__(self) -> None:
        self.last = self.last or self.clock()

    def beat(self) -> None:
        self.last = self.clock()

    def silent_for(self) -> float:
        return self.clock() - self.last

    def calling(self, what: str, limit_s: float) -> Calling:
        """A context manager around one blocking call that must return within ``limit_s``: past that the loop is
        blocked (:meth:`overrun`). Calls nest (a rebalance callback committing inside a poll): the outer call's
        deadline moves by the time the inner one took."""
        return Calling(self, what, limit_s)

    def overrun(self) -> tuple[Call, float] | None:
        """The call in progress and by how many seconds it has overrun its deadline, when it has."""
        call = self.call
        if call is None:
            return None
        late = self.clock() - call.deadline
        return (call, late) if late > 0 else None

    def blocked(self) -> str | None:
        """Why the loop counts as blocked (a call past its deadline), or None."""
        found = self.overrun()
        if found is None:
            return None
        call, late = found
        return f"blocked in {call.what} for {call.limit_s + late:.0f}s (deadline {call.limit_s:.0f}s)"


class Calling:
    """:meth:`Heartbeat.calling`'s context manager (a class, not a generator: it wraps every poll)."""

    __slots__ = ("_heartbeat", "_limit_s", "_outer", "_started", "_what")

    def __init__(self, heartbeat: Heartbeat, what: str, limit_s: float) -> None:
        self._heartbeat, self._what, self._limit_s = heartbeat, what, limit_s
        self._outer: Call | None = None
        self._started = 0.0

    def __enter__(self) -> None:
        heartbeat = self._heartbeat
        self._outer = heartbeat.call
        self._started = heartbeat.clock()
        heartbeat.call = Call(self._what, self._limit_s, self._started + self._limit_s, self._outer)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        heartbeat = self._heartbeat
        outer = self._outer
        if outer is not None:
            outer = Call(outer.what, outer.limit_s, outer.deadline + heartbeat.clock() - self._started, outer.outer)
        heartbeat.call = outer
        heartbeat.beat()


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
        heartbeat = Heartbeat(max_silence_s, self._clock)
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
            blocked = heartbeat.blocked()
            alive = blocked is None and silent <= heartbeat.max_silence_s
            ok = ok and alive
            details[name] = "ok" if alive else blocked or f"silent for {silent:.0f}s"
        return Report(ok, details)

    def readiness(self) -> Report:
        with self._lock:
            gates, checks, loops = dict(self._gates), dict(self._checks), dict(self._loops)
        details = {}
        ok = bool(gates or checks)
        for name, heartbeat in sorted(loops.items()):
            blocked = heartbeat.blocked()
            if blocked is not None:  # listed only when blocked: a loop beating is no readiness condition
                ok = False
                details[name] = blocked
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
