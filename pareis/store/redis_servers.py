"""The Redis servers behind a store's client: one standalone server (``redis.Redis``), or the primaries of a Redis
Cluster (``redis.cluster.RedisCluster``) — what the stores need to know of the difference, in one place.

On a cluster every key lives in one of 16,384 slots, served by one primary (:func:`slot_of`; a key's *hash tag*,
the text between its first ``{`` and the next ``}``, decides the slot, so keys sharing a tag share a slot). A
command, a ``MULTI``/``EXEC`` or a script may only name keys of one slot. Single-key commands and redis-py's cluster
pipelines are routed by redis-py; :class:`Servers` adds what the lineage store's packed round trips need:

* :meth:`Servers.exchange` — commands, each routed by a slot the caller names, sent packed to their primaries (one
  socket write per server, every server answering in parallel) and the replies returned in order. On a standalone
  server the slots are ignored. A server that lost a script (restart, failover: ``NOSCRIPT``) is sent the scripts
  it lacks and the exchange redone; a slot moved (``MOVED``, ``ASK``, ``TRYAGAIN``, ``CLUSTERDOWN``) or a primary gone
  refreshes the slot map and redoes it: every command sent this way must be idempotent. Past
  :data:`ATTEMPTS` the error is raised (callers translate it, :mod:`pareis.store.redis_errors`).
* :meth:`Servers.primaries` / :meth:`Servers.nodes` — a client per primary (per node, replicas included): what
  ``WAIT``, the epoch and the policy checks are asked of.

Scripts are sent by ``EVALSHA`` of their SHA1 (:func:`sha_of`); every script declares every key it touches in
``KEYS``, all of one slot.
"""

from __future__ import annotations

import hashlib
from binascii import crc_hqx
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import redis
from hiredis import pack_command
from redis.cluster import RedisCluster

AnyRedis = redis.Redis | RedisCluster
SLOTS = 16384
ATTEMPTS = 3
"""Tries of one :meth:`Servers.exchange` when a script is missing or a slot moved (each after the cause is fixed:
the script loaded, the slot map refreshed)."""

_MOVING = (redis.exceptions.AskError, redis.exceptions.TryAgainError, redis.exceptions.ClusterDownError)
"""Replies that say the slot map changed (MOVED is an AskError) or is changing."""


def slot_of(tag: str) -> int:
    """The cluster slot of a key ``…{<tag>}…`` (the hash tag ends at the tag's own first ``}``, as Redis reads it;
    ``tag`` must not begin with one)."""
    end = tag.find("}")
    return crc_hqx((tag if end < 0 else tag[:end]).encode(), 0) % SLOTS


def key_slot(key: str | bytes) -> int:
    """The cluster slot of ``key``, its hash tag found as Redis does."""
    raw = key.encode() if isinstance(key, str) else key
    start = raw.find(b"{")
    if start >= 0:
        end = raw.find(b"}", start + 1)
        if end > start + 1:
            raw = raw[start + 1 : end]
    return crc_hqx(raw, 0) % SLOTS


def sha_of(script: str) -> str:
    """The SHA1 Redis names ``script`` by."""
    return hashlib.sha1(script.encode()).hexdigest()


def is_cluster(client: AnyRedis) -> bool:
    return isinstance(client, RedisCluster)


class Servers:
    """The servers of ``client``; see the module docstring. ``scripts`` (SHA1 → source) are what
    :meth:`exchange` may need to load on a server."""

    def __init__(self, client: AnyRedis, scripts: Mapping[str, str] = {}) -> None:
        self.client = client
        self.cluster = isinstance(client, RedisCluster)
        self._scripts = dict(scripts)

    def primaries(self) -> list[redis.Redis]:
        """A client per primary (the standalone client itself)."""
        if not isinstance(self.client, RedisCluster):
            return [self.client]
        return [self.client.get_redis_connection(n) for n in self.client.get_primaries()]

    def nodes(self) -> list[tuple[str, redis.Redis]]:
        """(``host:port``, client) of every node, replicas included (the standalone server alone)."""
        if not isinstance(self.client, RedisCluster):
            kwargs = self.client.connection_pool.connection_kwargs
            where = kwargs.get("path") or f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
            return [(str(where), self.client)]
        return [(n.name, self.client.get_redis_connection(n)) for n in self.client.get_nodes()]

    def refresh(self) -> None:
        """Read the cluster's slot map again (after a failover or a resharding); nothing on a standalone server."""
        if isinstance(self.client, RedisCluster):
            self.client.nodes_manager.initialize()

    def exchange(self, commands: Sequence[tuple[Any, ...]], slots: Sequence[int] | None = None) -> list[Any]:
        """The replies to ``commands`` (each sent to the primary of its slot in ``slots``, which a standalone
        server ignores), in order; see the module docstring. The first error reply is raised once every reply is
        read."""
        if not commands:
            return []
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return self._exchange(commands, slots)
            except redis.exceptions.NoScriptError:
                if attempt == ATTEMPTS:
                    raise
                self._load_scripts()
            except (*_MOVING, redis.ConnectionError, redis.exceptions.SlotNotCoveredError):
                if attempt == ATTEMPTS or not self.cluster:
                    raise
                self.refresh()
        raise AssertionError("unreachable")

    def open_stream(self) -> Stream:
        """A :class:`Stream` on these servers."""
        return Stream(self)

    def _exchange(self, commands: Sequence[tuple[Any, ...]], slots: Sequence[int] | None) -> list[Any]:
        return _round_trips(self.routed(len(commands), slots), commands)

    def routed(self, count: int, slots: Sequence[int] | None, start: int = 0) -> list[tuple[Any, list[int]]]:
        """(client, indexes) per server of ``count`` commands numbered from ``start``, routed by ``slots``."""
        if not isinstance(self.client, RedisCluster):
            return [(self.client, list(range(start, start + count)))]
        assert slots is not None and len(slots) == count, "a cluster exchange routes every command by slot"
        cache = self.client.nodes_manager.slots_cache
        by_node: dict[str, tuple[Any, list[int]]] = {}
        seen: dict[int, str] = {}
        for i, slot in enumerate(slots, start):
            name = seen.get(slot)
            if name is None:
                owners = cache.get(slot)
                if not owners:
                    raise redis.exceptions.SlotNotCoveredError(f"slot {slot} is not served by any node of the cluster")
                node = owners[0]
                name = seen[slot] = node.name
                if name not in by_node:
                    by_node[name] = (self.client.get_redis_connection(node), [])
            by_node[name][1].append(i)
        return list(by_node.values())

    def _load_scripts(self) -> None:
        for client in self.primaries():
            for source in self._scripts.values():
                client.script_load(source)


