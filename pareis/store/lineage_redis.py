"""The lineage index in Redis.

Layout (``P`` = prefix, default ``pareis:lineage:``; ``key(node)`` (:func:`key_of`) is the node's URN, a column's
with its prefix abbreviated as in a field, see below):

* ``P o:<rel>:key(src)`` hash ``field(dst) → count``, ``P i:<rel>:key(dst)`` hash ``field(src) → count``: edges both
  ways, each with the number of (entity, aspect) records contributing it. Exception: a ``has_column`` edge from a
  dataset to a column *of that dataset* (``urn:li:schemaField:(<dataset>,…)``, which is what ``schemaMetadata``
  states) has no reverse entry — the column's URN names its dataset, so a reverse lookup asks the forward hash
  (``HEXISTS``) of every dataset the URN can be split into. No walk reads that direction.
* ``P a:<entity>`` hash ``attr → value``;
* ``P r:<aspect>|<entity>`` string ``<version>\\n<time ms>\\n<d>\\n<facts>`` (``d`` = ``1`` for a tombstone;
  facts in the compact encoding of :func:`encode_facts`): the record that makes replacement a diff.

**Fields** (:func:`field_of` / :func:`node_of`) are node URNs written relative to the hash's own node, so that
hashes stay small enough for Redis's compact *listpack* encoding (``hash-max-listpack-value``, default 64 bytes,
bounds every field): ``\\x01<path>`` is the column ``urn:li:schemaField:(<key node>,<path>)``; a byte
``\\x02``–``\\x0c`` stands for a common URN prefix (:data:`FIELD_PREFIXES`); ``\\x00`` escapes a URN that
itself begins with a byte below ``\\x10``; anything else is the URN as is. A field longer than the server's
``hash-max-listpack-value`` (long real-world URNs) only turns its hash into the larger *hashtable* encoding; raise
that setting (e.g. to 128) to keep such hashes compact.

Each update runs as one Lua script (atomic: compare stamps, diff the old and new facts, move the counts, replace
the record); a batch of updates is one pipeline, a batch of lookups is one pipeline. The script touches keys
derived from its arguments, so this targets a single Redis server (not Redis Cluster).

Errors: connection errors, timeouts and a read-only (failing-over) server → :class:`~pareis.errors.Retriable`;
refused credentials and any other server error → :class:`~pareis.errors.Fatal`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import orjson
import redis

from pareis.core.fieldpath import COLUMN_PREFIX
from pareis.core.graph import Adjacency, Attr, Query, Rel
from pareis.store.lineage import AspectRecord, Edge, Facts, LineageUpdate, Outcome, Stamp
from pareis.store.redis_errors import translated

DEFAULT_PREFIX = "pareis:lineage:"

CHILD = "\x01"
"""Field marker: the column ``urn:li:schemaField:(<key node>,<rest>)``."""
ESCAPE = "\x00"
"""Field marker: the rest is the URN as is (it begins with a byte below ``\\x10``)."""
FIELD_PREFIXES: tuple[tuple[str, str], ...] = (
    ("\x02", "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:"),
    ("\x03", COLUMN_PREFIX),
    ("\x04", "urn:li:dataset:(urn:li:dataPlatform:"),
    ("\x05", "urn:li:mlFeature:("),
    ("\x06", "urn:li:mlModel:(urn:li:dataPlatform:"),
    ("\x07", "urn:li:mlModelGroup:(urn:li:dataPlatform:"),
    ("\x08", "urn:li:dataJob:(urn:li:dataFlow:("),
    ("\x09", "urn:li:dataProcessInstance:"),
    ("\x0b", "urn:li:assertion:"),
    ("\x0c", "urn:li:"),
)
"""(marker, URN prefix), tried in this order (a longer prefix before any prefix of it). Fixed: stored data
depends on it."""
_EXPANSIONS = {marker: prefix for marker, prefix in FIELD_PREFIXES}


def field_of(urn: str, node: str) -> str:
    """How ``urn`` is written as a field of a hash keyed by ``node`` (the inverse of :func:`node_of`)."""
    if urn.startswith(COLUMN_PREFIX) and urn.endswith(")") and urn.startswith(node + ",", len(COLUMN_PREFIX)):
        return CHILD + urn[len(COLUMN_PREFIX) + len(node) + 1 : -1]
    if urn and urn[0] < "\x10":
        return ESCAPE + urn
    for marker, prefix in FIELD_PREFIXES:
        if urn.startswith(prefix):
            return marker + urn[len(prefix) :]
    return urn


COLUMN_KEY_PREFIXES: tuple[tuple[str, str], ...] = FIELD_PREFIXES[:2]
"""The prefixes :func:`key_of` abbreviates: those of column URNs only (the bulk of the keys)."""


def key_of(node: str) -> str:
    """How ``node`` is spelled in the names of its edge hashes: a column URN with its prefix abbreviated as in a
    field (``\\x02`` / ``\\x03``), a URN beginning with a byte below ``\\x10`` escaped (``\\x00``), any other URN
    as is."""
    if node and node[0] < "\x10":
        return ESCAPE + node
    if node.startswith(COLUMN_PREFIX):
        for marker, prefix in COLUMN_KEY_PREFIXES:
            if node.startswith(prefix):
                return marker + node[len(prefix) :]
    return node


def node_of(field: str, node: str) -> str:
    """The URN a field of the hash keyed by ``node`` stands for (see :func:`field_of`)."""
    if not field or field[0] >= "\x10":
        return field
    marker, rest = field[0], field[1:]
    if marker == CHILD:
        return f"{COLUMN_PREFIX}{node},{rest})"
    if marker == ESCAPE:
        return rest
    return _EXPANSIONS[marker] + rest


def encode_facts(facts: Facts) -> str:
    """Compact canonical JSON of ``facts`` (equal facts ⇔ equal strings), the record's form in Redis.

    ``{"n": [node, …], "e": {rel: [src, dst, src, dst, …]}, "a": [name, value, …]}``: ``n`` lists every URN
    once — a column ``urn:li:schemaField:(<parent>,<path>)`` as ``[index of <parent>, <path>]`` (split at the
    last comma: a canonical column's path has none), its parent listed before it; edges are pairs of indexes into
    ``n`` under their relation; nodes in order of first use over the sorted edges; attributes sorted by name.
    """
    index: dict[str, int] = {}
    nodes: list[str | list[int | str]] = []
    by_rel: dict[Rel, list[int]] = {}
    start = len(COLUMN_PREFIX)
    for rel, src, dst in sorted(facts.edges):
        pairs = by_rel.get(rel)
        if pairs is None:
            pairs = by_rel[rel] = []
        for urn in (src, dst):
            at = index.get(urn)
            if at is None:
                comma = urn.rfind(",", start) if urn.startswith(COLUMN_PREFIX) and urn.endswith(")") else -1
                if comma >= 0:  # urn:li:schemaField:(<parent>,<path>): [index of parent, path]
                    parent = urn[start:comma]
                    parent_at = index.get(parent)
                    if parent_at is None:
                        parent_at = index[parent] = len(nodes)
                        nodes.append(parent)
                    nodes.append([parent_at, urn[comma + 1 : -1]])
                else:
                    nodes.append(urn)
                at = index[urn] = len(nodes) - 1
            pairs.append(at)
    attrs: list[str] = []
    for name, value in sorted((str(k), v) for k, v in facts.attrs.items()):
        attrs += (name, value)
    return orjson.dumps({"a": attrs, "e": {str(r): v for r, v in by_rel.items()}, "n": nodes}).decode()


def decode_facts(text: str | bytes) -> Facts:
    """The inverse of :func:`encode_facts`."""
    obj = orjson.loads(text)
    nodes: list[str] = []
    for entry in obj["n"]:
        nodes.append(entry if isinstance(entry, str) else f"{COLUMN_PREFIX}{nodes[entry[0]]},{entry[1]})")
    edges: set[Edge] = set()
    for rel, pairs in obj["e"].items():
        r = Rel(rel)
        edges.update((r, nodes[pairs[i]], nodes[pairs[i + 1]]) for i in range(0, len(pairs), 2))
    attrs = obj["a"]
    return Facts(frozenset(edges), {Attr(attrs[i]): attrs[i + 1] for i in range(0, len(attrs), 2)})


def _lua_string(text: str) -> str:
    return "'" + "".join(f"\\{b:03d}" for b in text.encode()) + "'"


# Stamp comparison mirrors Stamp.older_than; diffing mirrors MemoryLineageStore._apply; fields mirror field_of.
_APPLY = (
    """
local p, entity, aspect = ARGV[1], ARGV[2], ARGV[3]
local nv, nt, nd, nf = ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7]
local rk = p .. 'r:' .. aspect .. '|' .. entity
local raw = redis.call('GET', rk)
local of = ''
if raw then
  local ov, ot, od, rest = string.match(raw, '^([^\\n]*)\\n([^\\n]*)\\n([^\\n]*)\\n(.*)$')
  of = rest
  ot = tonumber(ot)
  local older
  if od ~= '1' and ov ~= '' and nv ~= '' and tonumber(ov) ~= tonumber(nv) then
    older = tonumber(nv) < tonumber(ov)
  else
    older = nt < ot
  end
  if older then return 0 end
  if od == nd and of == nf then return 2 end
