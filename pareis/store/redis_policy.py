"""What Pareis requires of its Redis, checked when a role starts (:func:`require_sound`), each refusal one line.

* **The mode the URL names.** A ``redis://`` URL naming a Redis Cluster node would read and write only the slots that
  node serves (the rest answer ``MOVED``): refused, naming ``redis+cluster://``. A cluster URL naming a standalone
  server is refused where the client is built (:func:`pareis.store.redis_errors.from_redis`).
* **Every slot served** (a cluster): a cluster with slots no primary serves (``cluster_state:fail``) answers for part
  of the index only.
* **No eviction**, on every node. Every Redis key Pareis keeps is state that must not vanish: the lineage index
  (evicted entries silently shrink blast radii under ``allkeys-*``), the run history, the incident store, the step
  journal and the effect ledger (evicted first under ``volatile-*`` wherever a TTL is set). Redis evicts only when
  ``maxmemory`` is reached, but Pareis cannot know when that will be, so it requires ``maxmemory-policy
  noeviction``: a full Redis then refuses writes (``OOM command not allowed``), a loud failure the operator can act
  on, instead of a silent loss.
* **Persistence**, on every node, where ``redis.require_persistence`` asks for it: an append-only file
  (``appendonly yes``; ``appendfsync everysec`` loses at most a second, which the roles redo from their uncommitted
  input). Without one, a restart empties the index (detected, :mod:`pareis.store.redis_epoch`, but then rebuilt).

Replicas are checked too: a failover makes one the primary. ``INFO`` is read, not ``CONFIG GET`` (often disabled on
managed Redis).
"""

from __future__ import annotations

from typing import Any

from redis.cluster import RedisCluster

from pareis.errors import Fatal
from pareis.store.redis_errors import text, translated
from pareis.store.redis_servers import SLOTS, AnyRedis, Servers

SAFE_POLICIES = frozenset({"noeviction"})


def require_sound(client: AnyRedis, where: str = "redis", *, require_persistence: bool = False) -> None:
    """Every requirement above, on every node of ``client``'s Redis; :class:`~pareis.errors.Fatal` with a one-line
    reason naming ``where`` (the URL without password) and the node, Retriable when Redis is unreachable."""
    servers = Servers(client)
    with translated():
        if isinstance(client, RedisCluster):
            _require_every_slot(client, where)
        for node, server in servers.nodes():
            info = server.info()
            name = where if not servers.cluster else f"{where} (node {node})"
            if not servers.cluster and str(info.get("cluster_enabled", 0)) == "1":
                raise Fatal(
                    f"{where} is a Redis Cluster node: name the cluster with a redis+cluster:// (or rediss+cluster://) "
                    "URL, or Pareis would see only the slots this node serves"
                )
            _require_noeviction(info, name)
            if require_persistence and str(info.get("aof_enabled", 0)) != "1":
                raise Fatal(
                    f"{name} keeps no append-only file (appendonly no) while redis.require_persistence is set: a "
                    "restart would empty Pareis's state; run it with appendonly yes, appendfsync everysec"
                )


def require_noeviction(client: AnyRedis, where: str = "redis") -> str:
    """The ``maxmemory-policy`` of every node when it is safe; :class:`~pareis.errors.Fatal` with a one-line reason
    otherwise, Retriable when Redis is unreachable."""
    servers = Servers(client)
    found = ""
    with translated():
        for node, server in servers.nodes():
            found = _require_noeviction(server.info("memory"), where if not servers.cluster else f"{where} ({node})")
    return found


def _require_noeviction(info: dict[str, Any], where: str) -> str:
    policy = info.get("maxmemory_policy")
    if policy is None:
        raise Fatal(f"{where} does not report its maxmemory-policy; Pareis requires noeviction")
    policy = text(policy)
    if policy not in SAFE_POLICIES:
        raise Fatal(
            f"{where} runs with maxmemory-policy {policy}: Pareis's state (lineage index, journal, ledger) must "
            "never be evicted; set maxmemory-policy noeviction"
        )
    return policy


def _require_every_slot(client: RedisCluster, where: str) -> None:
    for node in client.get_primaries():
        info = client.get_redis_connection(node).cluster("info")
        assigned = int(info.get("cluster_slots_assigned", 0))
        state = text(info.get("cluster_state", "?"))
        if state != "ok" or assigned < SLOTS:
            raise Fatal(
                f"{where}: the cluster serves {assigned} of {SLOTS} slots (cluster_state {state}, seen from "
                f"{node.name}): part of Pareis's state would be out of reach; fix the cluster (redis-cli --cluster "
                "check / fix)"
            )
