"""The step journal in Redis: one sorted set per (topic, partition, dataset), scored by offset.

Key: ``<prefix><topic>:<partition>:<dataset>``; members ``<offset>:<state JSON>`` (the offset makes a member
unique even when two steps started from equal states). :meth:`RedisStepJournal.record` is one MULTI/EXEC
pipeline (drop entries at ≥ offset and older than ``offset - keep``, add, refresh the TTL); :meth:`before` is one
``ZRANGEBYSCORE … LIMIT 0 1``. The TTL (default one day) only collects keys of datasets no longer signalled: an
entry is needed for at most one transaction's lifetime (minutes).
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from pareis.core.lifecycle import IncidentState
from pareis.errors import Fatal
from pareis.store.incidents import decode, encode
from pareis.store.journal import DEFAULT_KEEP, JournalEntry, Position
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

    def before(self, dataset: str, position: Position) -> IncidentState | None:
        key = self._key(position, dataset)
        with translated():
            found = self._redis.zrangebyscore(key, position.offset, "+inf", start=0, num=1)
        if not found:
            return None
        member = found[0]
        text = member.decode("utf-8") if isinstance(member, bytes) else str(member)
        offset, sep, state = text.partition(":")
        if not sep or not offset.isdigit():
            raise Fatal(f"corrupt journal entry in {key}: {text[:80]!r}")
        return decode(dataset, state)

    def record(self, entries: Sequence[JournalEntry]) -> None:
        if not entries:
            return
        pipe = self._redis.pipeline(transaction=True)
        for entry in entries:
            offset = entry.position.offset
            key = self._key(entry.position, entry.before.dataset)
            pipe.zremrangebyscore(key, offset, "+inf")
            pipe.zremrangebyscore(key, "-inf", f"({offset - self._keep}")
            pipe.zadd(key, {f"{offset}:{encode(entry.before)}": offset})
            pipe.expire(key, self._ttl_s)
        with translated():
            pipe.execute()

    def _key(self, position: Position, dataset: str) -> str:
        return f"{self._prefix}{position.topic}:{position.partition}:{dataset}"