end
local COL = """
    + _lua_string(COLUMN_PREFIX)
    + """
local PREFIXES = {"""
    + ", ".join(f"{{{_lua_string(m)}, {_lua_string(x)}}}" for m, x in FIELD_PREFIXES)
    + """}
local function field(u, node)
  local head = #COL + #node + 1
  if string.sub(u, -1) == ')' and string.sub(u, 1, head) == COL .. node .. ',' then
    return '\\001' .. string.sub(u, head + 1, -2)
  end
  if #u > 0 and string.byte(u, 1) < 16 then return '\\000' .. u end
  for _, mp in ipairs(PREFIXES) do
    if string.sub(u, 1, #mp[2]) == mp[2] then return mp[1] .. string.sub(u, #mp[2] + 1) end
  end
  return u
end
local function knode(u)
  if #u > 0 and string.byte(u, 1) < 16 then return '\\000' .. u end
  if string.sub(u, 1, #COL) == COL then
    for i = 1, 2 do
      local mp = PREFIXES[i]
      if string.sub(u, 1, #mp[2]) == mp[2] then return mp[1] .. string.sub(u, #mp[2] + 1) end
    end
  end
  return u
end
local function facts(text)
  if text == nil or text == false or text == '' then return {}, {} end
  local f = cjson.decode(text)
  local nodes = {}
  for i, n in ipairs(f.n) do
    if type(n) == 'table' then nodes[i] = COL .. nodes[n[1] + 1] .. ',' .. n[2] .. ')' else nodes[i] = n end
  end
  local edges = {}
  for rel, pairs_ in pairs(f.e) do
    for i = 1, #pairs_, 2 do
      local s, d = nodes[pairs_[i] + 1], nodes[pairs_[i + 1] + 1]
      edges[rel .. '\\0' .. s .. '\\0' .. d] = {rel, s, d}
    end
  end
  local attrs = {}
  for i = 1, #f.a, 2 do attrs[f.a[i]] = f.a[i + 1] end
  return edges, attrs
end
local function move(e, delta)
  local rel, s, d = e[1], e[2], e[3]
  local fk, ff = p .. 'o:' .. rel .. ':' .. knode(s), field(d, s)
  if redis.call('HINCRBY', fk, ff, delta) <= 0 then redis.call('HDEL', fk, ff) end
  if rel == 'has_column' and string.byte(ff, 1) == 1 then return end
  local bk, bf = p .. 'i:' .. rel .. ':' .. knode(d), field(s, d)
  if redis.call('HINCRBY', bk, bf, delta) <= 0 then redis.call('HDEL', bk, bf) end
end
local be, ba = facts(of)
local ae, aa = facts(nf)
for k, e in pairs(be) do if not ae[k] then move(e, -1) end end
for k, e in pairs(ae) do if not be[k] then move(e, 1) end end
local ak = p .. 'a:' .. entity
for name, _ in pairs(ba) do
  if aa[name] == nil then redis.call('HDEL', ak, name) end
end
for name, value in pairs(aa) do redis.call('HSET', ak, name, value) end
redis.call('SET', rk, nv .. '\\n' .. ARGV[5] .. '\\n' .. nd .. '\\n' .. nf)
return 1
"""
)

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
        with translated():
            pipe = self._redis.pipeline(transaction=False)
            for u in updates:
                version = "" if u.stamp.version is None else str(u.stamp.version)
                deleted, facts = ("1", "") if u.facts is None else ("0", encode_facts(u.facts))
                args = [self._prefix, u.entity, u.aspect, version, str(u.stamp.time_ms), deleted, facts]
                self._script(keys=[], args=args, client=pipe)
            results = pipe.execute()
        return [_OUTCOMES[int(r)] for r in results]

    def record(self, entity: str, aspect: str) -> AspectRecord | None:
        with translated():
            raw = self._redis.get(f"{self._prefix}r:{aspect}|{entity}")
        if raw is None:
            return None
        version, time, deleted, facts = _text(raw).split("\n", 3)
        stamp = Stamp(int(version) if version else None, int(time))
        return AspectRecord(stamp, None if deleted == "1" else decode_facts(facts))

    def entities(self, aspect: str) -> list[str]:
        """``SCAN`` over the records of ``aspect``, then the head of each (version, time, tombstone flag) in one
        pipeline per page, so that a deleted record is not listed and no facts are transferred."""
        head = f"{self._prefix}r:{aspect}|"
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in head) + "*"
        found: list[str] = []
        with translated():
            cursor: int | str = 0
            while True:
                cursor, keys = self._redis.scan(cursor=int(cursor), match=pattern, count=1000)
                if keys:
                    pipe = self._redis.pipeline(transaction=False)
                    for key in keys:
                        pipe.getrange(key, 0, 63)
                    for key, start in zip(keys, pipe.execute(), strict=True):
                        fields = _text(start).split("\n", 3)
                        if len(fields) >= 3 and fields[2] != "1":
                            found.append(_text(key)[len(head) :])
                if int(cursor) == 0:
                    break
        return sorted(set(found))

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        """One pipeline for the whole batch: ``HKEYS`` per (relation, node), and for a reverse ``has_column``
        query on a column also ``HEXISTS`` in the forward hash of each dataset its URN may name."""
        plan = [(q, list(q.nodes)) for q in queries]
        p = self._prefix
        with translated():
            pipe = self._redis.pipeline(transaction=False)
            for q, nodes in plan:
                side = "i" if q.reverse else "o"
                schema = q.reverse and q.rel == Rel.HAS_COLUMN
                for n in nodes:
                    pipe.hkeys(f"{p}{side}:{q.rel}:{key_of(n)}")
                    if schema:
                        for parent, rest in _spellings(n):
                            pipe.hexists(f"{p}o:{Rel.HAS_COLUMN}:{key_of(parent)}", CHILD + rest)
            results = iter(pipe.execute())
            out: list[Adjacency] = []
            for q, nodes in plan:
                schema = q.reverse and q.rel == Rel.HAS_COLUMN
                answer: dict[str, frozenset[str]] = {}
                for n in nodes:
                    found = {node_of(_text(k), n) for k in next(results)}
                    if schema:
                        found.update(parent for parent, _ in _spellings(n) if next(results))
                    answer[n] = frozenset(found)
                out.append(answer)
        return out

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        ordered = list(nodes)
        with translated():
            pipe = self._redis.pipeline(transaction=False)
            for n in ordered:
                pipe.hgetall(f"{self._prefix}a:{n}")
            results = pipe.execute()
        return {n: {_text(k): _text(v) for k, v in r.items()} for n, r in zip(ordered, results, strict=True)}


def _spellings(column: str) -> list[tuple[str, str]]:
    """Every (dataset, rest) with ``column == urn:li:schemaField:(<dataset>,<rest>)``: where a child-of-the-key
    ``has_column`` field for it may be."""
    if not (column.startswith(COLUMN_PREFIX) and column.endswith(")")):
        return []
    inner = column[len(COLUMN_PREFIX) : -1]
    return [(inner[:i], inner[i + 1 :]) for i, c in enumerate(inner) if c == ","]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
