"""The incident store in Redis: one hash of states and one set of the ACTIVE dataset keys.

Keys (one hash tag, so the transaction that writes both stays on one Redis Cluster slot)::

    <prefix>{incidents}:state    HASH  field = dataset key, value = state JSON (sorted keys)
    <prefix>{incidents}:active   SET   dataset keys whose state is ACTIVE
"""

from __future__ import annotations

from collections.abc import Iterable

from pareis.core.lifecycle import IncidentState, Status
from pareis.errors import Fatal
from pareis.store.incidents import decode, encode
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import AnyRedis

DEFAULT_PREFIX = "pareis:"


class RedisIncidentStore:
    """:class:`~pareis.store.incidents.IncidentStore` on a Redis client the caller builds and owns."""

    def __init__(self, client: AnyRedis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._redis = client
        self._states = f"{prefix}{{incidents}}:state"
        self._active = f"{prefix}{{incidents}}:active"

    def get(self, dataset: str) -> IncidentState:
        with translated():
            text = self._redis.hget(self._states, dataset)
        return IncidentState(dataset) if text is None else decode(dataset, reply_text(text))

    def put(self, state: IncidentState) -> None:
        self.put_many([state])

    def put_many(self, states: Iterable[IncidentState]) -> None:
        """One MULTI/EXEC: the states and the active set change together."""
        pipe = self._redis.pipeline(transaction=True)
        for state in states:
            pipe.hset(self._states, state.dataset, encode(state))
            if state.status is Status.ACTIVE:
                pipe.sadd(self._active, state.dataset)
            else:
                pipe.srem(self._active, state.dataset)
        if not len(pipe):
            return
        with translated():
            pipe.execute()

    def get_many(self, datasets: Iterable[str]) -> dict[str, IncidentState]:
        names = sorted(set(datasets))
        if not names:
            return {}
        with translated():
            texts = self._redis.hmget(self._states, names)
        return {
            d: IncidentState(d) if t is None else decode(d, reply_text(t)) for d, t in zip(names, texts, strict=True)
        }

    def active(self) -> list[IncidentState]:
        with translated():
            datasets = sorted(reply_text(d) for d in self._redis.smembers(self._active))
            texts = self._redis.hmget(self._states, datasets) if datasets else []
        states = []
        for dataset, text in zip(datasets, texts, strict=True):
            if text is None:
                raise Fatal(f"{dataset} is listed as active in {self._active} but has no state")
            state = decode(dataset, reply_text(text))
            if state.status is Status.ACTIVE:
                states.append(state)
        return states