def _round_trips(targets: list[tuple[Any, list[int]]], commands: Sequence[tuple[Any, ...]]) -> list[Any]:
    """Send each target's commands (by index into ``commands``) packed on one connection of its pool, every target
    before reading any reply, then read the replies in order (what a pipeline does, without its per-command
    bookkeeping: a large blast's walk is ~150,000 commands). The first error reply is raised once every reply of
    every target is read; a connection that failed is never handed out again."""
    replies: list[Any] = [None] * len(commands)
    error: redis.ResponseError | None = None
    taken: list[tuple[Any, Any, list[int]]] = []
    try:
        for client, indexes in targets:
            pool = client.connection_pool
            conn = pool.get_connection()
            taken.append((pool, conn, indexes))
            # hiredis's packer called directly: redis-py's pack_commands wraps it in per-argument checks that cost
            # more than the packing (a burst's surveys send ~80,000 commands).
            conn.send_packed_command([b"".join([pack_command(commands[i]) for i in indexes])])
        for _pool, conn, indexes in taken:
            for i in indexes:
                try:
                    replies[i] = conn.read_response()
                except redis.ResponseError as e:
                    error = error or e
    except BaseException:
        for _pool, conn, _ in taken:
            conn.disconnect()  # replies may be left unread: never hand these sockets out again
        raise
    finally:
        for pool, conn, _ in taken:
            pool.release(conn)
    if error is not None:
        raise error
    return replies


class Stream:
    """Batches of commands sent as they come (:meth:`send`, each command to its slot's server, no reply awaited),
    their replies read later, batch by batch (:meth:`read`: in order; an error reply comes back as the exception, not
    raised), so that the servers work while the caller prepares the next batch. A connection is held per server
    until every reply is read (:meth:`close`); any failure disconnects them all (replies may be left unread)."""

    def __init__(self, servers: Servers) -> None:
        self._servers = servers
        self._held: dict[int, tuple[Any, Any, deque[tuple[int, int]]]] = {}
        self._replies: dict[int, list[Any]] = {}
        self._batches = 0

    def send(self, commands: Sequence[tuple[Any, ...]], slots: Sequence[int] | None = None) -> int:
        """Send ``commands``; the batch's number, for :meth:`read`."""
        batch = self._batches
        self._batches += 1
        self._replies[batch] = [None] * len(commands)
        try:
            for client, indexes in self._servers.routed(len(commands), slots):
                held = self._held.get(id(client))
                if held is None:
                    pool = client.connection_pool
                    held = self._held[id(client)] = (pool, pool.get_connection(), deque())
                held[1].send_packed_command([b"".join([pack_command(commands[i]) for i in indexes])])
                held[2].extend((batch, i) for i in indexes)
        except BaseException:
            self._drop()
            raise
        return batch

    def read(self, batch: int) -> list[Any]:
        """The replies of ``batch``, in order (the replies of earlier batches on the way are kept for them)."""
        self._read_up_to(batch)
        return self._replies.pop(batch)

    def close(self) -> None:
        """Read what is left unread and let the connections go."""
        self._read_up_to(self._batches)
        self._replies.clear()
        for pool, conn, _ in self._held.values():
            pool.release(conn)
        self._held.clear()

    def _read_up_to(self, batch: int) -> None:
        try:
            for _pool, conn, expected in self._held.values():
                while expected and expected[0][0] <= batch:
                    b, i = expected.popleft()
                    try:
                        self._replies[b][i] = conn.read_response()
                    except redis.ResponseError as e:
                        self._replies[b][i] = e
        except BaseException:
            self._drop()
            raise

    def abort(self) -> None:
        """Disconnect (replies may be left unread: these sockets are never handed out again)."""
        self._drop()

    def _drop(self) -> None:
        for pool, conn, _ in self._held.values():
            conn.disconnect()
            pool.release(conn)
        self._held.clear()
