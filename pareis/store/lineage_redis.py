"""The lineage index in Redis.

Layout 2 (``P`` = prefix, default ``pareis:lineage:``; ``key(node)`` (:func:`key_of`) is the node's URN, a column's
with its prefix abbreviated as in a field, see below):

* ``P layout`` string ``2`` (:data:`LAYOUT`): checked on the store's first call; an index without it (layout 1,
  which kept one hash per column) or with another value is refused (:class:`~pareis.errors.Fatal`, one line).
  **Migration**: there is no reader for layout 1 — delete the old keys (``redis-cli --scan --pattern
  'pareis:lineage:*' | xargs redis-cli del``) and rebuild the index, with ``pareis bootstrap`` (from DataHub or
  files) or by replaying the change log to the lineage role (reset its consumer group to the earliest offsets).
* A **column** ``urn:li:schemaField:(<parent>,<path>)`` (split at its last comma, :func:`bucket_of`) keeps its edges
  in its parent's *bucket*: ``P oc:<rel>:key(parent)`` / ``P ic:<rel>:key(parent)``, hash ``path → neighbours``, the
  neighbours as fields relative to the parent, each ended by ``\\x1e`` and followed by ``\\x1f<count>`` when
  more than one record contributes the edge (``\\x1d``, ``\\x1e``, ``\\x1f`` inside a field are escaped as
  ``\\x1d`` + ``\\x01``/``\\x02``/``\\x03``). A dataset pair's 22 column edges are then two hashes, not 44.
* **Any other node**: ``P o:<rel>:key(src)`` hash ``field(dst) → count``, ``P i:<rel>:key(dst)`` hash
  ``field(src) → count``: edges both ways, each with the number of (entity, aspect) records contributing it.
  Exception: a ``has_column`` edge from a (non-column) node to a column *of that node* (``urn:li:schemaField:
  (<dataset>,…)``, which is what ``schemaMetadata`` states) has no reverse entry — the column's URN names its
  dataset, so a reverse lookup asks the forward hash (``HEXISTS``) of every dataset the URN can be split into. No
  walk reads that direction.
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

Each update runs as one Lua script (:mod:`pareis.store.lineage_redis_script`; atomic: compare stamps, diff the old
and new facts, move the counts, replace the record); a batch of updates is one pipeline, a batch of lookups is
one round trip (a column bucket's fields by one ``HMGET`` per frontier, other nodes' hashes by a read-only script,
``HKEYS`` of up to 1,000 keys per call; schemas' outlines by another, which sends a flat schema's size instead of its
fields, :meth:`RedisLineageStore.outlines`). The scripts touch keys derived from their arguments, so this targets a
single Redis server (not Redis Cluster).

Errors: connection errors, timeouts and a read-only (failing-over) server → :class:`~pareis.errors.Retriable`;
refused credentials and any other server error → :class:`~pareis.errors.Fatal`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import redis
from hiredis import pack_command

from pareis.core.fieldpath import COLUMN_PREFIX, own_head
from pareis.core.graph import Adjacency, Attr, Outline, Query, Rel, outline_of
from pareis.errors import Fatal
from pareis.store.lineage import AspectRecord, LineageUpdate, Outcome, Stamp
from pareis.store.lineage_redis_encoding import (
    CHILD,
    FIELD_PREFIXES,
    bucket_entries,
    bucket_nodes,
    bucket_of,
    decode_facts,
    encode_facts,
    field_nodes,
    field_of,
    key_of,
    node_of,
)
from pareis.store.lineage_redis_script import apply_script
from pareis.store.lineage_redis_stream import ApplyStream
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated

__all__ = [
    "FIELD_PREFIXES",
    "RedisLineageStore",
    "bucket_entries",
    "bucket_of",
    "decode_facts",
    "encode_facts",
    "field_of",
    "key_of",
    "node_of",
]

DEFAULT_PREFIX = "pareis:lineage:"
_APPLY = apply_script(FIELD_PREFIXES)

_READ = """
local out = {}
for i = 1, #KEYS do
  out[i] = redis.call(ARGV[1], KEYS[i], unpack(ARGV, 2))
end
return out
"""
"""The read script: ``ARGV[1]`` (``HKEYS``, ``HGETALL``, or ``HGET`` of the field ``ARGV[2]``) of each key: an empty
list for a missing key (a nil for ``HGET``). Writes nothing."""

_OUTLINE = """
local find, concat = string.find, table.concat
local out = {}
for i = 1, #KEYS do
  local f = redis.call('HKEYS', KEYS[i])
  if #f > 0 then
    local j = '\\n' .. concat(f, '\\n') .. '\\n'
    if not (find(j, '\\n[^\\001]') or find(j, '\\001\\n', 1, true) or find(j, '[%.%%%[]')) then
      f = #f
    end
  end
  out[i] = f
