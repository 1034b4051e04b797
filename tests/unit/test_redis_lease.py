"""The per-session Redis database lease (:mod:`tests.support.redis_lease`), over a fake registry."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import redis_lease


class Registry:
    """The three commands a lease needs, on a dict (expiry is Redis's; not modelled)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.ttls: dict[str, int] = {}

    def set(self, key: str, value: str, *, nx: bool = False, ex: int | None = None) -> bool | None:
        if nx and key in self.data:
            return None
        self.data[key] = value.encode()
        if ex is not None:
            self.ttls[key] = ex
        return True

    def get(self, key: str) -> bytes | None:
        return self.data.get(key)

    def delete(self, key: str) -> Any:
        return self.data.pop(key, None)


def test_two_sessions_get_different_databases_and_one_gets_its_own_back() -> None:
    registry = Registry()
    first = redis_lease.claim(registry, "a")
    second = redis_lease.claim(registry, "b")
    assert (first, second) == (15, 14)
    assert redis_lease.claim(registry, "a") == 15, "claiming again finds the session's own lease"
    assert registry.ttls[f"{redis_lease.LEASE_PREFIX}15"] == redis_lease.LEASE_TTL_S, "a crashed run's lease expires"


def test_a_released_database_is_free_again_but_only_its_holder_releases_it() -> None:
    registry = Registry()
    db = redis_lease.claim(registry, "a")
    redis_lease.release(registry, "b", db)
    assert redis_lease.claim(registry, "c") != db, "b could not release a's lease"
    redis_lease.release(registry, "a", db)
    assert redis_lease.claim(registry, "d") == db


def test_a_full_pool_is_an_error_naming_it() -> None:
    registry = Registry()
    for session in ("a", "b"):
        redis_lease.claim(registry, session, pool=(3, 4))
    with pytest.raises(redis_lease.NoFreeDatabase, match=r"\[3, 4\]"):
        redis_lease.claim(registry, "c", pool=(3, 4))


def test_the_registry_is_outside_the_pool() -> None:
    assert redis_lease.REGISTRY_DB not in redis_lease.POOL
