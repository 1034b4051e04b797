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
one pipeline. The script touches keys derived from its arguments, so this targets a single Redis server (not
Redis Cluster).

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
from pareis.errors import Fatal
from pareis.store.lineage import AspectRecord, Edge, Facts, LineageUpdate, Outcome, Stamp
from pareis.store.lineage_redis_script import apply_script
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


_APPLY = apply_script(FIELD_PREFIXES)
_OUTCOMES = {0: Outcome.STALE, 1: Outcome.APPLIED, 2: Outcome.UNCHANGED}

LAYOUT = "2"
"""The layout this module reads and writes, stored at ``P layout``. Layout 1 (before the column buckets) wrote no
such key."""
BUCKET_END, COUNT_MARK, BUCKET_ESCAPE = "\x1e", "\x1f", "\x1d"
_UNESCAPE = (("\x1d\x02", "\x1e"), ("\x1d\x03", "\x1f"), ("\x1d\x01", "\x1d"))


def bucket_of(node: str) -> tuple[str, str] | None:
    """(parent, path) of a column URN ``urn:li:schemaField:(<parent>,<path>)`` split at its last comma (as
    :func:`encode_facts` splits it): the bucket hash and field that hold its edges; None for any other node."""
    if node.startswith(COLUMN_PREFIX) and node.endswith(")"):
        comma = node.rfind(",", len(COLUMN_PREFIX))
        if comma >= 0:
            return node[len(COLUMN_PREFIX) : comma], node[comma + 1 : -1]
    return None


def bucket_entries(value: str) -> list[str]:
    """The fields (relative to the bucket's parent, see :func:`field_of`) a bucket value lists."""
    out = []
    for entry in value.split(BUCKET_END)[:-1]:
        entry = entry.partition(COUNT_MARK)[0]
        if BUCKET_ESCAPE in entry:
            for escaped, plain in _UNESCAPE:
                entry = entry.replace(escaped, plain)
        out.append(entry)
    return out


class RedisLineageStore:
    """:class:`~pareis.store.lineage.LineageStore` on a Redis client the caller builds and owns.

    Works with ``decode_responses`` on or off. The first call checks the layout key (one ``GET``): an index of
    another layout is refused with :class:`~pareis.errors.Fatal` (rebuild it, see the module docstring).
    """

    def __init__(self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._redis = client
        self._prefix = prefix
        self._script = client.register_script(_APPLY)
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
        elif _text(found) != LAYOUT:
            raise Fatal(_refusal(self._prefix, _text(found)))
        else:
            self._stamped = True
        self._checked = True

    def apply(self, updates: Sequence[LineageUpdate]) -> list[Outcome]:
        if not updates:
            return []
        with translated():
            self._check_layout()
            pipe = self._redis.pipeline(transaction=False)
            if not self._stamped:
                pipe.set(f"{self._prefix}layout", LAYOUT, nx=True)
            for u in updates:
                version = "" if u.stamp.version is None else str(u.stamp.version)
                deleted, facts = ("1", "") if u.facts is None else ("0", encode_facts(u.facts))
                args = [self._prefix, u.entity, u.aspect, version, str(u.stamp.time_ms), deleted, facts]
                self._script(keys=[], args=args, client=pipe)
            results = pipe.execute()
            if not self._stamped:
                results = results[1:]
                self._stamped = True
        return [_OUTCOMES[int(r)] for r in results]

    def record(self, entity: str, aspect: str) -> AspectRecord | None:
        with translated():
            self._check_layout()
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
            self._check_layout()
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
        """One pipeline for the whole batch: per (relation, node) ``HGET`` of the column's bucket field, or
        ``HKEYS`` of any other node's hash; for a reverse ``has_column`` query on a column also ``HEXISTS`` in the
        forward hash of each dataset its URN may name."""
        plan = [(q, [(n, bucket_of(n)) for n in q.nodes]) for q in queries]
        p = self._prefix
        with translated():
            self._check_layout()
            pipe = self._redis.pipeline(transaction=False)
            for q, nodes in plan:
                side = "i" if q.reverse else "o"
                schema = q.reverse and q.rel == Rel.HAS_COLUMN
                for n, bucket in nodes:
                    if bucket is None:
                        pipe.hkeys(f"{p}{side}:{q.rel}:{key_of(n)}")
                    else:
                        pipe.hget(f"{p}{side}c:{q.rel}:{key_of(bucket[0])}", bucket[1])
                    if schema:
                        for parent, rest in _spellings(n):
                            pipe.hexists(f"{p}o:{Rel.HAS_COLUMN}:{key_of(parent)}", CHILD + rest)
            results = iter(pipe.execute())
            out: list[Adjacency] = []
            for q, nodes in plan:
                schema = q.reverse and q.rel == Rel.HAS_COLUMN
                answer: dict[str, frozenset[str]] = {}
                for n, bucket in nodes:
                    got = next(results)
                    if bucket is None:
                        found = {node_of(_text(k), n) for k in got}
                    elif got is None:
                        found = set()
                    else:
                        parent = bucket[0]
                        found = {node_of(e, parent) for e in bucket_entries(_text(got))}
                    if schema:
                        found.update(parent for parent, _ in _spellings(n) if next(results))
                    answer[n] = frozenset(found)
                out.append(answer)
        return out

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        ordered = list(nodes)
        with translated():
            self._check_layout()
            pipe = self._redis.pipeline(transaction=False)
            for n in ordered:
                pipe.hgetall(f"{self._prefix}a:{n}")
            results = pipe.execute()
        return {n: {_text(k): _text(v) for k, v in r.items()} for n, r in zip(ordered, results, strict=True)}


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


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
