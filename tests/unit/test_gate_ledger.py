"""The published-gate ledger port, on both backends (pareis.store.gates): one contract suite."""

from __future__ import annotations

import pytest
import redis

from pareis.errors import Fatal
from pareis.store.gates import Decided, GateLedger, MemoryGateLedger
from pareis.store.gates_redis import RedisGateLedger

GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
VERSION = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn 3 (with spaces),PROD)"


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def ledger(request: pytest.FixtureRequest) -> GateLedger:
    if request.param == "memory":
        return MemoryGateLedger()
    return RedisGateLedger(request.getfixturevalue("redis_client"))


def test_unknown_models_have_no_entry(ledger: GateLedger) -> None:
    assert ledger.get([GROUP]) == {}
    assert ledger.get([]) == {}
    ledger.put({})
    assert ledger.get([GROUP]) == {}


def test_entries_are_replaced_and_read_back_exactly(ledger: GateLedger) -> None:
    ledger.put({GROUP: Decided("NO-GO", VERSION, 10, 0, 7), VERSION: Decided("CANNOT_EVALUATE", "", 20)})
    ledger.put({GROUP: Decided("GO", VERSION, 30, 2, 9)})
    assert ledger.get([VERSION, GROUP, "urn:li:mlModel:unknown", GROUP]) == {
        GROUP: Decided("GO", VERSION, 30, 2, 9),
        VERSION: Decided("CANNOT_EVALUATE", "", 20, -1, -1),
    }


@pytest.mark.integration
def test_redis_keeps_one_hash_on_one_cluster_slot_and_refuses_what_it_did_not_write(
    redis_client: redis.Redis,
) -> None:
    RedisGateLedger(redis_client, prefix="t:").put({GROUP: Decided("GO", VERSION, 1)})
    assert redis_client.keys("t:*") == [b"t:{gate}:published"]  # the hash tag: one slot in Redis Cluster
    redis_client.hset("t:{gate}:published", GROUP, "not an entry")
    with pytest.raises(Fatal, match="corrupt gate ledger entry"):
        RedisGateLedger(redis_client, prefix="t:").get([GROUP])
