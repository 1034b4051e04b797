"""The incident store contract: one suite, run against the in-memory and the Redis implementation."""

from __future__ import annotations

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pareis.core.lifecycle import IncidentState, Published, Status, Tracked
from pareis.errors import Fatal, Retriable
from pareis.store.incidents import IncidentStore
from pareis.store.incidents_memory import MemoryIncidentStore
from pareis.store.incidents_redis import RedisIncidentStore
from tests.support.backends import Backend

DS1 = "urn:li:dataset:(urn:li:dataPlatform:snowflake,shop.orders,PROD)"
DS2 = "urn:li:dataset:(urn:li:dataPlatform:snowflake,shop.customers,PROD)"
DS3 = "urn:li:dataset:(urn:li:dataPlatform:hive,événements,PROD)"


def tracked(urn: str, revision: int = 1) -> Tracked:
    published = Published.from_json(
        {
            "assertions": ["urn:li:assertion:a"],
            "at_risk": ["urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_3,PROD)"],
            "failed_rows": None,
            "healed_ms": None,
            "retrain": [["urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_3,PROD)", "BLOCKED"]],
            "severity": "HIGH",
        }
    )
    return Tracked(urn, key_ms=200, opened_at_ms=5000, revision=revision, published=published)


def active(dataset: str) -> IncidentState:
    return IncidentState(
        dataset, Status.ACTIVE, floor_ms=101, incident=tracked(f"urn:li:incident:pareis-{len(dataset)}")
    )


@pytest.fixture
def store(backend: Backend) -> IncidentStore:
    if backend.client is None:
        return MemoryIncidentStore()
    return RedisIncidentStore(backend.client, prefix="test:")


def test_implementations_satisfy_the_port(store: IncidentStore) -> None:
    assert isinstance(store, IncidentStore)


def test_an_unknown_dataset_is_clear(store: IncidentStore) -> None:
    assert store.get(DS1) == IncidentState(DS1)


def test_a_state_reads_back_equal_to_what_was_written(store: IncidentStore) -> None:
    state = active(DS3)
    store.put(state)
    assert store.get(DS3) == state
    assert store.get(DS1) == IncidentState(DS1)


def test_put_replaces_the_whole_state(store: IncidentStore) -> None:
    store.put(active(DS1))
    resolved = IncidentState(DS1, Status.RESOLVED, floor_ms=501, incident=tracked("urn:li:incident:pareis-x", 3))
    store.put(resolved)
    assert store.get(DS1) == resolved


def test_active_lists_only_active_states_sorted_by_dataset(store: IncidentStore) -> None:
    store.put(active(DS1))
    store.put(active(DS2))
    store.put(IncidentState(DS3, Status.CLEAR, floor_ms=7))
    assert [s.dataset for s in store.active()] == [DS2, DS1]
    store.put(IncidentState(DS2, Status.RESOLVED, floor_ms=9, incident=tracked("urn:li:incident:pareis-y")))
    assert store.active() == [active(DS1)]


def test_get_many_is_get_of_each_in_one_read(store: IncidentStore) -> None:
    store.put(active(DS1))
    resolved = IncidentState(DS2, Status.RESOLVED, floor_ms=9, incident=tracked("urn:li:incident:pareis-y"))
    store.put(resolved)
    got = store.get_many([DS3, DS1, DS2, DS1])
    assert got == {DS1: store.get(DS1), DS2: resolved, DS3: IncidentState(DS3)}
    assert list(got) == sorted(got) and store.get_many([]) == {}


def test_redis_store_reports_an_unreachable_server_as_retriable() -> None:
    client = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    with pytest.raises(Retriable):
        RedisIncidentStore(client).get(DS1)


@pytest.mark.integration
def test_redis_store_reports_corrupt_states_as_fatal(redis_client: redis.Redis) -> None:
    store = RedisIncidentStore(redis_client, prefix="t:")
    redis_client.hset("t:{incidents}:state", DS1, "{not json")
    with pytest.raises(Fatal, match="corrupt incident state"):
        store.get(DS1)
    redis_client.hset(
        "t:{incidents}:state",
        DS2,
        '{"dataset": "urn:li:dataset:other", "status": "CLEAR", "floor_ms": null, "incident": null}',
    )
    with pytest.raises(Fatal, match="is for urn:li:dataset:other"):
        store.get(DS2)
    redis_client.sadd("t:{incidents}:active", DS3)
    with pytest.raises(Fatal, match="listed as active"):
        store.active()


def test_put_many_is_put_of_each(store: IncidentStore) -> None:
    store.put(active(DS2))
    resolved = IncidentState(DS2, Status.RESOLVED, floor_ms=9, incident=tracked("urn:li:incident:pareis-y"))
    store.put_many([active(DS1), resolved, active(DS3)])
    assert store.get_many([DS1, DS2, DS3]) == {DS1: active(DS1), DS2: resolved, DS3: active(DS3)}
    assert store.active() == [active(DS3), active(DS1)]
    store.put_many([])
    assert store.get(DS2) == resolved
