"""The published-gate ledger in Redis: one hash (its hash tag keeps it on one Redis Cluster slot)::

    <prefix>{gate}:published   HASH  field = model URN, value = ``<at_ms> <partition> <offset> <decision> <evaluated>``

The evaluated version's URN comes last, so whatever it contains is read back whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pareis.errors import Fatal
from pareis.store.gates import Decided
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import AnyRedis

DEFAULT_PREFIX = "pareis:"


class RedisGateLedger:
    """:class:`~pareis.store.gates.GateLedger` on a Redis client the caller builds and owns."""

    def __init__(self, client: AnyRedis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._redis = client
        self._key = f"{prefix}{{gate}}:published"

    def get(self, models: Iterable[str]) -> dict[str, Decided]:
        names = sorted(set(models))
        if not names:
            return {}
        with translated():
            values = self._redis.hmget(self._key, names)
        out = {}
        for model, raw in zip(names, values, strict=True):
            if raw is None:
                continue
            entry = reply_text(raw)
            try:
                at, partition, offset, decision, evaluated = entry.split(" ", 4)
                out[model] = Decided(decision, evaluated, int(at), int(partition), int(offset))
            except ValueError as exc:
                raise Fatal(f"corrupt gate ledger entry for {model} in redis key {self._key}: {entry!r}") from exc
        return out

    def put(self, decided: Mapping[str, Decided]) -> None:
        if not decided:
            return
        with translated():
            self._redis.hset(
                self._key,
                mapping={
                    m: f"{d.at_ms} {d.partition} {d.offset} {d.decision} {d.evaluated}" for m, d in decided.items()
                },
            )
