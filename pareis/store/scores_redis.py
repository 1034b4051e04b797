"""The published-score ledger in Redis: one hash, field = entity URN, value =
``<score> <at_ms> <partition> <offset>``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pareis.errors import Fatal
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import AnyRedis
from pareis.store.scores import Published

DEFAULT_KEY = "pareis:scores"


class RedisScoreLedger:
    """:class:`~pareis.store.scores.ScoreLedger` on a Redis client the caller builds and owns."""

    def __init__(self, client: AnyRedis, *, key: str = DEFAULT_KEY) -> None:
        self._redis = client
        self._key = key

    def get(self, urns: Iterable[str]) -> dict[str, Published]:
        names = sorted(set(urns))
        if not names:
            return {}
        with translated():
            values = self._redis.hmget(self._key, names)
        out = {}
        for urn, raw in zip(names, values, strict=True):
            if raw is None:
                continue
            text = raw.decode() if isinstance(raw, bytes) else str(raw)
            try:
                score, at, partition, offset = text.split(" ")
                out[urn] = Published(float(score), int(at), int(partition), int(offset))
            except ValueError as exc:
                raise Fatal(f"corrupt score ledger entry for {urn} in redis key {self._key}: {text!r}") from exc
        return out

    def put(self, writes: Mapping[str, Published]) -> None:
        if not writes:
            return
        with translated():
            self._redis.hset(
                self._key, mapping={u: f"{p.score!r} {p.at_ms} {p.partition} {p.offset}" for u, p in writes.items()}
            )
