"""The run history port: every ``assertionRunEvent``, per assertion, in time order (DESIGN §1, §2.3).

A run is identified by (assertion, timestamp_ms): recording one whose identity is already stored keeps the
stored run and reports a duplicate, so redelivered change-log messages are harmless. The queries are the ones
the incident state machine and the gate need; each is one round trip per call (per assertion for
:meth:`RunHistory.timeline`, pipelined; several timelines at once with :meth:`RunHistory.timelines`). The writes of
a whole batch are one round trip too (:meth:`RunHistory.record_many`, :meth:`RunHistory.record_operations`): the
assertions role records a burst of runs at the cost of its batches, not of its messages.

Implementations: :class:`pareis.store.runs_memory.MemoryRunHistory` and
:class:`pareis.store.runs_redis.RedisRunHistory`; both pass ``tests/unit/test_run_store.py``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Protocol, runtime_checkable

from pareis.core.runs import AssertionRun


@runtime_checkable
class RunHistory(Protocol):
    """Assertion runs by assertion. Errors are :class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`."""

    def record(self, run: AssertionRun) -> bool:
        """Store ``run``; True if it is new, False if a run with its identity was already stored (kept as is)."""
        ...

    def record_many(self, runs: Sequence[AssertionRun]) -> list[AssertionRun | None]:
        """:meth:`record` of each run, in order, in one round trip: for each, None if it was new, else the run
        that was already stored under its identity (kept as is; an earlier run of ``runs`` counts as stored)."""
        ...

    def get(self, assertion: str, timestamp_ms: int) -> AssertionRun | None:
        """The run of ``assertion`` at exactly ``timestamp_ms``."""
        ...

    def latest(self, assertion: str, at_ms: int, *, counting: bool = False) -> AssertionRun | None:
        """The latest run of ``assertion`` at or before ``at_ms``; with ``counting``, SUCCESS or FAILURE only."""
        ...

    def runs(self, assertion: str, start_ms: int | None = None, end_ms: int | None = None) -> list[AssertionRun]:
        """The runs of ``assertion`` with ``start_ms <= timestamp <= end_ms`` (None: unbounded), oldest first."""
        ...

    def datasets(self) -> list[str]:
        """Every dataset with at least one recorded run, sorted (the read side's incident list)."""
        ...

    def failed_datasets(self) -> list[str]:
        """Every dataset that a FAILURE run was ever recorded for (or offered for: a duplicate that was not kept
        counts too), sorted. Only these can have incidents: one read instead of :meth:`datasets`' whole scan."""
        ...

    def assertions_of(self, dataset: str) -> list[str]:
        """The assertions that have runs whose assertee is ``dataset``, sorted."""
        ...

    def timeline(self, assertions: Iterable[str], floor_ms: int | None) -> list[AssertionRun]:
        """What :func:`pareis.core.lifecycle.step` needs: every run of ``assertions`` at or after ``floor_ms``
        (all of them when None), plus each one's latest SUCCESS-or-FAILURE run before it; sorted by
        (timestamp, assertion)."""
        ...

    def timelines(self, queries: Sequence[tuple[Collection[str], int | None]]) -> list[list[AssertionRun]]:
        """:meth:`timeline` of each (assertions, floor), in one round trip."""
        ...

    def latest_of(
        self, assertions: Iterable[str], at_ms: int
    ) -> dict[str, tuple[AssertionRun | None, AssertionRun | None]]:
        """For each assertion: (its latest run of any kind, its latest SUCCESS-or-FAILURE run) at or before
        ``at_ms`` — :meth:`latest` both ways for many assertions in one round trip."""
        ...

    def assertions_by_dataset(self, datasets: Iterable[str]) -> dict[str, list[str]]:
        """:meth:`assertions_of` of each dataset, in one round trip."""
        ...

    def last_operations(self, datasets: Iterable[str], at_ms: int) -> dict[str, int]:
        """:meth:`last_operation` of each dataset that has one, in one round trip."""
        ...

    def record_operation(self, dataset: str, time_ms: int) -> bool:
        """Note that ``dataset``'s data changed at ``time_ms`` (an ``operation`` aspect: its
        ``lastUpdatedTimestamp``, else its timestamp); True if that time was not recorded for it yet."""
        ...

    def record_operations(self, changes: Sequence[tuple[str, int]]) -> list[bool]:
        """:meth:`record_operation` of each (dataset, time), in order, in one round trip."""
        ...

    def last_operation(self, dataset: str, at_ms: int) -> int | None:
        """The latest recorded change time of ``dataset`` at or before ``at_ms``; None when none is."""
        ...


def check_range(start_ms: int | None, end_ms: int | None) -> None:
    """ValueError for an inverted range: always a caller's bug."""
    if start_ms is not None and end_ms is not None and start_ms > end_ms:
        raise ValueError(f"empty time range: start {start_ms} > end {end_ms}")


def ordered(runs: Iterable[AssertionRun]) -> list[AssertionRun]:
    """Runs in the order every query returns them: by (timestamp, assertion)."""
    return sorted(runs, key=lambda r: (r.timestamp_ms, r.assertion))
