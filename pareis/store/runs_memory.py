"""The run history in process memory (tests, ``pareis demo``, ``run all`` without Redis)."""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterable

from pareis.core.runs import AssertionRun
from pareis.store.runs import check_range, ordered


class MemoryRunHistory:
    """:class:`~pareis.store.runs.RunHistory` in dicts of time-sorted lists; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, list[AssertionRun]] = {}
        self._assertions: dict[str, set[str]] = {}

    def record(self, run: AssertionRun) -> bool:
        with self._lock:
            self._assertions.setdefault(run.dataset, set()).add(run.assertion)
            runs = self._runs.setdefault(run.assertion, [])
            at = bisect_left(runs, run.timestamp_ms, key=_time)
            if at < len(runs) and runs[at].timestamp_ms == run.timestamp_ms:
                return False
            runs.insert(at, run)
            return True

    def get(self, assertion: str, timestamp_ms: int) -> AssertionRun | None:
        found = self.runs(assertion, timestamp_ms, timestamp_ms)
        return found[0] if found else None

    def latest(self, assertion: str, at_ms: int, *, counting: bool = False) -> AssertionRun | None:
        with self._lock:
            runs = self._runs.get(assertion, [])
            for run in reversed(runs[: bisect_right(runs, at_ms, key=_time)]):
                if run.counts or not counting:
                    return run
        return None

    def runs(self, assertion: str, start_ms: int | None = None, end_ms: int | None = None) -> list[AssertionRun]:
        check_range(start_ms, end_ms)
        with self._lock:
            runs = self._runs.get(assertion, [])
            low = 0 if start_ms is None else bisect_left(runs, start_ms, key=_time)
            high = len(runs) if end_ms is None else bisect_right(runs, end_ms, key=_time)
            return runs[low:high]

    def datasets(self) -> list[str]:
        with self._lock:
            return sorted(self._assertions)

    def assertions_of(self, dataset: str) -> list[str]:
        with self._lock:
            return sorted(self._assertions.get(dataset, ()))

    def timeline(self, assertions: Iterable[str], floor_ms: int | None) -> list[AssertionRun]:
        found: list[AssertionRun] = []
        for assertion in sorted(set(assertions)):
            found.extend(self.runs(assertion, floor_ms))
            if floor_ms is not None:
                seed = self.latest(assertion, floor_ms - 1, counting=True)
                if seed is not None:
                    found.append(seed)
        return ordered(found)


def _time(run: AssertionRun) -> int:
    return run.timestamp_ms
