"""The collector's settings of Pareis's long-running processes (pareis.compose.heap)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from pareis.compose import heap


@pytest.fixture
def restored() -> Iterator[None]:
    before = gc.get_threshold()
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)
    if enabled:
        gc.enable()


class Node:
    """An object in a reference cycle: only a collection frees it."""

    def __init__(self) -> None:
        self.me = self


def cycle() -> weakref.ref[Node]:
    """A reference cycle, already garbage: a weak reference to it."""
    return weakref.ref(Node())


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_settle_freezes_what_is_alive_and_raises_the_thresholds(restored: None) -> None:
    kept = [{"a": i} for i in range(1000)]
    heap.settle()
    assert gc.get_threshold() == heap.THRESHOLDS
    assert gc.get_freeze_count() >= len(kept)


def test_pareis_run_starts_its_collector_once_its_roles_are_built_and_runs_them_with_it(
    restored: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pareis.compose import process
    from pareis.config import Settings

    order: list[str] = []
    given: list[heap.Collector | None] = []
    monkeypatch.setattr(process, "resolve_roles", lambda names, settings: order.append("built") or [])
    monkeypatch.setattr(heap, "settle", lambda: order.append("settled"))

    def run_roles(roles: object, settings: object, *, collector: heap.Collector | None = None) -> int:
        order.append("ran")
        given.append(collector)
        return 0

    monkeypatch.setattr(process, "run_roles", run_roles)
    assert process.run(["lineage"], Settings()) == 0
    assert order == ["built", "settled", "ran"]
    assert isinstance(given[0], heap.Collector) and not gc.isenabled()


def test_a_started_collector_collects_between_batches_not_during_them(restored: None) -> None:
    collector = heap.Collector(young=1, clock=Clock())
    collector.start()
    assert not gc.isenabled() and gc.get_threshold() == heap.THRESHOLDS
    during = [cycle() for _ in range(3)]
    for _ in range(200_000 // 100):  # a batch's allocations: far past any threshold, and no collection runs
        [[] for _ in range(100)]
    assert all(ref() is not None for ref in during)
    collector.between()
    assert all(ref() is None for ref in during)


def test_between_leaves_the_young_generations_until_enough_was_allocated(restored: None) -> None:
    collector = heap.Collector(young=10**9, clock=Clock())
    collector.start()
    ref = cycle()
    collector.between()  # an idle poll: too little allocated to be worth a collection
    assert ref() is not None
    gc.collect()


def test_the_whole_heap_is_collected_every_full_interval(restored: None) -> None:
    clock = Clock()
    collector = heap.Collector(young=10**9, full_every_s=60.0, clock=clock)
    collector.start()
    node = Node()
    ref = weakref.ref(node)
    gc.collect(1)  # it outlived a batch: in the old generation, which only a full collection looks at
    del node
    clock.now += 59.0
    collector.between()
    assert ref() is not None
    clock.now += 1.0
    collector.between()
    assert ref() is None
