"""The lineage index in Redis.

Layout (``P`` = prefix, default ``pareis:lineage:``):

* ``P o:<rel>:<src>`` hash ``dst → count``, ``P i:<rel>:<dst>`` hash ``src → count``: edges both ways, each with
  the number of (entity, aspect) records contributing it;
* ``P a:<entity>`` hash ``attr → value``;
* ``P r:<aspect>|<entity>`` hash ``v`` (version or ``""``), ``t`` (time ms), ``d`` (``1`` = tombstone), ``f``
  (the canonical facts JSON): the record that makes replacement a diff.

Each update runs as one Lua script (atomic: compare stamps, diff the old and new facts, move the counts, replace
the record); a batch of updates is one pipeline, a batch of lookups is one pipeline. The script touches keys
derived from its arguments, so this targets a single Redis server (not Redis Cluster).

Errors: connection errors, timeouts and a read-only (failing-over) server → :class:`~pareis.errors.Retriable`;
refused credentials and any other server error → :class:`~pareis.errors.Fatal`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import redis

from pareis.core.graph import Adjacency, Query
from pareis.errors import Fatal, Retriable
from pareis.store.lineage import Facts, LineageUpdate, Outcome, Record, Stamp

DEFAULT_PREFIX = "pareis:lineage:"

# Stamp comparison mirrors Stamp.older_than; diffing mirrors MemoryLineageStore._apply.
_APPLY = """
local p, entity, aspect = ARGV[1], ARGV[2], ARGV[3]
local nv, nt, nd, nf = ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7]
local rk = p .. 'r:' .. aspect .. '|' .. entity
local old = redis.call('HMGET', rk, 'v', 't', 'd', 'f')
if old[2] then
  local ov, ot, od, of = old[1], tonumber(old[2]), old[3], old[4]
  local older
  if od ~= '1' and ov ~= '' and nv ~= '' and tonumber(ov) ~= tonumber(nv) then
    older = tonumber(nv) < tonumber(ov)
  else
    older = nt < ot
  end
  if older then return 0 end
  if od == nd and of == nf then return 2 end
end
local function facts(text)
  if text == nil or text == false or text == '' then return {a = {}, e = {}} end
  return cjson.decode(text)
end
local before, after = facts(old[4]), facts(nf)
local function edge_set(f)
  local s = {}
  for _, e in ipairs(f.e) do s[e[1] .. '\\0' .. e[2] .. '\\0' .. e[3]] = e end
  return s
end
local function move(e, delta)
  local fk, rk2 = p .. 'o:' .. e[1] .. ':' .. e[2], p .. 'i:' .. e[1] .. ':' .. e[3]
  if redis.call('HINCRBY', fk, e[3], delta) <= 0 then redis.call('HDEL', fk, e[3]) end
  if redis.call('HINCRBY', rk2, e[2], delta) <= 0 then redis.call('HDEL', rk2, e[2]) end
end
local bs, as = edge_set(before), edge_set(after)
for k, e in pairs(bs) do if not as[k] then move(e, -1) end end
for k, e in pairs(as) do if not bs[k] then move(e, 1) end end
local ak = p .. 'a:' .. entity
local keep = {}
for _, kv in ipairs(after.a) do keep[kv[1]] = true end
for _, kv in ipairs(before.a) do
  if not keep[kv[1]] then redis.call('HDEL', ak, kv[1]) end
end
for _, kv in ipairs(after.a) do redis.call('HSET', ak, kv[1], kv[2]) end
redis.call('HSET', rk, 'v', nv, 't', ARGV[5], 'd', nd, 'f', nf)
return 1
"""

_OUTCOMES = {0: Outcome.STALE, 1: Outcome.APPLIED, 2: Outcome.UNCHANGED}


class RedisLineageStore:
    """:class:`~pareis.store.lineage.LineageStore` on a Redis client the caller builds and owns.

    Works with ``decode_responses`` on or off.
    """

    def __init__(self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._redis = client
        self._prefix = prefix
        self._script = client.register_script(_APPLY)

    def apply(self, updates: Sequence[LineageUpdate]) -> list[Outcome]:
        if not updates:
            return []
        with _translated():
            pipe = self._redis.pipeline(transaction=False)
            for u in updates:
                version = "" if u.stamp.version is None else str(u.stamp.version)
                deleted, facts = ("1", "") if u.facts is None else ("0", u.facts.encode())
                args = [self._prefix, u.entity, u.aspect, version, str(u.stamp.time_ms), deleted, facts]
                self._script(keys=[], args=args, client=pipe)
            results = pipe.execute()
        return [_OUTCOMES[int(r)] for r in results]

    def record(self, entity: str, aspect: str) -> Record | None:
        with _translated():
            raw = self._redis.hgetall(f"{self._prefix}r:{aspect}|{entity}")
        fields = {_text(k): _text(v) for k, v in raw.items()}
        if not fields:
            return None
        stamp = Stamp(int(fields["v"]) if fields["v"] else None, int(fields["t"]))
        return Record(stamp, None if fields["d"] == "1" else Facts.decode(fields["f"]))

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        plan = [(q, list(q.nodes)) for q in queries]
        with _translated():
            pipe = self._redis.pipeline(transaction=False)
            for q, nodes in plan:
                side = "i" if q.reverse else "o"
                for n in nodes:
                    pipe.hkeys(f"{self._prefix}{side}:{q.rel}:{n}")
            results = iter(pipe.execute())
        return [{n: frozenset(_text(k) for k in next(results)) for n in nodes} for _, nodes in plan]

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        ordered = list(nodes)
        with _translated():
            pipe = self._redis.pipeline(transaction=False)
            for n in ordered:
                pipe.hgetall(f"{self._prefix}a:{n}")
            results = pipe.execute()
        return {n: {_text(k): _text(v) for k, v in r.items()} for n, r in zip(ordered, results, strict=True)}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except redis.AuthenticationError as error:
        raise Fatal(f"redis refused the credentials: {error}") from error
    except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError) as error:
        raise Retriable(f"redis unavailable: {error}") from error
    except redis.RedisError as error:
        raise Fatal(f"redis error in the lineage store: {error}") from error
