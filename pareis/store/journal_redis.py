"""The step journal in Redis: one sorted set per (topic, partition, dataset), scored by offset.

Key: ``<prefix><topic>:<partition>:<dataset>``; members ``<offset>:<entry JSON>``
(:func:`~pareis.store.journal.encode_entry`; the offset prefix keeps members unique). :meth:`RedisStepJournal.record`
is one MULTI/EXEC pipeline (per entry: drop the entries at ≥ its offset and older than ``offset - keep``, add it,
refresh the TTL); :meth:`RedisStepJournal.entries` is one ``ZRANGEBYSCORE``. The TTL (default one day) only
collects keys of datasets no longer signalled: an entry is needed for one transaction's lifetime at most (minutes).
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from pareis.store.journal import DEFAULT_KEEP, JournalEntry, Position, decode_entry, encode_entry
from pareis.store.redis_errors import translated

DEFAULT_PREFIX = "pareis:journal:"
DEFAULT_TTL_S = 24 * 3600


class RedisStepJournal:
    """:class:`~pareis.store.journal.StepJournal` on a Redis client the caller builds and owns."""

    def __init__(
        self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX, keep: int = DEFAULT_KEEP, ttl_s: int = DEFAULT_TTL_S
    ) -> None:
        if keep <= 0 or ttl_s <= 0:
            raise ValueError("keep and ttl_s must be positive")
        self._redis = client
        self._prefix = prefix
        self._keep = keep
        self._ttl_s = ttl_s

    def entries(self, dataset: str, position: Position) -> list[JournalEntry]:
        key = self._key(position.topic, position.partition, dataset)
        with translated():
            found = self._redis.zrangebyscore(key, position.offset, "+inf")
        out = []
        for member in found:
            text = member.decode("utf-8") if isinstance(member, bytes) else str(member)
            out.append(decode_entry(text.partition(":")[2], position.topic, position.partition, key))
        return out

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
            pipe.expire(key, self._ttl_s)
        with translated():
            pipe.execute()

    def _key(self, topic: str, partition: int, dataset: str) -> str:
        return f"{self._prefix}{topic}:{partition}:{dataset}"
