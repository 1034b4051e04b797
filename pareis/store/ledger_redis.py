"""The effect ledger in Redis: one key per delivered effect, ``SET <prefix><id> 1``; a delivery in progress holds
``SET <prefix>claim:<id> <owner> NX PX <ttl>`` (released by a compare-and-delete script); a delivery's progress
``SET <prefix>value:<key> <value>``, with the same lifetime as an entry.

By default an entry never expires: the ledger must not forget an effect while it can still be redelivered, and an
effect can be redelivered as long as the effects topic holds it (a consumer group reset, a replay of the topic).
Effects are few (a handful per incident), so the ledger grows slowly. ``ttl_s`` bounds it where the operator
knows the topic's retention (it must exceed it); a TTL also makes the keys the first evicted under a
``volatile-*`` policy, which is one reason Pareis requires ``noeviction``.
"""

from __future__ import annotations

from collections.abc import Sequence

from redis.cluster import RedisCluster

from pareis.store.ledger import _check
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import AnyRedis

DEFAULT_PREFIX = "pareis:ledger:effect:"
DEFAULT_TTL_S: int | None = None
MGET_CHUNK = 1000
"""Keys per MGET of :meth:`RedisLedger.get_many` (one round trip each; a bounded reply)."""
# Delete the claim only if this owner still holds it (a lapsed claim may belong to another consumer by now).
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


class RedisLedger:
    """:class:`~pareis.store.ledger.EffectLedger` on a Redis client the caller builds and owns.

    Connection errors, timeouts, a loading or read-only (failing-over) server → :class:`~pareis.errors.Retriable`;
    a refused password and any other server error (a key of the wrong type, a disabled command) → Fatal: they
    are configuration, and every later call would fail the same way.
    """

    def __init__(self, client: AnyRedis, *, prefix: str = DEFAULT_PREFIX, ttl_s: int | None = DEFAULT_TTL_S) -> None:
        if ttl_s is not None and ttl_s <= 0:
            raise ValueError("ttl_s must be positive (or None: keep forever)")
        self._redis = client
        self._prefix = prefix
        self._ttl_s = ttl_s

    def seen(self, effect_id: str) -> bool:
        with translated():
            return bool(self._redis.exists(self._prefix + effect_id))

    def claim(self, effect_id: str, owner: str, ttl_s: float) -> bool:
        _check(effect_id)
        with translated():
            taken = self._redis.set(self._claim_key(effect_id), owner.encode(), nx=True, px=max(1, int(ttl_s * 1000)))
            if taken:
                return True
            held = self._redis.get(self._claim_key(effect_id))
        return held is not None and (held.decode() if isinstance(held, bytes) else str(held)) == owner

    def release(self, effect_id: str, owner: str) -> None:
        with translated():
            self._redis.eval(_RELEASE, 1, self._claim_key(effect_id), owner)

    def _claim_key(self, effect_id: str) -> str:
        return f"{self._prefix}claim:{effect_id}"

    def record(self, effect_id: str) -> None:
        _check(effect_id)
        with translated():
            self._redis.set(self._prefix + effect_id, b"1", ex=self._ttl_s)

    def get(self, key: str) -> str | None:
        with translated():
            value = self._redis.get(f"{self._prefix}value:{key}")
        return None if value is None else (value.decode() if isinstance(value, bytes) else str(value))

    def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """``MGET`` in chunks; on a cluster each chunk's keys grouped by server (``mget_nonatomic``)."""
        out: list[str | None] = []
        get = self._redis.mget_nonatomic if isinstance(self._redis, RedisCluster) else self._redis.mget
        with translated():
            for start in range(0, len(keys), MGET_CHUNK):
                chunk = [f"{self._prefix}value:{key}" for key in keys[start : start + MGET_CHUNK]]
                out.extend(None if v is None else (v.decode() if isinstance(v, bytes) else str(v)) for v in get(chunk))
        return out

    def put(self, key: str, value: str) -> None:
        _check(key)
        with translated():
            self._redis.set(f"{self._prefix}value:{key}", value.encode(), ex=self._ttl_s)
