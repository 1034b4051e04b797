"""The lineage index in Redis, standalone or Redis Cluster.

Layout 3. Every key belongs to a *home* node (:func:`~pareis.store.lineage_redis_encoding.home_of`: a column's
parent, any other node itself) and is named ``P{<home>}<suffix>`` (``P`` = prefix, default ``pareis:lineage:``;
``<home>`` spelled by :func:`~pareis.store.lineage_redis_encoding.spelled`, its common URN prefix abbreviated): the
braces make the home the key's Redis Cluster hash tag, so one node's keys share a slot, and the index spreads over
the cluster's primaries by node.

* ``P layout`` string ``3`` (:data:`LAYOUT`): checked on the store's first call; an index without it or with
  another value is refused (:class:`~pareis.errors.Fatal`, one line). **Migration**: there is no reader for older
  layouts — delete the old keys (``redis-cli --scan --pattern 'pareis:lineage:*' | xargs redis-cli del``, on each
  primary of a cluster) and rebuild the index, with ``pareis bootstrap`` (from DataHub or files) or by replaying the
  change log to the lineage role (reset its consumer group to the earliest offsets).
* A **column** ``urn:li:schemaField:(<parent>,<path>)`` (split at its last comma) keeps its edges in its parent's
  *buckets* ``P{<parent>}oc:<rel>`` / ``P{<parent>}ic:<rel>``: hash ``path → neighbours``, each neighbour a field
  (below) ended by ``\\x1e`` and followed by ``\\x1f<count>`` when more than one record contributes the edge
  (``\\x1d``, ``\\x1e``, ``\\x1f`` inside a field are escaped as ``\\x1d`` + ``\\x01``/``\\x02``/``\\x03``).
* **Any other node** ``N``: ``P{N}o:<rel>`` hash ``field(dst) → count`` and ``P{N}i:<rel>`` hash ``field(src) →
  count``: edges both ways, each with the number of (entity, aspect) records contributing it. Exception: a
  ``has_column`` edge from a node to a column *of that node* (what ``schemaMetadata`` states) has no reverse entry —
  the column's URN names its dataset, so a reverse lookup asks the forward hash (``HEXISTS``) of every dataset the URN
  can be split into.
* ``P{E}a`` hash ``attr → value``; ``P{E}r:<aspect>`` string ``<seq>\\n<version>\\n<time ms>\\n<d>\\n<body>`` (``d`` =
  ``1`` for a tombstone; the body in :func:`~pareis.store.lineage_redis_encoding.encode_body`'s compact form, the
  attributes by name and digest): the record that makes replacement a diff; ``P{E}p:<aspect>`` hash, the record's
  pending apply while one runs; ``P{N}m`` hash ``record id → sequence``: which records' moves this home has (see
  :mod:`pareis.store.lineage_redis_stream`).

**Fields** (:func:`~pareis.store.lineage_redis_encoding.field_of`) are node URNs written relative to the hash's own
node, so that hashes stay small enough for Redis's compact *listpack* encoding (``hash-max-listpack-value``, default
64 bytes, bounds every field): ``\\x01<path>`` is a column of the hash's node; a neighbour sharing the start of its
spelling with the hash's node (a table of the same schema) is written from where they differ; otherwise a byte
``\\x02``–``\\x0c`` stands for a common URN prefix. A field longer than ``hash-max-listpack-value`` only turns its hash
into the larger *hashtable* encoding.

Writes: :mod:`pareis.store.lineage_redis_stream`. Reads: a batch of lookups is one round trip per server (each
server's share sent packed, all servers at once): a column bucket's fields by one ``HMGET`` per frontier, other
nodes' hashes by a read-only script, ``HKEYS`` of up to :data:`READ_CHUNK` keys of one slot per call (of one server,
on a standalone Redis); schemas' outlines by another, which sends a flat schema's size instead of its fields
(:meth:`RedisLineageStore.outlines`). Every script declares its keys.

Errors: connection errors, timeouts and a read-only (failing-over) server → :class:`~pareis.errors.Retriable`;
refused credentials and any other server error → :class:`~pareis.errors.Fatal`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pareis.core.fieldpath import COLUMN_PREFIX, own_head
from pareis.core.graph import Adjacency, Attr, Outline, Query, Rel, outline_of
from pareis.errors import Fatal
from pareis.store.lineage import AspectRecord, LineageUpdate, Outcome, Stamp
from pareis.store.lineage_redis_encoding import (
    CHILD,
    bucket_nodes,
    bucket_of,
    decode_facts,
    expand,
    field_nodes,
    spelled,
)
from pareis.store.lineage_redis_script import OUTLINE, READ
from pareis.store.lineage_redis_stream import SCRIPTS, ApplyStream
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import AnyRedis, Servers, key_slot, sha_of, slot_of

__all__ = ["LAYOUT", "RedisLineageStore"]

DEFAULT_PREFIX = "pareis:lineage:"
READ_CHUNK = 1000
"""Keys per ``EVALSHA`` of a read-only script (the server runs each script alone: a chunk keeps that short)."""
_READ, _OUTLINE = sha_of(READ), sha_of(OUTLINE)
_NONE: frozenset[str] = frozenset()
_Row = tuple[str, str | None, int, int, list[tuple[str, int]] | None]
"""A queried node in :meth:`RedisLineageStore.lookup`'s plan: (node, its bucket's parent or None, reply index,
position in the reply (of the read script's when not a column), its ``HEXISTS`` replies)."""

LAYOUT = "3"
"""The layout this module reads and writes, stored at ``P layout``. Layout 1 (before the column buckets) wrote no
such key; layout 2 was layout 3 without hash tags, relative fields and compact records."""


class RedisLineageStore:
    """:class:`~pareis.store.lineage.LineageStore` on a Redis client (standalone or cluster) the caller builds and
    owns.

    Works with ``decode_responses`` on or off. The first call checks the layout key (one ``GET``): an index of
    another layout is refused with :class:`~pareis.errors.Fatal` (rebuild it, see the module docstring).
    """

    def __init__(self, client: AnyRedis, *, prefix: str = DEFAULT_PREFIX) -> None:
        if "{" in prefix or "}" in prefix:
            raise ValueError(f"a lineage index prefix holds no braces (they mark hash tags): {prefix!r}")
        self._servers = Servers(client, {**SCRIPTS, _READ: READ, _OUTLINE: OUTLINE})
        self._redis = client
        self._prefix = prefix
        self._cluster = self._servers.cluster
        self._checked = False
        self._stamped = False

    def _key(self, node: str, suffix: str) -> str:
        """The key ``suffix`` of home ``node``."""
        return f"{self._prefix}{{{spelled(node)}}}{suffix}"

    def _tagged(self, tag: str, suffix: str) -> str:
        """The key ``suffix`` of the home spelled ``tag``."""
        return f"{self._prefix}{{{tag}}}{suffix}"

    def _slot(self, node: str) -> int:
        return slot_of(spelled(node)) if self._cluster else 0

    def _check_layout(self) -> None:
        """Refuse an index written in another layout; remember whether the layout key is there yet."""
        if self._checked:
            return
        key = f"{self._prefix}layout"
        found = self._redis.get(key)
        if found is None:
            head = "".join("\\" + c if c in "*?[]\\" else c for c in self._prefix) + "*"
            for _ in self._redis.scan_iter(match=head, count=1000):
                # A writer stamps the layout before its first key: keys found, the layout is read again, for a
                # writer may have stamped and written a fresh index between the first read and the scan.
                found = self._redis.get(key)
                if found is not None:
                    break
                raise Fatal(
                    f"the lineage index at {self._prefix!r} has keys but no layout key: it was written by a Pareis of "
                    f"layout 1, or its Redis lost data since it was built; this Pareis reads layout {LAYOUT}: "
                    f"{_REBUILD.format(prefix=self._prefix)}"
                )
        if found is not None:
            if reply_text(found) != LAYOUT:
                raise Fatal(_refusal(self._prefix, reply_text(found)))
            self._stamped = True
        self._checked = True

    def apply(self, updates: Sequence[LineageUpdate]) -> list[Outcome]:
        """The updates claimed, then moved and finalized (:mod:`pareis.store.lineage_redis_stream`): three round
        trips per server for the batch."""
        if not updates:
            return []
        stream = self.stream()
        stream.send(updates)
        return stream.finish()

    def stream(self) -> ApplyStream:
        """An :class:`~pareis.store.lineage_redis_stream.ApplyStream`: updates claimed chunk by chunk as the caller
        has them, while the servers work, their moves made at :meth:`~ApplyStream.finish` (what :meth:`apply` does
        with one chunk). The layout is checked (and stamped) here."""
        with translated():
            self._check_layout()
            if not self._stamped:
                self._redis.set(f"{self._prefix}layout", LAYOUT, nx=True)
                self._stamped = True
        return ApplyStream(self._servers, self._tagged)

    def record(self, entity: str, aspect: str) -> AspectRecord | None:
        with translated():
            self._check_layout()
            raw, values = self._servers.exchange(
                [("GET", self._key(entity, "r:" + aspect)), ("HGETALL", self._key(entity, "a"))],
                [self._slot(entity)] * 2,
            )
        if raw is None:
            return None
        _, version, time, deleted, body = reply_text(raw).split("\n", 4)
        stamp = Stamp(int(version) if version else None, int(time))
        if deleted == "1":
            return AspectRecord(stamp, None)
        pairs = values.items() if isinstance(values, dict) else zip(values[::2], values[1::2], strict=True)
        return AspectRecord(stamp, decode_facts(body, {reply_text(k): reply_text(v) for k, v in pairs}))

    def entities(self, aspect: str) -> list[str]:
        """``SCAN`` (every primary) over the records of ``aspect``, then the head of each (its tombstone flag) in one
        round trip per page, so that a deleted record is not listed and no bodies are transferred."""
        tail = "}r:" + aspect
        pattern = _glob(self._prefix) + "{*" + _glob(tail)
        found: list[str] = []
        with translated():
            self._check_layout()
            page: list[str] = []
            for key in self._redis.scan_iter(match=pattern, count=1000):
                page.append(reply_text(key))
                if len(page) == 1000:
                    found += self._live(page, tail)
                    page = []
            found += self._live(page, tail)
        return sorted(set(found))

    def _live(self, keys: list[str], tail: str) -> list[str]:
        heads = self._servers.exchange(
            [("GETRANGE", k, 0, 63) for k in keys], [key_slot(k) for k in keys] if self._cluster else None
        )
        start = len(self._prefix) + 1
        return [
            expand(k[start : -len(tail)])
            for k, head in zip(keys, heads, strict=True)
            if (fields := reply_text(head).split("\n", 4)) and len(fields) >= 4 and fields[3] != "1"
        ]

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        """One round trip per server for the whole batch: per query and bucket (a node's column hash) one ``HMGET``
        of the frontier's columns in it, ``HKEYS`` of any other node's hash; for a reverse ``has_column`` query on a
        column also ``HEXISTS`` in the forward hash of each dataset its URN may name."""
        commands: list[tuple[Any, ...]] = []
        slots: list[int] = []
        hashes: list[str] = []  # the HKEYS, sent to the read script
        hash_slots: list[int] = []
        plan: list[list[_Row]] = []
        for q in queries:
            side = "i:" if q.reverse else "o:"
            bucket_side = "ic:" if q.reverse else "oc:"
            schema = q.reverse and q.rel == Rel.HAS_COLUMN
            groups: dict[str, tuple[int, dict[str, int]]] = {}  # bucket's parent → (its HMGET's index, fields)
            rows: list[_Row] = []
            for n in q.nodes:
                bucket = bucket_of(n)
                if bucket is None:
                    row: _Row = (n, None, -1, len(hashes), None)
                    hashes.append(self._key(n, side + q.rel))
                    hash_slots.append(self._slot(n))
                else:
                    parent, field = bucket
                    group = groups.get(parent)
                    if group is None:
                        group = groups[parent] = (len(commands), {})
                        commands.append(())
                        slots.append(self._slot(parent))
                    at = group[1].setdefault(field, len(group[1]))
                    row = (n, parent, group[0], at, None)
                if schema:
                    checks: list[tuple[str, int]] = []
                    for dataset, rest in _spellings(n):
                        checks.append((dataset, len(commands)))
                        commands.append(("HEXISTS", self._key(dataset, f"o:{Rel.HAS_COLUMN}"), CHILD + rest))
                        slots.append(self._slot(dataset))
                    row = (*row[:4], checks)
                rows.append(row)
            for parent, (at, fields) in groups.items():
                commands[at] = ("HMGET", self._key(parent, bucket_side + q.rel), *fields)
            plan.append(rows)
        with translated():
            self._check_layout()
            replies, keys = self._read(commands, slots, hashes, hash_slots, "HKEYS")
        out: list[Adjacency] = []
        for rows in plan:
            answer: dict[str, frozenset[str]] = {}
            for n, owner, at, pos, spelled_as in rows:
                if owner is None:
                    got = keys[pos]
                    found = field_nodes(got, n) if got else None
                else:
                    value = replies[at][pos]
                    found = None if value is None else bucket_nodes(value, owner)
                if spelled_as:
                    found = found or set()
                    found.update(dataset for dataset, i in spelled_as if replies[i])
                answer[n] = frozenset(found) if found else _NONE  # most nodes have none: one shared empty set
            out.append(answer)
        return out

    def _read(
        self,
        commands: list[tuple[Any, ...]],
        slots: list[int],
        hashes: list[str],
        hash_slots: list[int],
        *argv: str,
        script: str = _READ,
    ) -> tuple[list[Any], list[Any]]:
        """(the replies to ``commands``, ``script``'s reply for each of ``hashes``) in one round trip per server,
        ``script`` (by default the read script, ``argv`` its ``ARGV``: ``HKEYS``, ``HGETALL`` or ``HGET`` and a field)
        called :data:`READ_CHUNK` keys of one slot (any slot, standalone) per ``EVALSHA`` (one command, not one each:
        a large blast asks ~100,000 ``HKEYS``, mostly of hashes that do not exist)."""
        groups: dict[int, list[int]] = {}
        for i, slot in enumerate(hash_slots):
            group = groups.get(slot)
            if group is None:
                group = groups[slot] = []
            group.append(i)
        sent = list(commands)
        sent_slots = list(slots)
        order: list[int] = []
        for slot, members in groups.items():
            for start in range(0, len(members), READ_CHUNK):
                chunk = members[start : start + READ_CHUNK]
                sent.append(("EVALSHA", script, len(chunk), *[hashes[i] for i in chunk], *argv))
                sent_slots.append(slot)
                order += chunk
        replies = self._servers.exchange(sent, sent_slots)
        keys: list[Any] = [None] * len(hashes)
        for i, got in zip(order, (k for r in replies[len(commands) :] for k in r), strict=True):
            keys[i] = got
        return replies[: len(commands)], keys

    def outlines(self, datasets: Collection[str]) -> Mapping[str, Outline]:
        """One round trip per server: each dataset's schema hash by the outline script (:data:`OUTLINE`), which
        sends a flat schema's size instead of its fields; a plain ``HKEYS`` for a dataset whose columns are not
        spelled as its own (:func:`~pareis.core.fieldpath.own_head` is None: the script cannot tell such a schema
        flat). The answer is ``outline_of`` of the whole schema either way."""
        if not datasets:
            return {}
        ordered = list(datasets)
        schema = f"o:{Rel.HAS_COLUMN}"
        plain = [d for d in ordered if own_head(d) is not None]
        other = [d for d in ordered if own_head(d) is None]
        with translated():
            self._check_layout()
            whole, got = self._read(
                [("HKEYS", self._key(d, schema)) for d in other],
                [self._slot(d) for d in other],
                [self._key(d, schema) for d in plain],
                [self._slot(d) for d in plain],
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
            _, results = self._read(
                [], [], [self._key(n, "a") for n in ordered], [self._slot(n) for n in ordered], "HGET", name
            )
        return {n: None if r is None else reply_text(r) for n, r in zip(ordered, results, strict=True)}

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        """``HGETALL`` of each node's attribute hash, by the read script (:meth:`_read`)."""
        ordered = list(nodes)
        with translated():
            self._check_layout()
            _, results = self._read(
                [], [], [self._key(n, "a") for n in ordered], [self._slot(n) for n in ordered], "HGETALL"
            )
        out: dict[str, dict[str, str]] = {}
        for n, r in zip(ordered, results, strict=True):
            out[n] = {reply_text(r[i]): reply_text(r[i + 1]) for i in range(0, len(r), 2)} if r else {}
        return out


def _columns(fields: list[Any], dataset: str) -> frozenset[str]:
    """The columns a schema hash's ``fields`` stand for."""
    return frozenset(field_nodes(fields, dataset)) if fields else _NONE


def _glob(text: str) -> str:
    """``text`` as a literal in a Redis ``MATCH`` pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


_REBUILD = (
    "delete its keys ({prefix}*) and rebuild it (`pareis bootstrap`, or replay the change log to the lineage role)"
)


def _refusal(prefix: str, found: str) -> str:
    return f"the lineage index at {prefix!r} has layout {found}; this Pareis reads layout {LAYOUT}: " + _REBUILD.format(
        prefix=prefix
    )


def _spellings(column: str) -> list[tuple[str, str]]:
    """Every (dataset, rest) with ``column == urn:li:schemaField:(<dataset>,<rest>)`` and ``<dataset>`` not itself
    a column: where a child-of-the-key ``has_column`` field for it may be (a plan writes one only for a non-column
    source)."""
    if not (column.startswith(COLUMN_PREFIX) and column.endswith(")")):
        return []
    inner = column[len(COLUMN_PREFIX) : -1]
    return [(inner[:i], inner[i + 1 :]) for i, c in enumerate(inner) if c == "," and bucket_of(inner[:i]) is None]
