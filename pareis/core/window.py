"""Incidents of a dataset, their blind window and their healing (DESIGN §2.3).

Only SUCCESS and FAILURE runs count, and of FAILUREs only those that are not warnings
(:attr:`~pareis.core.runs.AssertionRun.fails`: a warning, dbt's ``warn``, opens no incident, heals none and is no
success: these functions leave it out). A dataset is failing at time t when one of its assertions has a FAILURE
as its latest such run at or before t. An incident is a maximal failing period, from ``first_failure_ms`` (the
run that made the dataset failing) to ``healed_ms`` (the run after which none of its assertions fails; None
while it still fails). Runs with equal timestamps happen together: the dataset's status is judged after all of
them, so a SUCCESS and a FAILURE of two assertions at the same millisecond neither heal nor split an incident.

The functions here apply these rules to exactly the runs they are given; which runs to give is the caller's
choice (:func:`pareis.core.lifecycle.history_floor` names a sufficient set).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from pareis.core.runs import AssertionRun, ResultType


@dataclass(frozen=True)
class IncidentWindow:
    """One maximal failing period of a dataset and the facts §2.3 derives from it.

    ``assertions``: those with a FAILURE run inside the period, sorted. ``last_success_ms``: the minimum over
    them of their latest SUCCESS strictly before ``first_failure_ms``; None if any has none. The blind window
    is (``last_success_ms``, ``first_failure_ms``]. ``latest_failures``: per incident assertion its latest
    FAILURE run inside the period, sorted by assertion. ``runs``: every counting run of the dataset's
    assertions from ``first_failure_ms`` through ``healed_ms`` inclusive, in time order (the timeline), warnings
    left out.
    """

    first_failure_ms: int
    healed_ms: int | None
    last_success_ms: int | None
    assertions: tuple[str, ...]
    latest_failures: tuple[AssertionRun, ...]
    runs: tuple[AssertionRun, ...]

    @property
    def is_open(self) -> bool:
        return self.healed_ms is None

    @property
    def failed_rows(self) -> int | None:
        """Sum of the known counts of ``latest_failures``; None when none is known."""
        known = [run.failed_rows for run in self.latest_failures if run.failed_rows is not None]
        return sum(known) if known else None

    def contains(self, t: int) -> bool:
        """True when the dataset is failing at ``t`` within this incident."""
        return self.first_failure_ms <= t and (self.healed_ms is None or t < self.healed_ms)

    def to_json(self) -> dict[str, Any]:
        return {
            "assertions": list(self.assertions),
            "failed_rows": self.failed_rows,
            "first_failure_ms": self.first_failure_ms,
            "healed_ms": self.healed_ms,
            "last_success_ms": self.last_success_ms,
        }


def counting_runs(runs: Iterable[AssertionRun]) -> tuple[AssertionRun, ...]:
    """The SUCCESS and FAILURE runs among ``runs``, deduplicated by (assertion, timestamp), in time order.

    Raises ValueError when two different runs share an identity: the caller merged inconsistent sources.
    """
    unique: dict[tuple[str, int], AssertionRun] = {}
    for run in runs:
        seen = unique.setdefault(run.key, run)
        if seen != run:
            raise ValueError(f"two different runs of {run.assertion} at {run.timestamp_ms}: {seen} and {run}")
    kept = (run for run in unique.values() if run.counts)
    return tuple(sorted(kept, key=lambda r: (r.timestamp_ms, r.assertion)))


def judged_runs(runs: Iterable[AssertionRun]) -> tuple[AssertionRun, ...]:
    """The runs incidents are judged by: :func:`counting_runs` without the warnings."""
    return tuple(run for run in counting_runs(runs) if not run.warning)


def failing_assertions_at(runs: Iterable[AssertionRun], t: int) -> tuple[str, ...]:
    """The assertions whose latest judged run (:func:`judged_runs`) at or before ``t`` is a FAILURE, sorted."""
    latest: dict[str, AssertionRun] = {}
    for run in judged_runs(runs):
        if run.timestamp_ms > t:
            break
        latest[run.assertion] = run
    return tuple(sorted(a for a, run in latest.items() if run.result is ResultType.FAILURE))


def incidents(runs: Iterable[AssertionRun]) -> tuple[IncidentWindow, ...]:
    """Every incident the runs describe, oldest first."""
    ordered = judged_runs(runs)
    periods: list[tuple[int, int | None]] = []
    latest: dict[str, ResultType] = {}
    start: int | None = None
    for timestamp, group in groupby(ordered, key=lambda r: r.timestamp_ms):
        for run in group:
            latest[run.assertion] = run.result
        failing = any(result is ResultType.FAILURE for result in latest.values())
        if failing and start is None:
            start = timestamp
        elif not failing and start is not None:
            periods.append((start, timestamp))
            start = None
    if start is not None:
        periods.append((start, None))
    return tuple(_window(ordered, first, healed) for first, healed in periods)


def _window(ordered: tuple[AssertionRun, ...], first: int, healed: int | None) -> IncidentWindow:
    def inside(run: AssertionRun) -> bool:
        return first <= run.timestamp_ms and (healed is None or run.timestamp_ms < healed)

    latest_failure: dict[str, AssertionRun] = {}
    for run in ordered:
        if run.result is ResultType.FAILURE and inside(run):
            latest_failure[run.assertion] = run
    assertions = tuple(sorted(latest_failure))
    last_success: dict[str, int] = {}
    for run in ordered:
        if run.timestamp_ms >= first:
            break
        if run.result is ResultType.SUCCESS and run.assertion in latest_failure:
            last_success[run.assertion] = run.timestamp_ms
    last_success_ms = min(last_success.values()) if assertions and len(last_success) == len(assertions) else None
    timeline = tuple(
        run for run in ordered if first <= run.timestamp_ms and (healed is None or run.timestamp_ms <= healed)
    )
    return IncidentWindow(
        first_failure_ms=first,
        healed_ms=healed,
        last_success_ms=last_success_ms,
        assertions=assertions,
        latest_failures=tuple(latest_failure[a] for a in assertions),
        runs=timeline,
    )
