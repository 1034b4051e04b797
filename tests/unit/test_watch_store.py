"""The watch index port on both backends (pareis.store.watch): one contract."""

from __future__ import annotations

import threading

import pytest

from pareis.store.watch import MemoryWatchStore, WatchStore
from pareis.store.watch_redis import RedisWatchStore
from tests.support.backends import Backend

D1, D2 = "urn:li:dataset:(urn:li:dataPlatform:pg,a,PROD)", "urn:li:dataset:(urn:li:dataPlatform:pg,b,PROD)"
F, M = "urn:li:mlFeature:(t,f)", "urn:li:mlModel:(urn:li:dataPlatform:mlflow,m,PROD)"


@pytest.fixture
def store(backend: Backend) -> WatchStore:
    if backend.client is None:
        return MemoryWatchStore()
    return RedisWatchStore(backend.client, prefix="test:")


def test_an_empty_index_watches_nothing(store: WatchStore) -> None:
    index = store.index()
    assert index is not None and not index
    assert index.hits([D1, F]) == ()
    assert store.watches() == {}


def test_sets_are_inverted_and_hits_are_sorted(store: WatchStore) -> None:
    store.put({D2: [M, F, D2], D1: [F, D1]})
    index = store.index()
    assert index is not None
    assert index.by_entity[F] == (D1, D2)
    assert index.hits([F]) == (D1, D2)
    assert index.hits([M, "urn:li:mlModel:other"]) == (D2,)
    assert index.hits(["urn:li:mlModel:other"]) == ()
    assert store.watches() == {D1: (D1, F), D2: (D2, F, M)}


def test_put_replaces_a_set_and_an_empty_set_removes_it(store: WatchStore) -> None:
    store.put({D1: [F, M], D2: [D2]})
    store.put({D1: [D1]})
    assert store.watches() == {D1: (D1,), D2: (D2,)}
    store.put({D2: []})
    index = store.index()
    assert index is not None and index.hits([D2, F, M]) == ()
    assert store.watches() == {D1: (D1,)}


def test_the_revision_moves_only_on_a_change(store: WatchStore) -> None:
    first = store.index()
    assert first is not None
    assert store.index(first.revision) is None  # nothing written: the caller's copy is current
    store.put({D1: [F]})
    second = store.index(first.revision)
    assert second is not None and second.revision != first.revision and second.hits([F]) == (D1,)
    store.put({D1: [F]})  # the same set again
    store.put({D2: []})  # removing what is not there
    assert store.index(second.revision) is None
    store.put({D1: []})
    third = store.index(second.revision)
    assert third is not None and third.revision != second.revision and not third


def test_concurrent_writers_lose_no_set_and_no_revision(store: WatchStore) -> None:
    start = store.index()
    assert start is not None

    def write(i: int) -> None:
        for j in range(10):
            store.put({f"urn:li:dataset:d{i}": [f"urn:li:mlModel:m{i}-{j}"]})

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.watches() == {f"urn:li:dataset:d{i}": (f"urn:li:mlModel:m{i}-9",) for i in range(4)}
    end = store.index(start.revision)
    assert end is not None and end.hits([f"urn:li:mlModel:m{i}-9" for i in range(4)]) == tuple(
        f"urn:li:dataset:d{i}" for i in range(4)
    )
