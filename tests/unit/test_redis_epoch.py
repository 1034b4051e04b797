"""A Redis that lost data is detected, never trusted (pareis.store.redis_epoch), on standalone Redis and Redis
Cluster; and the acknowledgement of writes by replicas before a commit."""

from __future__ import annotations

from typing import Any

import pytest
from redis.cluster import RedisCluster

from pareis.errors import Retriable
from pareis.store.redis_epoch import Epoch, IndexLost, slot_tags
from pareis.store.redis_servers import SLOTS, slot_of
from tests.support.backends import Backend


def test_every_slot_has_a_tag_of_its_own() -> None:
    tags = slot_tags()
    assert len(tags) == SLOTS and [slot_of(t) for t in tags] == list(range(SLOTS))
    assert max(len(t) for t in tags) <= 4


@pytest.fixture
def client(redis_backend: Backend) -> Any:
    """A client on an empty standalone database or cluster."""
    return redis_backend.client


def flush(client: Any) -> None:
    """Every key gone, as after FLUSHALL or a restart without persistence (a cluster: on every primary)."""
    if isinstance(client, RedisCluster):
        for node in client.get_primaries():
            client.get_redis_connection(node).flushall()
    else:
        client.flushdb()


def lines(error: pytest.ExceptionInfo[Any]) -> str:
    text = str(error.value)
    assert "\n" not in text and "pareis bootstrap" in text
    return text


def test_a_role_stamps_a_fresh_redis_and_a_reader_writes_nothing(client: Any) -> None:
    reader = Epoch(client, "here")
    assert reader.open(stamp=False) is None and client.dbsize() == 0
    reader.check()  # still fresh
    role = Epoch(client, "here")
    token = role.open()
    assert token is not None and Epoch(client, "here").open() == token  # the next role finds it
    reader.check()  # the reader takes the epoch the role stamped
    assert reader.token == token


def test_a_loss_after_the_open_is_raised_marked_and_refused_on_every_later_start(client: Any) -> None:
    epoch = Epoch(client, "redis://here")
    epoch.open()
    flush(client)
    with pytest.raises(IndexLost, match="lost its data") as lost:
        epoch.check()
    assert "redis://here" in lines(lost)
    # A restart finds the mark (a role's first write after the loss no longer looks like a fresh Redis).
    client.set("pareis:lineage:layout", "3")
    with pytest.raises(IndexLost, match=r"lost its data \(marked: lost ") as again:
        Epoch(client, "redis://here").open()
    lines(again)


def test_keys_without_an_epoch_are_a_loss_not_a_fresh_redis(client: Any) -> None:
    client.set("pareis:lineage:{x}r:schemaMetadata", "…")  # written after a flush by a process that had not noticed
    with pytest.raises(IndexLost, match="holds Pareis keys but no epoch") as lost:
        Epoch(client, "here").open()
    lines(lost)
    client.delete("pareis:lineage:{x}r:schemaMetadata")
    client.set("another-app:key", "1")  # a Redis shared with another application is still fresh for Pareis
    assert Epoch(client, "here").open() is not None


def test_a_rebuild_stamps_a_new_epoch_over_a_loss_and_keeps_an_intact_one(client: Any) -> None:
    first = Epoch(client, "here")
    token = first.open()
    assert Epoch(client, "here").rebuilt() == token  # a catch-up load on a sound Redis changes nothing
    flush(client)
    with pytest.raises(IndexLost):
        first.check()
    rebuilt = Epoch(client, "here").rebuilt()
    assert rebuilt not in (None, token)
    assert Epoch(client, "here").open() == rebuilt
    with pytest.raises(IndexLost):
        first.check()  # a role still running on the old epoch stops


@pytest.mark.integration
def test_one_cluster_primary_losing_its_data_is_seen(redis_cluster_client: RedisCluster) -> None:
    epoch = Epoch(redis_cluster_client, "cluster")
    epoch.open()
    primaries = redis_cluster_client.get_primaries()
    victim = primaries[1]
    redis_cluster_client.get_redis_connection(victim).flushall()  # one primary back empty, its replica following
    with pytest.raises(IndexLost, match=f"gone from {victim.name}") as lost:
        epoch.check()
    lines(lost)
    others = [redis_cluster_client.get_redis_connection(n) for n in primaries if n is not victim]
    assert all(o.dbsize() >= 1 for o in others)  # the others kept theirs: this is not an empty cluster
    with pytest.raises(IndexLost, match="marked"):
        Epoch(redis_cluster_client, "cluster").open()


def test_writes_are_acknowledged_by_the_replicas_asked_for(client: Any) -> None:
    epoch = Epoch(client, "here")
    epoch.open()
    epoch.acknowledged(0, 100)
    if isinstance(client, RedisCluster):
        epoch.acknowledged(1, 5000)  # each primary of the local cluster has a replica
        with pytest.raises(Retriable, match=r"1 of 2 replicas of .* acknowledged"):
            epoch.acknowledged(2, 200)
    else:
        with pytest.raises(Retriable, match="0 of 1 replicas"):
            epoch.acknowledged(1, 100)  # the test Redis has none
    flush(client)
    with pytest.raises(IndexLost):
        epoch.acknowledged(0, 100)


def test_a_reader_before_any_role_never_mistakes_the_first_stamp_for_a_loss(client: Any) -> None:
    reader = Epoch(client, "here")
    reader.open(stamp=False)
    flush(client)
    reader.check()
    Epoch(client, "here").open()
    reader.check()


@pytest.mark.integration
def test_roles_starting_together_finish_one_stamp_rather_than_take_it_for_a_loss(
    redis_cluster_client: RedisCluster,
) -> None:
    """A stamp sets every slot, one primary's after another: a second role that opens in between finds the epoch on
    the first primaries and none on the others. On a Redis holding no Pareis key, that is the first role's stamp under
    way (two roles starting at once on a fresh cluster): the second finishes it with the same epoch, and a reader takes
    it for fresh — where a primary of a Redis holding data that finds none is a loss, as ever."""
    first_slot = Epoch(redis_cluster_client, "cluster")._every_slot()[0]  # noqa: SLF001 - the stamp's first step
    redis_cluster_client.set(f"pareis:epoch:{{{slot_tags()[first_slot]}}}", "begun 1")  # the first role's first SET
    reader = Epoch(redis_cluster_client, "cluster")
    assert reader.open(stamp=False) is None
    reader.check()  # still a stamp under way, not a loss
    role = Epoch(redis_cluster_client, "cluster")
    assert role.open() == "begun"  # finished with the first role's epoch
    assert Epoch(redis_cluster_client, "cluster").open() == "begun"
    reader.check()
    role.check()
    assert reader.token == "begun"
    flush(redis_cluster_client)
    redis_cluster_client.set(f"pareis:epoch:{{{slot_tags()[first_slot]}}}", "begun 1")
    redis_cluster_client.set("pareis:lineage:{x}r:schemaMetadata", "…")  # data: the primaries without an epoch lost it
    with pytest.raises(IndexLost, match="their epoch differs"):
        Epoch(redis_cluster_client, "cluster").open()