end
return out
"""
"""The outline script (:meth:`RedisLineageStore.outlines`): for each schema hash (``o:has_column:<dataset>``), its
size when it is certainly flat (:func:`~pareis.core.fieldpath.is_flat`) — every field a child of the key
(``\\x01<path>``) with a non-empty path holding none of ``.``, ``%`` and ``[`` (a dot, an encoded character, perhaps
a v2 path), checked on the fields joined, in C — else its fields, for the client to decide (so also when a bracket or
a field's own newline makes the check unsure). Writes nothing."""
READ_CHUNK = 1000
"""Keys per ``EVALSHA`` of a read-only script (the server runs each script alone: a chunk keeps that short)."""

_NONE: frozenset[str] = frozenset()
_Row = tuple[str, str | None, int, int, list[tuple[str, int]] | None]
"""A queried node in :meth:`RedisLineageStore.lookup`'s plan: (node, its bucket's parent or None, reply index,
position in the reply (of the read script's when not a column), its ``HEXISTS`` replies)."""

LAYOUT = "2"
"""The layout this module reads and writes, stored at ``P layout``. Layout 1 (before the column buckets) wrote no
such key."""


class RedisLineageStore:
    """:class:`~pareis.store.lineage.LineageStore` on a Redis client the caller builds and owns.

    Works with ``decode_responses`` on or off. The first call checks the layout key (one ``GET``): an index of
    another layout is refused with :class:`~pareis.errors.Fatal` (rebuild it, see the module docstring).
    """

    def __init__(self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._redis = client
        self._prefix = prefix
        self._sha: str | None = None
        self._read_shas: dict[str, str] = {}
        self._checked = False
        self._stamped = False

    def _check_layout(self) -> None:
        """Refuse an index written in another layout; remember whether the layout key is there yet."""
        if self._checked:
            return
        key = f"{self._prefix}layout"
        found = self._redis.get(key)
        if found is None:
            head = "".join("\\" + c if c in "*?[]\\" else c for c in self._prefix) + "*"
            for _ in self._redis.scan_iter(match=head, count=1000):
                raise Fatal(_refusal(self._prefix, "1 (no layout key)"))
        elif reply_text(found) != LAYOUT:
            raise Fatal(_refusal(self._prefix, reply_text(found)))
        else:
            self._stamped = True
        self._checked = True

    def apply(self, updates: Sequence[LineageUpdate]) -> list[Outcome]:
        """One ``EVALSHA`` per update on one connection, streamed (:meth:`stream`): the batch is sent in chunks as
        it is encoded, so the server applies the first updates while the rest are being encoded, and the replies
        are read once all is sent (one round trip's wait for the batch)."""
        if not updates:
            return []
        stream = self.stream()
        stream.send(updates)
        return stream.finish()

    def stream(self) -> ApplyStream:
        """An :class:`~pareis.store.lineage_redis_stream.ApplyStream`: updates sent chunk by chunk as the caller
        has them, applied by the server meanwhile, their outcomes read at :meth:`~ApplyStream.finish` (what
        :meth:`apply` does with one chunk). The layout is checked (and stamped) here."""
        with translated():
            self._check_layout()
            if not self._stamped:
                self._redis.set(f"{self._prefix}layout", LAYOUT, nx=True)
                self._stamped = True
        return ApplyStream(self._redis, self._prefix, self._script, self._forget_script)

    def _script(self) -> str:
        if self._sha is None:
            self._sha = reply_text(self._redis.script_load(_APPLY))
        return self._sha

    def _forget_script(self) -> None:
        self._sha = None

    def record(self, entity: str, aspect: str) -> AspectRecord | None:
        with translated():
            self._check_layout()
            raw = self._redis.get(f"{self._prefix}r:{aspect}|{entity}")
        if raw is None:
            return None
        version, time, deleted, facts = reply_text(raw).split("\n", 3)
        stamp = Stamp(int(version) if version else None, int(time))
        return AspectRecord(stamp, None if deleted == "1" else decode_facts(facts))

    def entities(self, aspect: str) -> list[str]:
        """``SCAN`` over the records of ``aspect``, then the head of each (version, time, tombstone flag) in one
        pipeline per page, so that a deleted record is not listed and no facts are transferred."""
        head = f"{self._prefix}r:{aspect}|"
        pattern = "".join("\\" + c if c in "*?[]\\" else c for c in head) + "*"
        found: list[str] = []
        with translated():
            self._check_layout()
            cursor: int | str = 0
            while True:
                cursor, keys = self._redis.scan(cursor=int(cursor), match=pattern, count=1000)
                if keys:
                    pipe = self._redis.pipeline(transaction=False)
                    for key in keys:
                        pipe.getrange(key, 0, 63)
                    for key, start in zip(keys, pipe.execute(), strict=True):
                        fields = reply_text(start).split("\n", 3)
                        if len(fields) >= 3 and fields[2] != "1":
                            found.append(reply_text(key)[len(head) :])
                if int(cursor) == 0:
                    break
        return sorted(set(found))

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        """One round trip for the whole batch, sent packed on one connection: per query and bucket (a dataset's
        column hash) one ``HMGET`` of the frontier's columns in it, ``HKEYS`` of any other node's hash; for a
        reverse ``has_column`` query on a column also ``HEXISTS`` in the forward hash of each dataset its URN may
        name."""
        p = self._prefix
        commands: list[tuple[Any, ...]] = []
        hashes: list[str] = []  # the HKEYS, sent READ_CHUNK at a time to the read script
        plan: list[list[_Row]] = []
        for q in queries:
            side = "i" if q.reverse else "o"
            schema = q.reverse and q.rel == Rel.HAS_COLUMN
            groups: dict[str, tuple[int, dict[str, int]]] = {}  # bucket key → (its HMGET's index, field → position)
            rows: list[_Row] = []
            for n in q.nodes:
                bucket = bucket_of(n)
                if bucket is None:
                    row: _Row = (n, None, -1, len(hashes), None)
                    hashes.append(f"{p}{side}:{q.rel}:{key_of(n)}")
                else:
                    parent, field = bucket
                    key = f"{p}{side}c:{q.rel}:{key_of(parent)}"
                    group = groups.get(key)
                    if group is None:
                        group = groups[key] = (len(commands), {})
                        commands.append(("HMGET", key))
                    at = group[1].setdefault(field, len(group[1]))
                    row = (n, parent, group[0], at, None)
                if schema:
                    checks: list[tuple[str, int]] = []
                    for dataset, rest in _spellings(n):
                        checks.append((dataset, len(commands)))
                        commands.append(("HEXISTS", f"{p}o:{Rel.HAS_COLUMN}:{key_of(dataset)}", CHILD + rest))
                    row = (*row[:4], checks)
                rows.append(row)
            for key, (at, fields) in groups.items():
                commands[at] = ("HMGET", key, *fields)
            plan.append(rows)
        with translated():
            self._check_layout()
            replies, keys = self._read(commands, hashes, "HKEYS")
        out: list[Adjacency] = []
        for rows in plan:
            answer: dict[str, frozenset[str]] = {}
            for n, owner, at, pos, spelled in rows:
                if owner is None:
                    got = keys[pos]
                    found = field_nodes(got, n) if got else None
                else:
                    value = replies[at][pos]
                    found = None if value is None else bucket_nodes(value, owner)
                if spelled:
                    found = found or set()
                    found.update(dataset for dataset, i in spelled if replies[i])
                answer[n] = frozenset(found) if found else _NONE  # most nodes have none: one shared empty set
            out.append(answer)
        return out

    def _read(
        self, commands: list[tuple[Any, ...]], hashes: list[str], *argv: str, script: str = _READ
    ) -> tuple[list[Any], list[Any]]:
        """(the replies to ``commands``, ``script``'s reply for each of ``hashes``) in one round trip, ``script``
        (by default the read script, ``argv`` its ``ARGV``: ``HKEYS``, ``HGETALL`` or ``HGET`` and a field) called
        :data:`READ_CHUNK` keys per ``EVALSHA`` (one command, not one each: a large blast asks ~100,000 ``HKEYS``,
        mostly of hashes that do not exist). Loads the script when the server lacks it."""
        for attempt in (1, 2):
            sha = self._read_shas.get(script)
            if sha is None:
                sha = self._read_shas[script] = reply_text(self._redis.script_load(script))
            chunks = [hashes[i : i + READ_CHUNK] for i in range(0, len(hashes), READ_CHUNK)]
            sent = commands + [("EVALSHA", sha, len(c), *c, *argv) for c in chunks]
            try:
                replies = _round_trip(self._redis, sent)
            except redis.exceptions.NoScriptError:
                self._read_shas.clear()  # the server lost its script cache (restart, SCRIPT FLUSH)
                if attempt == 2:
                    raise
                continue
            keys = [k for r in replies[len(commands) :] for k in r]
            return replies[: len(commands)], keys
        raise AssertionError("unreachable")

    def outlines(self, datasets: Collection[str]) -> Mapping[str, Outline]:
        """One round trip: each dataset's schema hash by the outline script (:data:`_OUTLINE`), which sends a flat
        schema's size instead of its fields; a plain ``HKEYS`` for a dataset whose columns are not spelled as its own
        (:func:`~pareis.core.fieldpath.own_head` is None: the script cannot tell such a schema flat). The answer is
        ``outline_of`` of the whole schema either way."""
        if not datasets:
            return {}
        ordered = list(datasets)
        p, rel = self._prefix, Rel.HAS_COLUMN
        plain = [d for d in ordered if own_head(d) is not None]
        other = [d for d in ordered if own_head(d) is None]
        with translated():
            self._check_layout()
            whole, got = self._read(
                [("HKEYS", f"{p}o:{rel}:{key_of(d)}") for d in other],
                [f"{p}o:{rel}:{key_of(d)}" for d in plain],
                script=_OUTLINE,
            )
        out: dict[str, Outline] = {}
        for d, reply in zip(plain, got, strict=True):
            out[d] = Outline(reply, _NONE) if isinstance(reply, int) else outline_of(d, _columns(reply, d))
        for d, reply in zip(other, whole, strict=True):
            out[d] = outline_of(d, _columns(reply, d))
        return out

    def attribute(self, nodes: Collection[str], name: Attr) -> Mapping[str, str | None]:
        """``HGET`` of ``name`` in each node's attribute hash, by the read script (:meth:`_read`)."""
        ordered = list(nodes)
        with translated():
            self._check_layout()
            _, results = self._read([], [f"{self._prefix}a:{n}" for n in ordered], "HGET", name)
        return {n: None if r is None else reply_text(r) for n, r in zip(ordered, results, strict=True)}

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        """``HGETALL`` of each node's attribute hash, by the read script (:meth:`_read`)."""
        ordered = list(nodes)
        with translated():
            self._check_layout()
            _, results = self._read([], [f"{self._prefix}a:{n}" for n in ordered], "HGETALL")
        out: dict[str, dict[str, str]] = {}
        for n, r in zip(ordered, results, strict=True):
            out[n] = {reply_text(r[i]): reply_text(r[i + 1]) for i in range(0, len(r), 2)} if r else {}
        return out


def _columns(fields: list[Any], dataset: str) -> frozenset[str]:
    """The columns a schema hash's ``fields`` stand for."""
    return frozenset(field_nodes(fields, dataset)) if fields else _NONE


def _refusal(prefix: str, found: str) -> str:
    return (
        f"the lineage index at {prefix!r} has layout {found}; this Pareis reads layout {LAYOUT}: delete its keys "
        f"({prefix}*) and rebuild it (`pareis bootstrap`, or replay the change log to the lineage role)"
    )


def _spellings(column: str) -> list[tuple[str, str]]:
    """Every (dataset, rest) with ``column == urn:li:schemaField:(<dataset>,<rest>)`` and ``<dataset>`` not itself
    a column: where a child-of-the-key ``has_column`` field for it may be (the apply script writes one only for a
    non-column source)."""
    if not (column.startswith(COLUMN_PREFIX) and column.endswith(")")):
        return []
    inner = column[len(COLUMN_PREFIX) : -1]
    return [(inner[:i], inner[i + 1 :]) for i, c in enumerate(inner) if c == "," and bucket_of(inner[:i]) is None]


def _round_trip(client: redis.Redis, commands: list[tuple[Any, ...]]) -> list[Any]:
    """The replies to ``commands``, sent packed on one connection of ``client``'s pool and read in order (what a
    pipeline does, without its per-command bookkeeping: a large blast's walk is ~150,000 commands). The first error
    reply is raised once every reply is read."""
    if not commands:
        return []
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        # hiredis's packer called directly, as ApplyStream does: redis-py's pack_commands wraps it in per-argument
        # checks that cost more than the packing (a burst's surveys send ~80,000 commands).
        conn.send_packed_command([b"".join([pack_command(c) for c in commands])])
        replies: list[Any] = []
        error: redis.ResponseError | None = None
        for _ in commands:
            try:
                replies.append(conn.read_response())
            except redis.ResponseError as e:
                error = error or e
                replies.append(None)
    except BaseException:
        conn.disconnect()  # replies may be left unread: never hand this socket out again
        raise
    finally:
        pool.release(conn)
    if error is not None:
        raise error
    return replies
