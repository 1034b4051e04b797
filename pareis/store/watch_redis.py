"""The watch index in Redis (:mod:`pareis.store.watch`).

Keys (one hash tag, so the transaction that writes both stays on one Redis Cluster slot)::

    <prefix>{watch}:sets   HASH    field = incident dataset, value = its watch set (JSON array, sorted)
    <prefix>{watch}:rev    STRING  the revision: incremented by every put that changes a set

A put compares with the stored sets inside WATCH/MULTI, so an unchanged set leaves the revision alone (the
lineage roles then keep their copy) and concurrent writers never lose an increment.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import orjson
import redis

from pareis.core.watch import WatchIndex
from pareis.errors import Fatal
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import AnyRedis

DEFAULT_PREFIX = "pareis:"


class RedisWatchStore:
    """:class:`~pareis.store.watch.WatchStore` on a Redis client the caller builds and owns."""

    def __init__(self, client: AnyRedis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._redis = client
        self._sets = f"{prefix}{{watch}}:sets"
        self._rev = f"{prefix}{{watch}}:rev"

    def put(self, watches: Mapping[str, Collection[str]]) -> None:
        if not watches:
            return
        datasets = sorted(watches)
        wanted = {d: orjson.dumps(sorted(set(watches[d]))) for d in datasets}

        def write(pipe: redis.client.Pipeline) -> None:
            stored = pipe.hmget(self._sets, datasets)
            removed = [d for d, old in zip(datasets, stored, strict=True) if old is not None and wanted[d] == b"[]"]
            changed = {
                d: wanted[d] for d, old in zip(datasets, stored, strict=True) if wanted[d] != b"[]" and old != wanted[d]
            }
            if not removed and not changed:
                return
            pipe.multi()
            if removed:
                pipe.hdel(self._sets, *removed)
            if changed:
                pipe.hset(self._sets, items=[part for pair in sorted(changed.items()) for part in pair])
            pipe.incr(self._rev)

        with translated():
            self._redis.transaction(write, self._sets, self._rev)

    def index(self, known: str | None = None) -> WatchIndex | None:
        with translated():
            revision = reply_text(self._redis.get(self._rev) or b"0")
            if revision == known:
                return None
            pipe = self._redis.pipeline(transaction=True)
            pipe.get(self._rev)
            pipe.hgetall(self._sets)
            raw_rev, raw = pipe.execute()
        return WatchIndex.of(self._decode(raw), reply_text(raw_rev or b"0"))

    def watches(self) -> dict[str, tuple[str, ...]]:
        with translated():
            raw = self._redis.hgetall(self._sets)
        return {d: tuple(es) for d, es in sorted(self._decode(raw).items())}

    def _decode(self, raw: Mapping[Any, Any]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for field, value in raw.items():
            try:
                entities = orjson.loads(value)
                if not isinstance(entities, list) or not all(isinstance(e, str) for e in entities):
                    raise ValueError("not an array of strings")
            except ValueError as exc:
                raise Fatal(f"corrupt watch set of {reply_text(field)} in redis key {self._sets}: {exc}") from exc
            out[reply_text(field)] = entities
        return out
