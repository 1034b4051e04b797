"""The step journal in Redis: one sorted set per (topic, partition, dataset), scored by offset, and one set per
(topic, partition) naming the datasets that have entries there.

Keys: ``<prefix>{<topic>:<partition>}:<dataset>`` with members ``<offset>:<entry JSON>``
(:func:`~pareis.store.journal.encode_entry`; the offset prefix keeps members unique), and
``<prefix>{<topic>:<partition>}index``, the set of those datasets: one hash tag per partition, so that a partition's
keys share a Redis Cluster slot. :meth:`RedisStepJournal.record` is one MULTI/EXEC pipeline per partition (per entry:
drop the entries at ≥ its offset and older than ``offset - keep``, add it, index the dataset; entries of different
partitions never depend on each other); :meth:`RedisStepJournal.entries` is one ``ZRANGEBYSCORE``
(:meth:`RedisStepJournal.entries_of`: one per dataset, pipelined); :meth:`RedisStepJournal.release` reads the index,
then one Lua script, given every key it touches, trims each indexed set below the committed offset and unindexes the
emptied ones (a dataset indexed in between waits for the next release).

No key has a TTL: an entry is deleted when the transaction that wrote its outputs has committed, not on a timer
(a TTL would lose the outputs of a transaction redone after it, and makes the keys the first ones evicted under a
``volatile-*`` policy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pareis.store.journal import DEFAULT_KEEP, JournalEntry, Position, decode_entry, encode_entry
from pareis.store.redis_errors import text, translated
from pareis.store.redis_servers import AnyRedis

DEFAULT_PREFIX = "pareis:journal:"
RELEASE_CHUNK = 1000
"""Datasets per release script (the server runs each script alone: a chunk keeps that short)."""

_RELEASE = """
for i = 2, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. ARGV[1])
  if redis.call('ZCARD', KEYS[i]) == 0 then
    redis.call('SREM', KEYS[1], ARGV[i])
  end
end
return #KEYS - 1
"""


class RedisStepJournal:
    """:class:`~pareis.store.journal.StepJournal` on a Redis client the caller builds and owns."""

    def __init__(self, client: AnyRedis, *, prefix: str = DEFAULT_PREFIX, keep: int = DEFAULT_KEEP) -> None:
        if keep <= 0:
            raise ValueError("keep must be positive")
        self._redis = client
        self._prefix = prefix
        self._keep = keep
        self._release = client.register_script(_RELEASE)

    def entries(self, dataset: str, position: Position) -> list[JournalEntry]:
        key = self._key(position.topic, position.partition, dataset)
        with translated():
            found = self._redis.zrangebyscore(key, position.offset, "+inf")
        return _decoded(found, position, key)

    def entries_of(self, positions: Mapping[str, Position]) -> dict[str, list[JournalEntry]]:
        if not positions:
            return {}
        pipe = self._redis.pipeline(transaction=False)
        keys = {}
        for dataset, p in positions.items():
            keys[dataset] = self._key(p.topic, p.partition, dataset)
            pipe.zrangebyscore(keys[dataset], p.offset, "+inf")
        with translated():
            replies = pipe.execute()
        return {
            dataset: _decoded(found, positions[dataset], keys[dataset])
            for dataset, found in zip(positions, replies, strict=True)
        }

    def record(self, entries: Sequence[JournalEntry]) -> None:
        by_partition: dict[tuple[str, int], list[JournalEntry]] = {}
        for entry in entries:
            by_partition.setdefault((entry.position.topic, entry.position.partition), []).append(entry)
        for (topic, partition), group in by_partition.items():
            pipe = self._redis.pipeline(transaction=True)
            for entry in group:
                p = entry.position
                key = self._key(topic, partition, entry.dataset)
                pipe.zremrangebyscore(key, p.offset, "+inf")
                pipe.zremrangebyscore(key, "-inf", f"({p.offset - self._keep}")
                pipe.zadd(key, {f"{p.offset}:{encode_entry(entry)}": p.offset})
                pipe.sadd(self._index(topic, partition), entry.dataset)
            with translated():
                pipe.execute()

    def release(self, topic: str, partition: int, below: int) -> None:
        index = self._index(topic, partition)
        with translated():
            datasets = sorted(text(d) for d in self._redis.smembers(index))
            for start in range(0, len(datasets), RELEASE_CHUNK):
                chunk = datasets[start : start + RELEASE_CHUNK]
                keys = [index, *(self._key(topic, partition, d) for d in chunk)]
                self._release(keys=keys, args=[below, *chunk])

    def _key(self, topic: str, partition: int, dataset: str) -> str:
        return f"{self._prefix}{{{topic}:{partition}}}:{dataset}"

    def _index(self, topic: str, partition: int) -> str:
        return f"{self._prefix}{{{topic}:{partition}}}index"


def _decoded(members: Sequence[object], position: Position, key: str) -> list[JournalEntry]:
    out = []
    for member in members:
        text = member.decode("utf-8") if isinstance(member, bytes) else str(member)
        out.append(decode_entry(text.partition(":")[2], position.topic, position.partition, key))
    return out
