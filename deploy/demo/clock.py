"""The scenario's clock: the recording runs in minutes but tells a story of days.

Every action of the scenario (a load, a dbt command, a training, a connector run) is started with
:meth:`ScenarioClock.action` and a simulated time. The clock remembers when, on the wall clock, each action
began, which makes a piecewise map from wall-clock time to simulated time: a wall-clock instant ``t`` inside
action ``i`` (from its start to the next action's start) maps to ``sim_i + (t - real_i)`` floored to whole
minutes (:attr:`ScenarioClock.resolution_ms`), capped just below the next action's simulated time so that order
is kept. The flooring makes a re-recording land on the same times (hence the same incident URN and blind
window) however fast the machine is, as long as each action takes under a minute; events of one action share
its time.

Why rewrite at all: DataHub's connectors stamp what they emit with the wall clock — ``systemMetadata.lastObserved``
(when the pipeline ran), dbt test results' ``timestampMillis`` (run_results' execute start), MLflow's registry
timestamps (model version creation). Pareis orders the timeline and computes the blind window from exactly those
fields, so a recording made in five minutes would put every event on one afternoon. :meth:`rewrite` applies the
map to every integer in the connectors' output that falls in the scenario's wall-clock span (real epoch-ms
values of today; the data's own dates are strings, and the MLflow run times the training sets explicitly are
already simulated, so neither is in that span). Contract: the map is monotonic; values outside the span are
returned unchanged; the rewrite is pure (a new structure is returned).
"""

from __future__ import annotations

import bisect
import datetime as dt
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def sim_ms(when: dt.datetime) -> int:
    """Epoch ms of a naive-UTC or aware datetime."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Action:
    """One action of the scenario: what, its simulated start, and its wall-clock start."""

    label: str
    sim_ms: int
    real_ms: int


@dataclass
class ScenarioClock:
    """Records actions and maps wall-clock ms to simulated ms (see the module doc)."""

    actions: list[Action] = field(default_factory=list)
    closed_ms: int | None = None
    resolution_ms: int = 60_000

    @contextmanager
    def action(self, label: str, when_ms: int) -> Iterator[int]:
        """Run an action at simulated time ``when_ms`` (strictly after the previous one's); yields ``when_ms``."""
        if self.actions and when_ms <= self.actions[-1].sim_ms:
            raise ValueError(f"{label}: simulated time {iso(when_ms)} is not after {self.actions[-1].label}")
        real = now_ms()
        if self.actions and real <= self.actions[-1].real_ms:
            real = self.actions[-1].real_ms + 1
        self.actions.append(Action(label, when_ms, real))
        yield when_ms

    def close(self) -> None:
        """End the span: later wall-clock values are no longer the scenario's."""
        self.closed_ms = now_ms()

    def map(self, real_ms: int) -> int | None:
        """The simulated time of a wall-clock instant of the scenario; None outside the span."""
        if not self.actions or real_ms < self.actions[0].real_ms:
            return None
        end = self.closed_ms if self.closed_ms is not None else now_ms() + 60_000
        if real_ms > end:
            return None
        starts = [a.real_ms for a in self.actions]
        i = bisect.bisect_right(starts, real_ms) - 1
        act = self.actions[i]
        mapped = act.sim_ms + (real_ms - act.real_ms) // self.resolution_ms * self.resolution_ms
        if i + 1 < len(self.actions):
            mapped = min(mapped, self.actions[i + 1].sim_ms - 1)
        return mapped

    def rewrite(self, value: Any) -> Any:
        """``value`` (JSON-like) with every int in the scenario's wall-clock span mapped to simulated time."""
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            mapped = self.map(value)
            return value if mapped is None else mapped
        if isinstance(value, list):
            return [self.rewrite(v) for v in value]
        if isinstance(value, dict):
            return {k: self.rewrite(v) for k, v in value.items()}
        return value
