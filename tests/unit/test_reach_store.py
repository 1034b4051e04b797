"""The reach index port on every backend (pareis.store.reaches): one contract — memory, a standalone Redis and a
Redis Cluster (the Redis ones in the integration tier)."""

from __future__ import annotations

import pytest

from pareis.core.serving import Reach
from pareis.errors import Fatal
from pareis.store.reaches import MemoryReachStore, ReachStore
from pareis.store.reaches_redis import RedisReachStore
from tests.support.backends import Backend

G1 = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
G2 = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,ltv,PROD)"
I1, I2 = "urn:li:incident:pareis-1", "urn:li:incident:pareis-2"
V1 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_1,PROD)"
V2 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_2,PROD)"
L1 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,ltv_1,PROD)"


def reach(incident: str, *versions: str, healed: int | None = None) -> Reach:
    return Reach(incident, 100, healed, frozenset(versions), 200)


@pytest.fixture
def store(backend: Backend) -> ReachStore:
    if backend.client is None:
        return MemoryReachStore()
    return RedisReachStore(backend.client, prefix="test:")


def test_a_group_nobody_reached_has_no_reach(store: ReachStore) -> None:
    assert store.of_groups([G1]) == {G1: ()}
    assert store.of_groups([]) == {}


def test_reaches_are_read_per_group_by_incident(store: ReachStore) -> None:
    store.put({I2: {G1: reach(I2, V2)}, I1: {G1: reach(I1, V1), G2: reach(I1, L1)}})
    assert store.of_groups([G2, G1, G1]) == {G1: (reach(I1, V1), reach(I2, V2)), G2: (reach(I1, L1),)}


def test_a_put_replaces_an_incidents_reaches_and_an_empty_one_removes_it(store: ReachStore) -> None:
    store.put({I1: {G1: reach(I1, V1), G2: reach(I1, L1)}, I2: {G1: reach(I2, V2)}})
    store.put({I1: {G1: reach(I1, V1, V2, healed=300)}})  # healed, and no longer reaching ltv
    assert store.of_groups([G1, G2]) == {G1: (reach(I1, V1, V2, healed=300), reach(I2, V2)), G2: ()}
    store.put({I2: {}})
    assert store.of_groups([G1, G2]) == {G1: (reach(I1, V1, V2, healed=300),), G2: ()}
    store.put({I2: {}})  # removing what is not there
    store.put({I1: {G1: reach(I1, V1, V2, healed=300)}})  # a redo writes the same again
    assert store.of_groups([G1]) == {G1: (reach(I1, V1, V2, healed=300),)}


def test_a_reach_is_stored_under_its_incident_with_unknown_times_kept(store: ReachStore) -> None:
    store.put({I1: {G1: Reach("urn:li:incident:other", None, None, frozenset(), None)}})
    assert store.of_groups([G1]) == {G1: (Reach(I1, None, None, frozenset(), None),)}


def test_a_corrupt_reach_on_redis_is_fatal_and_names_the_key(redis_backend: Backend) -> None:
    store = RedisReachStore(redis_backend.client, prefix="test:")
    store.put({I1: {G1: reach(I1, V1)}})
    redis_backend.client.hset(f"test:{{reach}}:group:{G1}", I1, b'{"in_blast": 3}')
    with pytest.raises(Fatal, match="corrupt reach of urn:li:incident:pareis-1"):
        store.of_groups([G1])


def test_as_of_forgets_what_had_not_happened_yet() -> None:
    healed = Reach(I1, 100, 300, frozenset({V1}), 200)
    assert healed.as_of(None) == healed and healed.as_of(300) == healed
    assert healed.as_of(250) == Reach(I1, 100, None, frozenset({V1}), 200)  # still failing then
    assert healed.as_of(199) is None  # not begun
    assert Reach.from_json(I1, healed.to_json()) == healed
    with pytest.raises(TypeError):
        Reach.from_json(I1, {"in_blast": [], "healed_ms": "soon"})
