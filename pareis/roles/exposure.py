"""Keeping the exposure index current (DESIGN §2.5): the snapshot protect and the gate read, recomputed from the
lineage index when it changed, and the affected columns of every past incident the run history describes.

The lineage role counts its changes (:meth:`~pareis.store.exposure.ExposureIndex.touch`, after a batch applied an
exposure-bearing aspect: :data:`~pareis.core.exposure_index.EXPOSURE_ASPECTS`). :meth:`ExposureMaintainer.step`,
called on a timer by :class:`MaintainerThread` — in a process of its own beside the lineage role
(:class:`pareis.compose.exposure.MaintainerProcess`: a recomputation is seconds of CPU that must not hold the role's
interpreter lock), or on a thread — then:

* **recomputes** when the generation moved and either no change came for ``quiet_ms`` (a burst of ingestion is one
  recomputation) or the first unbuilt change is ``max_delay_ms`` old (a steady stream still gets fresh snapshots):
  one :func:`~pareis.core.exposure_index.snapshot` over a fresh :class:`~pareis.core.graph.Memo`, plus every
  incident's affected columns and every defined assertion's blast radius (:mod:`pareis.core.radii`), published as
  one version tagged with the generation read *before* computing, so a change that lands during the computation
  triggers the next one;
* otherwise, every ``incidents_every_ms``, adds the affected columns of incidents that appeared since (a new
  failure) to the current version (an incident of one assertion takes the radius the version keeps of it).

A recomputation costs one pass over the columns upstream of features and models (not the whole graph), and one walk
of each defined assertion's blast radius over the same view; a failed
step (Redis down) raises, and the thread logs it and tries again at the next tick. Readers meanwhile read the last
complete version and say its age.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from pareis.core.exposure_index import (
    IncidentColumns,
    IncidentHead,
    enumerate_inputs,
    incident_columns,
    incident_heads,
    snapshot,
)
from pareis.core.graph import Memo
from pareis.core.keys import canonical, sibling_classes
from pareis.core.radii import ASSERTION_ASPECT, assertion_radii
from pareis.core.runs import AssertionRun
from pareis.errors import Fatal, Retriable
from pareis.store.exposure import ExposureIndex, ExposureVersion
from pareis.store.exposure_reader import kept_radii
from pareis.store.lineage import LineageStore
from pareis.store.runs import RunHistory

log = logging.getLogger(__name__)


def incident_history(view: Memo, runs: RunHistory) -> list[IncidentHead]:
    """Every incident the run history describes (only a class with a FAILURE run can have one)."""
    classes = sibling_classes(view, runs.failed_datasets())
    members = {canonical(group): group for group in classes.values()}
    of = runs.assertions_by_dataset(m for group in members.values() for m in group)
    names = {key: {a for m in group for a in of[m]} for key, group in members.items()}
    every = set().union(*names.values()) if names else set()
    by_assertion: dict[str, list[AssertionRun]] = {}
    for r in runs.timeline(every, None) if every else ():
        by_assertion.setdefault(r.assertion, []).append(r)
    timelines = {
        key: sorted((r for a in found for r in by_assertion.get(a, ())), key=lambda r: (r.timestamp_ms, r.assertion))
        for key, found in names.items()
    }
    return incident_heads(timelines)


def rebuild(
    lineage: LineageStore, index: ExposureIndex, runs: RunHistory | None, now_ms: int
) -> ExposureVersion | None:
    """Recompute and publish the whole snapshot (see the module docstring); the version made current, None when a
    newer one already was."""
    generation = index.generation()
    view = Memo(lineage)
    entries = snapshot(view, **enumerate_inputs(lineage.entities))
    radii = assertion_radii(view, lineage.entities(ASSERTION_ASPECT))
    known = {r.assertion: r.radius for r in radii}
    found = [incident_columns(view, h, known) for h in incident_history(view, runs)] if runs is not None else []
    return index.publish(generation, now_ms, entries, found, radii)


@dataclass
class ExposureMaintainer:
    """Decides when to recompute (see the module docstring); ``step`` is driven by a clock, so tests need no
    threads."""

    lineage: LineageStore
    index: ExposureIndex
    runs: RunHistory | None = None
    quiet_ms: int = 2_000
    max_delay_ms: int = 60_000
    incidents_every_ms: int = 10_000
    _seen: int = -1
    _changed_ms: int = 0
    _dirty_since_ms: int | None = None
    _incidents_ms: int = 0
    published: list[ExposureVersion] = field(default_factory=list)

    def step(self, now_ms: int) -> ExposureVersion | None:
        """One tick: the version published, if any."""
        generation = self.index.generation()
        current = self.index.current()
        if current is not None and current.generation >= generation:
            self._dirty_since_ms = None
            if self.runs is not None and now_ms - self._incidents_ms >= self.incidents_every_ms:
                self._incidents_ms = now_ms
                self._add_incidents(current)
            return None
        if generation != self._seen:
            self._seen, self._changed_ms = generation, now_ms
            if self._dirty_since_ms is None:
                self._dirty_since_ms = now_ms
        quiet = now_ms - self._changed_ms >= self.quiet_ms
        overdue = self._dirty_since_ms is not None and now_ms - self._dirty_since_ms >= self.max_delay_ms
        if current is not None and not quiet and not overdue:
            return None
        made = rebuild(self.lineage, self.index, self.runs, now_ms)
        self._dirty_since_ms = None
        self._incidents_ms = now_ms
        if made is not None:
            self.published.append(made)
        return made

    def _add_incidents(self, current: ExposureVersion) -> None:
        assert self.runs is not None
        view = Memo(self.lineage)
        known = self.index.incident_urns()
        heads = [h for h in incident_history(view, self.runs) if h.urn not in known]
        if heads:
            # A burst's new incidents take the radii the version keeps (when no change came since) instead of walking.
            radii = kept_radii(self.index, view, {h.assertions[0] for h in heads if len(h.assertions) == 1})
            found: list[IncidentColumns] = [incident_columns(view, h, radii) for h in heads]
            self.index.add_incidents(current.version, found)


class Stop(Protocol):
    """What :meth:`MaintainerThread.run_until` waits on: a :class:`threading.Event` or a process-shared one."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


