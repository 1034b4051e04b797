"""Reliability scores, 0–100, per dataset and per model (DESIGN §2.5), from published components.

Every score is a weighted mean of components, each shown with its value (0–100), its weight and what it was
computed from, so an auditor can recompute it: ``score = round(Σ value × weight / Σ weight, 1)`` over the known
components and their (already rounded) values. A component without data is *unknown* (value None, ``null`` in the
JSON): left out of the score, its weight spread over the known ones in proportion to theirs, never counted as 0
(DESIGN §2.5). When every component is known the weights sum to 1 and the score is ``Σ value × weight``.
Deterministic; time (``at_ms``) is an input.

**Dataset** (its sibling class: a dbt node and its warehouse table are the same data, DESIGN §2.1, so they score
alike). Weights sum to 1:

* ``coverage`` (0.30) — the share of the dataset's columns that feed models (their lineage reaches a feature or a
  model) named by an assertion; unknown when no column of it is known to feed a model (a share of nothing: a
  training-run input read at table precision, a dataset that feeds none) or its schema is unknown.
* ``pass_rate`` (0.30) — the share of SUCCESS among the SUCCESS/FAILURE runs of its assertions in the last 7 days
  (``(at − 7 d, at]``; a warning, a FAILURE of severity LOW, is no SUCCESS); unknown when it has none (freshness
  is what says the runs are stale or missing).
* ``incidents`` (0.25) — the last 30 days: ``100 − 10 × incidents − 100 × failing time / 30 d``, floored at 0.
  An incident counts when its failing period overlaps ``(at − 30 d, at]``; its failing time is that overlap.
  Unknown when no assertion of it ever ran (SUCCESS/FAILURE) at or before ``at``: an untested dataset has no
  incident history, not a clean one (else its weight would lift the score of data nobody tests).
* ``freshness`` (0.15) — the age of the latest SUCCESS/FAILURE run at or before ``at``: 100 up to 24 h, then
  linearly down to 0 at 7 days; 0 without a run.

**Model** (a version; a group is scored through its newest version by the caller). Its upstream datasets are
those with a column that feeds it (sibling classes counted once), and, at table precision, those its training
runs read when it lists no features. Components (weights 0.5 each):

* ``upstream_mean`` — the mean of the upstream datasets' scores, each weighted by the number of the model's
  features it feeds (a table-precision input counts as feeding every feature, at least 1);
* ``weakest_upstream`` — the lowest upstream score: one bad input spoils a model.

A model with no upstream dataset has both unknown, so its score is unknown (None): nothing is known about its data,
which is no score of 0 (DESIGN §2.5).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pareis.core.runs import AssertionRun, ResultType
from pareis.core.window import counting_runs, incidents

DAY_MS = 86_400_000
PASS_WINDOW_MS = 7 * DAY_MS
INCIDENT_WINDOW_MS = 30 * DAY_MS
FRESH_MS = DAY_MS
STALE_MS = 7 * DAY_MS
INCIDENT_PENALTY = 10.0

DATASET_WEIGHTS: Mapping[str, float] = {"coverage": 0.30, "pass_rate": 0.30, "incidents": 0.25, "freshness": 0.15}
MODEL_WEIGHTS: Mapping[str, float] = {"upstream_mean": 0.5, "weakest_upstream": 0.5}


@dataclass(frozen=True)
class Component:
    """One published part of a score: its value (0–100, None when unknown), its weight, and what it was computed
    from."""

    name: str
    value: float | None
    weight: float
    detail: str

    @property
    def known(self) -> bool:
        return self.value is not None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "weight": self.weight, "detail": self.detail}


@dataclass(frozen=True)
class Score:
    """A reliability score of one entity (a dataset or a model version) with its components, in fixed order."""

    urn: str
    score: float | None
    """None when no component is known (:func:`_score`)."""
    components: tuple[Component, ...]

    @property
    def value(self) -> float | None:
        return self.score

    def component(self, name: str) -> Component:
        """The component called ``name`` (KeyError when there is none)."""
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {"urn": self.urn, "score": self.score, "components": [c.to_json() for c in self.components]}


def _score(urn: str, components: Iterable[Component]) -> Score:
    """The weighted mean of the known components (see the module docstring); unknown (None) when none is."""
    parts = tuple(components)
    known = [(c.value, c.weight) for c in parts if c.value is not None]
    weight = sum(w for _, w in known)
    return Score(urn, round(sum(v * w for v, w in known) / weight, 1) if weight else None, parts)


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def coverage(feeding: Iterable[str], tested: Iterable[str], *, schema_known: bool = True) -> Component:
    """The ``coverage`` component over the names (or URNs) of the columns feeding models and those tested;
    unknown when the dataset's schema is not (``schema_known``)."""
    feed = set(feeding)
    hit = feed & set(tested)
    weight = DATASET_WEIGHTS["coverage"]
    if not schema_known:
        return Component("coverage", None, weight, "schema unknown")
    if not feed:
        return Component("coverage", None, weight, "no column feeds a model")
    return Component(
        "coverage", _pct(len(hit), len(feed)), weight, f"{len(hit)}/{len(feed)} model-feeding columns tested"
    )


