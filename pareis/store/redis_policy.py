"""The Redis eviction policy Pareis requires, checked when a role starts.

Every Redis key Pareis keeps is state that must not vanish: the lineage index (evicted entries silently shrink
blast radii under ``allkeys-*``), the run history, the incident store, the step journal and the effect ledger
(evicted first under ``volatile-*`` wherever a TTL is set). Redis evicts only when ``maxmemory`` is reached, but
Pareis cannot know when that will be, so it requires ``maxmemory-policy noeviction``: a full Redis then refuses
writes (``OOM command not allowed``), a loud failure the operator can act on, instead of a silent loss.
"""

from __future__ import annotations

import redis

from pareis.errors import Fatal
from pareis.store.redis_errors import translated

SAFE_POLICIES = frozenset({"noeviction"})


def require_noeviction(client: redis.Redis, where: str = "redis") -> str:
    """The server's ``maxmemory-policy`` when it is safe; :class:`~pareis.errors.Fatal` with a one-line reason
    otherwise, Retriable when Redis is unreachable. Reads ``INFO memory`` (``CONFIG GET`` is often disabled on
    managed Redis)."""
    with translated():
        info = client.info("memory")
    policy = info.get("maxmemory_policy")
    if isinstance(policy, bytes):
        policy = policy.decode()
    if policy is None:
        raise Fatal(f"{where} does not report its maxmemory-policy; Pareis requires noeviction")
    if policy not in SAFE_POLICIES:
        raise Fatal(
            f"{where} runs with maxmemory-policy {policy}: Pareis's state (lineage index, journal, ledger) must "
            "never be evicted; set maxmemory-policy noeviction"
        )
    return str(policy)