@dataclass
class MaintainerThread:
    """Runs :meth:`ExposureMaintainer.step` every ``tick_s`` on a daemon thread until :meth:`stop`.

    A Retriable step (Redis down) is logged and tried again at the next tick; readers keep the last version. Anything
    else stops the thread and is kept: :meth:`check` (called by the lineage handler before each batch) raises it
    as Fatal, so the role stops and restarts from its committed offsets instead of serving an
    exposure index that silently stopped following the lineage."""

    maintainer: ExposureMaintainer
    tick_s: float = 1.0
    clock: Callable[[], float] = time.time
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    failed: BaseException | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="exposure-maintainer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        self.run_until(self._stop)

    def run_until(self, stop: Stop) -> None:
        """The loop itself, in the calling thread, until ``stop`` is set or a step fails on anything but
        Retriable (kept in :attr:`failed`). :class:`pareis.compose.exposure.MaintainerProcess` runs it in a child
        process."""
        while not stop.is_set():
            try:
                self.maintainer.step(int(self.clock() * 1000))
            except Retriable as exc:
                log.warning("exposure index: step failed, retrying at the next tick: %s", exc)
            except BaseException as exc:  # noqa: BLE001 (the thread's boundary: kept, check() raises it as Fatal)
                log.error("exposure index: maintainer stopped: %s: %s", type(exc).__name__, exc)
                self.failed = exc
                return
            stop.wait(self.tick_s)

    def check(self) -> None:
        """Raise Fatal when the maintainer stopped on an error that is not Retriable."""
        if self.failed is not None:
            raise Fatal(f"exposure index maintainer stopped: {type(self.failed).__name__}: {self.failed}")
