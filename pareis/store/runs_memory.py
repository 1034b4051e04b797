"""The run history in process memory (tests, ``pareis demo``, ``run all`` without Redis)."""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable, Sequence

from pareis.core.runs import AssertionRun, ResultType
from pareis.store.runs import check_range, ordered


class MemoryRunHistory:
    """:class:`~pareis.store.runs.RunHistory` in dicts of time-sorted lists; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, list[AssertionRun]] = {}
        self._assertions: dict[str, set[str]] = {}
        self._operations: dict[str, list[int]] = {}
        self._failed: set[str] = set()

    def record(self, run: AssertionRun) -> bool:
        with self._lock:
            self._assertions.setdefault(run.dataset, set()).add(run.assertion)
            if run.result is ResultType.FAILURE:
                self._failed.add(run.dataset)
            runs = self._runs.setdefault(run.assertion, [])
            at = bisect_left(runs, run.timestamp_ms, key=_time)
            if at < len(runs) and runs[at].timestamp_ms == run.timestamp_ms:
                return False
            runs.insert(at, run)
            return True

    def record_many(self, runs: Sequence[AssertionRun]) -> list[AssertionRun | None]:
        return [None if self.record(run) else self.get(*run.key) for run in runs]

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

    def failed_datasets(self) -> list[str]:
        with self._lock:
            return sorted(self._failed)

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

    def timelines(self, queries: Sequence[tuple[Collection[str], int | None]]) -> list[list[AssertionRun]]:
        return [self.timeline(assertions, floor_ms) for assertions, floor_ms in queries]

    def latest_of(
        self, assertions: Iterable[str], at_ms: int
    ) -> dict[str, tuple[AssertionRun | None, AssertionRun | None]]:
        return {a: (self.latest(a, at_ms), self.latest(a, at_ms, counting=True)) for a in sorted(set(assertions))}

    def assertions_by_dataset(self, datasets: Iterable[str]) -> dict[str, list[str]]:
        return {d: self.assertions_of(d) for d in sorted(set(datasets))}

    def last_operations(self, datasets: Iterable[str], at_ms: int) -> dict[str, int]:
        found = {d: self.last_operation(d, at_ms) for d in sorted(set(datasets))}
        return {d: t for d, t in found.items() if t is not None}

    def record_operation(self, dataset: str, time_ms: int) -> bool:
        with self._lock:
            times = self._operations.setdefault(dataset, [])
            at = bisect_left(times, time_ms)
            if at < len(times) and times[at] == time_ms:
                return False
            times.insert(at, time_ms)
            return True

    def record_operations(self, changes: Sequence[tuple[str, int]]) -> list[bool]:
        return [self.record_operation(dataset, time_ms) for dataset, time_ms in changes]

    def last_operation(self, dataset: str, at_ms: int) -> int | None:
        with self._lock:
            times = self._operations.get(dataset, [])
            at = bisect_right(times, at_ms)
            return times[at - 1] if at else None


def _time(run: AssertionRun) -> int:
    return run.timestamp_ms
