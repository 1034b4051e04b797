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
from typing import Any, NamedTuple

from pareis.core.fieldpath import own_head
from pareis.core.graph import Adjacency, Attr, Outline, Query, Rel, outline_of
from pareis.errors import Fatal
from pareis.store.lineage import AspectRecord, LineageUpdate, Outcome, Stamp
from pareis.store.lineage_redis_encoding import (
    decode_facts,
    expand,
    field_nodes,
    spelled,
)
from pareis.store.lineage_redis_reads import ReadPlan
from pareis.store.lineage_redis_script import FIELDS, OUTLINE, READ
from pareis.store.lineage_redis_stream import SCRIPTS, ApplyStream
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import AnyRedis, Servers, key_slot, sha_of, slot_of

__all__ = ["LAYOUT", "RedisLineageStore"]

DEFAULT_PREFIX = "pareis:lineage:"
READ_CHUNK = 1000
"""Keys per ``EVALSHA`` of a read-only script (the server runs each script alone: a chunk keeps that short)."""
READ_FIELDS = 4000
"""Fields per ``EVALSHA`` of the fields script at most (a bucket's own fields are sent in one call whatever their
number)."""
_READ, _OUTLINE, _FIELDS = sha_of(READ), sha_of(OUTLINE), sha_of(FIELDS)
_NONE: frozenset[str] = frozenset()

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
        self._servers = Servers(client, {**SCRIPTS, _READ: READ, _OUTLINE: OUTLINE, _FIELDS: FIELDS})
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
        return self.records([(entity, aspect)])[0]

    def records(self, keys: Sequence[tuple[str, str]]) -> list[AspectRecord | None]:
        """Each record's head and body, and its entity's attributes (read once per entity), in one round trip."""
        if not keys:
            return []
        entities = sorted({entity for entity, _ in keys})
        commands: list[tuple[object, ...]] = [("HGETALL", self._key(e, "a")) for e in entities]
        commands += [("GET", self._key(entity, "r:" + aspect)) for entity, aspect in keys]
        slots = [self._slot(e) for e in entities] + [self._slot(entity) for entity, _ in keys]
        with translated():
            self._check_layout()
            replies = self._servers.exchange(commands, slots)
        attrs = dict(zip(entities, replies[: len(entities)], strict=True))
        return [_record(raw, attrs[entity]) for (entity, _), raw in zip(keys, replies[len(entities) :], strict=True)]

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
        """One round trip per server for the whole batch (:class:`~pareis.store.lineage_redis_reads.ReadPlan`): per
        query and bucket (a node's column hash) its frontier's columns by the fields script (:data:`FIELDS`), ``HKEYS``
        of any other node's hash by the read script; for a reverse ``has_column`` query on a column also ``HEXISTS``
        in the forward hash of each dataset its URN may name."""
        plan = ReadPlan(
            self._prefix, slot_of if self._cluster else None, [(q.rel.value, list(q.nodes), q.reverse) for q in queries]
        )
        with translated():
            self._check_layout()
            exists, (keys, values) = self._read(
                [("HEXISTS", key, field) for key, field in plan.checks],
                plan.check_slots,
                _Calls(_READ, plan.hashes, plan.hash_slots, ("HKEYS",)),
                _Calls(_FIELDS, plan.buckets, plan.bucket_slots, (), plan.bucket_fields),
            )
        return list(plan.answers(keys, values, exists))

    def _read(
        self, commands: list[tuple[Any, ...]], slots: list[int], *calls: _Calls
    ) -> tuple[list[Any], list[list[Any]]]:
        """(the replies to ``commands``, for each of ``calls`` its script's reply for each of its keys) in one round
        trip per server, each script called on up to :data:`READ_CHUNK` keys of one slot (any slot, standalone) and
        :data:`READ_FIELDS` fields per ``EVALSHA`` (one command, not one per key: a large blast asks ~100,000
        ``HKEYS``, mostly of hashes that do not exist, and reads ~10,000 column buckets)."""
        sent = list(commands)
        sent_slots = list(slots)
        orders: list[tuple[list[int], int]] = []  # per call: its keys in the order sent, and its number of EVALSHA
        for call in calls:
            groups: dict[int, list[int]] = {}
            for i, slot in enumerate(call.slots):
                group = groups.get(slot)
                if group is None:
                    group = groups[slot] = []
                group.append(i)
            order: list[int] = []
            first = len(sent)
            for slot, members in groups.items():
                for chunk in _chunks(members, call.fields):
                    args: list[Any] = ["EVALSHA", call.script, len(chunk), *[call.keys[i] for i in chunk], *call.argv]
                    if call.fields is not None:
                        for i in chunk:
                            args.append(len(call.fields[i]))
                            args += call.fields[i]
                    sent.append(tuple(args))
                    sent_slots.append(slot)
                    order += chunk
            orders.append((order, len(sent) - first))
        replies = self._servers.exchange(sent, sent_slots)
        results: list[list[Any]] = []
        at = len(commands)
        for call, (order, count) in zip(calls, orders, strict=True):
            found: list[Any] = [None] * len(call.keys)
            for i, value in zip(order, (k for r in replies[at : at + count] for k in r), strict=True):
                found[i] = value
            at += count
            results.append(found)
        return replies[: len(commands)], results

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
            whole, (got,) = self._read(
                [("HKEYS", self._key(d, schema)) for d in other],
                [self._slot(d) for d in other],
                _Calls(_OUTLINE, [self._key(d, schema) for d in plain], [self._slot(d) for d in plain]),
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
            _, (results,) = self._read(
                [],
                [],
                _Calls(_READ, [self._key(n, "a") for n in ordered], [self._slot(n) for n in ordered], ("HGET", name)),
            )
        return {n: None if r is None else reply_text(r) for n, r in zip(ordered, results, strict=True)}

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        """``HGETALL`` of each node's attribute hash, by the read script (:meth:`_read`)."""
        ordered = list(nodes)
        with translated():
            self._check_layout()
            _, (results,) = self._read(
                [],
                [],
                _Calls(_READ, [self._key(n, "a") for n in ordered], [self._slot(n) for n in ordered], ("HGETALL",)),
            )
        out: dict[str, dict[str, str]] = {}
        for n, r in zip(ordered, results, strict=True):
            out[n] = {reply_text(r[i]): reply_text(r[i + 1]) for i in range(0, len(r), 2)} if r else {}
        return out


class _Calls(NamedTuple):
    """Calls of a read-only ``script`` on ``keys`` (each of its slot in ``slots``) in :meth:`RedisLineageStore._read`:
    with ``argv`` after the keys of each call, then ``fields`` when given (per key: their number, then them)."""

    script: str
    keys: Sequence[str]
    slots: Sequence[int]
    argv: tuple[str, ...] = ()
    fields: Sequence[Sequence[str]] | None = None


def _chunks(members: list[int], fields: Sequence[Sequence[str]] | None) -> list[list[int]]:
    """``members`` (indexes of keys) cut into the calls of one script: :data:`READ_CHUNK` keys and
    :data:`READ_FIELDS` fields (``fields`` of each key) per call at most, each key in one call."""
    if fields is None:
        return [members[start : start + READ_CHUNK] for start in range(0, len(members), READ_CHUNK)]
    out: list[list[int]] = []
    chunk: list[int] = []
    size = 0
    for i in members:
        if chunk and (len(chunk) == READ_CHUNK or size + len(fields[i]) > READ_FIELDS):
            out.append(chunk)
            chunk, size = [], 0
        chunk.append(i)
        size += len(fields[i])
    if chunk:
        out.append(chunk)
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


def _record(raw: Any, values: Any) -> AspectRecord | None:
    """A record from its stored head-and-body (None: never seen) and its entity's attribute hash."""
    if raw is None:
        return None
    _, version, time, deleted, body = reply_text(raw).split("\n", 4)
    stamp = Stamp(int(version) if version else None, int(time))
    if deleted == "1":
        return AspectRecord(stamp, None)
    pairs = values.items() if isinstance(values, dict) else zip(values[::2], values[1::2], strict=True)
    return AspectRecord(stamp, decode_facts(body, {reply_text(k): reply_text(v) for k, v in pairs}))
