"""The collector's settings of Pareis's long-running processes (pareis.compose.heap)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pareis.compose import heap


@pytest.fixture
def restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_settle_freezes_what_is_alive_and_raises_the_thresholds(restored: None) -> None:
    kept = [{"a": i} for i in range(1000)]
    heap.settle()
    assert gc.get_threshold() == heap.THRESHOLDS
    assert gc.get_freeze_count() >= len(kept)


def test_pareis_run_settles_once_its_roles_are_built(restored: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from pareis.compose import process
    from pareis.config import Settings

    order: list[str] = []
    monkeypatch.setattr(process, "resolve_roles", lambda names, settings: order.append("built") or [])
    monkeypatch.setattr(process, "settle", lambda: order.append("settled"))
    monkeypatch.setattr(process, "run_roles", lambda roles, settings: order.append("ran") or 0)
    assert process.run(["lineage"], Settings()) == 0
    assert order == ["built", "settled", "ran"]
