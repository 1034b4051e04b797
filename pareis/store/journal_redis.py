"""The step journal in Redis: one sorted set per (topic, partition, dataset), scored by offset, and one set per
(topic, partition) naming the datasets that have entries there.

Keys: ``<prefix><topic>:<partition>:<dataset>`` with members ``<offset>:<entry JSON>``
(:func:`~pareis.store.journal.encode_entry`; the offset prefix keeps members unique), and
``<prefix>index:<topic>:<partition>``, the set of those datasets. :meth:`RedisStepJournal.record` is one MULTI/EXEC
pipeline (per entry: drop the entries at ≥ its offset and older than ``offset - keep``, add it, index the
dataset); :meth:`RedisStepJournal.entries` is one ``ZRANGEBYSCORE`` (:meth:`RedisStepJournal.entries_of`: one per
dataset, pipelined); :meth:`RedisStepJournal.release` is one Lua
script (atomic: it trims each indexed set below the committed offset and unindexes the emptied ones).

No key has a TTL: an entry is deleted when the transaction that wrote its outputs has committed, not on a timer
(a TTL would lose the outputs of a transaction redone after it, and makes the keys the first ones evicted under a
``volatile-*`` policy). The release script builds key names from the index, so the journal needs a single Redis
(not a cluster; Pareis requires ``noeviction`` on it anyway).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import redis

from pareis.store.journal import DEFAULT_KEEP, JournalEntry, Position, decode_entry, encode_entry
from pareis.store.redis_errors import translated

DEFAULT_PREFIX = "pareis:journal:"

_RELEASE = """
local members = redis.call('SMEMBERS', KEYS[1])
for _, dataset in ipairs(members) do
  local key = ARGV[1] .. dataset
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. ARGV[2])
  if redis.call('ZCARD', key) == 0 then
    redis.call('SREM', KEYS[1], dataset)
  end
end
return #members
"""


class RedisStepJournal:
    """:class:`~pareis.store.journal.StepJournal` on a Redis client the caller builds and owns."""

    def __init__(self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX, keep: int = DEFAULT_KEEP) -> None:
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
        if not entries:
            return
        pipe = self._redis.pipeline(transaction=True)
        for entry in entries:
            p = entry.position
            key = self._key(p.topic, p.partition, entry.dataset)
            pipe.zremrangebyscore(key, p.offset, "+inf")
            pipe.zremrangebyscore(key, "-inf", f"({p.offset - self._keep}")
            pipe.zadd(key, {f"{p.offset}:{encode_entry(entry)}": p.offset})
            pipe.sadd(self._index(p.topic, p.partition), entry.dataset)
        with translated():
            pipe.execute()

    def release(self, topic: str, partition: int, below: int) -> None:
        with translated():
            self._release(keys=[self._index(topic, partition)], args=[f"{self._prefix}{topic}:{partition}:", below])

    def _key(self, topic: str, partition: int, dataset: str) -> str:
        return f"{self._prefix}{topic}:{partition}:{dataset}"

    def _index(self, topic: str, partition: int) -> str:
        return f"{self._prefix}index:{topic}:{partition}"


def _decoded(members: Sequence[object], position: Position, key: str) -> list[JournalEntry]:
    out = []
    for member in members:
        text = member.decode("utf-8") if isinstance(member, bytes) else str(member)
        out.append(decode_entry(text.partition(":")[2], position.topic, position.partition, key))
    return out
