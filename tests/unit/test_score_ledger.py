"""The published-score ledger port, on both backends (pareis.store.scores)."""

from __future__ import annotations

import pytest

from pareis.store.scores import MemoryScoreLedger, Published, ScoreLedger
from pareis.store.scores_redis import RedisScoreLedger
from tests.support.backends import Backend


@pytest.fixture
def ledger(backend: Backend) -> ScoreLedger:
    if backend.client is None:
        return MemoryScoreLedger()
    return RedisScoreLedger(backend.client)


def test_unknown_entities_have_no_entry(ledger: ScoreLedger) -> None:
    assert ledger.get(["urn:li:dataset:x"]) == {}
    assert ledger.get([]) == {}


def test_entries_are_replaced_and_read_back_exactly(ledger: ScoreLedger) -> None:
    ledger.put({"urn:li:dataset:x": Published(95.2, 10, 0, 7), "urn:li:mlModel:m": Published(0.1, 20)})
    ledger.put({"urn:li:dataset:x": Published(33.3, 30, 2, 9)})
    assert ledger.get(["urn:li:mlModel:m", "urn:li:dataset:x", "urn:li:dataset:y"]) == {
        "urn:li:dataset:x": Published(33.3, 30, 2, 9),
        "urn:li:mlModel:m": Published(0.1, 20),
    }