def pass_rate(runs: Iterable[AssertionRun], at_ms: int) -> Component:
    """The ``pass_rate`` component: SUCCESS share of the counting runs in ``(at − 7 d, at]``."""
    recent = [r for r in counting_runs(runs) if at_ms - PASS_WINDOW_MS < r.timestamp_ms <= at_ms]
    passed = sum(1 for r in recent if r.result is ResultType.SUCCESS)
    weight = DATASET_WEIGHTS["pass_rate"]
    if not recent:
        return Component("pass_rate", None, weight, "no assertion run in the last 7 days")
    return Component("pass_rate", _pct(passed, len(recent)), weight, f"{passed}/{len(recent)} runs passed in 7 days")


def incident_history(runs: Iterable[AssertionRun], at_ms: int) -> Component:
    """The ``incidents`` component over the incidents the runs (at or before ``at``) describe."""
    start = at_ms - INCIDENT_WINDOW_MS
    known = [r for r in runs if r.timestamp_ms <= at_ms]
    if not any(r.counts for r in known):
        return Component("incidents", None, DATASET_WEIGHTS["incidents"], "no assertion run")
    count = 0
    failing_ms = 0
    for w in incidents(known):
        end = at_ms if w.healed_ms is None else min(w.healed_ms, at_ms)
        if end <= start:
            continue
        count += 1
        failing_ms += end - max(w.first_failure_ms, start)
    value = max(0.0, 100.0 - INCIDENT_PENALTY * count - 100.0 * failing_ms / INCIDENT_WINDOW_MS)
    hours = failing_ms / 3_600_000
    detail = f"{count} incident(s) in 30 days, failing {hours:.1f} h"
    return Component("incidents", round(value, 1), DATASET_WEIGHTS["incidents"], detail)


def freshness(runs: Iterable[AssertionRun], at_ms: int) -> Component:
    """The ``freshness`` component: age of the latest counting run at or before ``at``."""
    latest = max((r.timestamp_ms for r in counting_runs(runs) if r.timestamp_ms <= at_ms), default=None)
    weight = DATASET_WEIGHTS["freshness"]
    if latest is None:
        return Component("freshness", 0.0, weight, "no assertion run")
    age = at_ms - latest
    if age <= FRESH_MS:
        value = 100.0
    elif age >= STALE_MS:
        value = 0.0
    else:
        value = 100.0 * (STALE_MS - age) / (STALE_MS - FRESH_MS)
    return Component("freshness", round(value, 1), weight, f"latest run {age / 3_600_000:.1f} h before")


def dataset_score(
    urn: str,
    *,
    feeding: Iterable[str],
    tested: Iterable[str],
    runs: Iterable[AssertionRun],
    at_ms: int,
    schema_known: bool = True,
) -> Score:
    """The score of a dataset: ``feeding`` and ``tested`` name its columns that feed models and those an
    assertion names (in one spelling: field paths across a sibling class); ``runs`` are the runs of every
    assertion of it (any time; those after ``at_ms`` are ignored); ``schema_known``: whether a schema of it (of
    a member of its sibling class) is known."""
    history = tuple(runs)
    return _score(
        urn,
        (
            coverage(feeding, tested, schema_known=schema_known),
            pass_rate(history, at_ms),
            incident_history(history, at_ms),
            freshness(history, at_ms),
        ),
    )


def model_score(urn: str, upstream: Mapping[str, tuple[float, int]]) -> Score:
    """The score of a model from ``upstream``: dataset URN → (its score, the number of the model's features it
    feeds, at least 1)."""
    w_mean, w_min = MODEL_WEIGHTS["upstream_mean"], MODEL_WEIGHTS["weakest_upstream"]
    if not upstream:
        return _score(
            urn,
            (
                Component("upstream_mean", None, w_mean, "no upstream dataset known"),
                Component("weakest_upstream", None, w_min, "no upstream dataset known"),
            ),
        )
    total = sum(max(1, n) for _, n in upstream.values())
    mean = sum(s * max(1, n) for s, n in upstream.values()) / total
    weakest = min(sorted(upstream), key=lambda d: upstream[d][0])
    return _score(
        urn,
        (
            Component(
                "upstream_mean", round(mean, 1), w_mean, f"{len(upstream)} upstream dataset(s), feature-weighted"
            ),
            Component("weakest_upstream", round(upstream[weakest][0], 1), w_min, weakest),
        ),
    )
