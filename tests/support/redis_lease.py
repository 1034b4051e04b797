"""A Redis database per test session, so that two test runs on one machine never flush each other's data.

A session that is not told which database to use (``PAREIS_TEST_REDIS_URL`` names none) *claims* one of
:data:`POOL` by taking its lease, ``SET pareis-test:lease:<db> <session> NX EX`` in the registry database
(:data:`REGISTRY_DB`, outside the pool, so the claimed database itself stays empty for the tests): the first
free one wins, atomically. The session deletes its lease at its end; a run that crashed leaves its lease to expire
after :data:`LEASE_TTL_S`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

LEASE_PREFIX = "pareis-test:lease:"
REGISTRY_DB = 0
POOL: tuple[int, ...] = tuple(range(15, 7, -1))
"""Databases a session may claim, 15 first (the fixtures' only database before leases)."""
LEASE_TTL_S = 6 * 3600


class NoFreeDatabase(RuntimeError):
    """Every database of the pool is leased by another session."""


def claim(registry: Any, session: str, pool: Sequence[int] = POOL) -> int:
    """The first database of ``pool`` whose lease ``session`` took (or already holds), through ``registry`` (a
    client on :data:`REGISTRY_DB`); :class:`NoFreeDatabase` when every one is held by another session."""
    for db in pool:
        key = f"{LEASE_PREFIX}{db}"
        if registry.set(key, session, nx=True, ex=LEASE_TTL_S) or _holder(registry, key) == session:
            return db
    raise NoFreeDatabase(f"Redis databases {list(pool)} are all leased by other test sessions ({LEASE_PREFIX}*)")


def release(registry: Any, session: str, db: int) -> None:
    """Give database ``db`` back, if ``session`` still holds it."""
    key = f"{LEASE_PREFIX}{db}"
    if _holder(registry, key) == session:
        registry.delete(key)


def _holder(registry: Any, key: str) -> str | None:
    held = registry.get(key)
    return held.decode() if isinstance(held, bytes) else held
