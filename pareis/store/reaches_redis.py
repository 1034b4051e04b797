"""The reach index in Redis (:mod:`pareis.store.reaches`).

Keys (one hash tag, so that a put's transaction stays on one Redis Cluster slot)::

    <prefix>{reach}:group:<group URN>   HASH    field = incident URN, value = its reach of the group (JSON)
    <prefix>{reach}:incidents           HASH    field = incident URN, value = the groups it reaches (JSON array)

A put reads the incidents' groups inside WATCH/MULTI, so the groups an incident no longer reaches lose it in the
same transaction that writes the new ones. A read is one transaction of one HGETALL per group asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import redis

from pareis.core.serving import Reach
from pareis.errors import Fatal
from pareis.store.reaches import Reaches
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import AnyRedis

DEFAULT_PREFIX = "pareis:"


class RedisReachStore:
    """:class:`~pareis.store.reaches.ReachStore` on a Redis client the caller builds and owns."""

    def __init__(self, client: AnyRedis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._redis = client
        self._prefix = prefix
        self._index = f"{prefix}{{reach}}:incidents"

    def _group(self, group: str) -> str:
        return f"{self._prefix}{{reach}}:group:{group}"

    def put(self, reaches: Reaches) -> None:
        if not reaches:
            return
        incidents = sorted(reaches)
        wanted = {
            i: {g: orjson.dumps(r.to_json(), option=orjson.OPT_SORT_KEYS) for g, r in sorted(reaches[i].items())}
            for i in incidents
        }

        def write(pipe: redis.client.Pipeline) -> None:
            stored = pipe.hmget(self._index, incidents)
            before = {i: self._groups_of(i, raw) for i, raw in zip(incidents, stored, strict=True)}
            pipe.multi()
            for i in incidents:
                for group in sorted(before[i] - set(wanted[i])):
                    pipe.hdel(self._group(group), i)
                for group, value in wanted[i].items():
                    pipe.hset(self._group(group), i, value)
                if wanted[i]:
                    pipe.hset(self._index, i, orjson.dumps(sorted(wanted[i])))
                elif before[i]:
                    pipe.hdel(self._index, i)

        with translated():
            self._redis.transaction(write, self._index)

    def of_groups(self, groups: Iterable[str]) -> dict[str, tuple[Reach, ...]]:
        wanted = sorted(set(groups))
        if not wanted:
            return {}
        with translated():
            pipe = self._redis.pipeline(transaction=True)
            for group in wanted:
                pipe.hgetall(self._group(group))
            found = pipe.execute()
        return {group: self._decode(group, raw) for group, raw in zip(wanted, found, strict=True)}

    def _decode(self, group: str, raw: Mapping[Any, Any]) -> tuple[Reach, ...]:
        out = []
        for field, value in raw.items():
            incident = reply_text(field)
            try:
                out.append(Reach.from_json(incident, orjson.loads(value)))
            except (TypeError, ValueError) as exc:
                raise Fatal(f"corrupt reach of {incident} in redis key {self._group(group)}: {exc}") from exc
        return tuple(sorted(out, key=lambda r: r.incident))

    def _groups_of(self, incident: str, raw: object) -> set[str]:
        if raw is None:
            return set()
        try:
            groups = orjson.loads(raw if isinstance(raw, bytes | str) else b"")
            if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
                raise ValueError("not an array of strings")
        except ValueError as exc:
            raise Fatal(f"corrupt groups of {incident} in redis key {self._index}: {exc}") from exc
        return set(groups)
