"""The Redis lineage store's encodings (:mod:`pareis.store.lineage_redis`, layout 2): hash fields, key spellings,
record facts, column buckets, and the write plan of a first write.

Compiled to a C extension by mypyc at install (``pyproject.toml`` ``[tool.pareis] compiled``): the index build's
client work is mostly here. mypyc checks the annotations at run time, so they must be exact; the hot loops use
classes and module functions rather than closures, which it compiles to slower generic calls."""

from __future__ import annotations

from typing import Any

import orjson

from pareis.contracts.lineage import Edge, Facts
from pareis.core.fieldpath import COLUMN_PREFIX
from pareis.core.graph import Attr, Rel

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
    last comma: a canonical column's path has none), its parent listed (and, if a column, split) before it;
    edges are pairs of indexes into ``n`` under their relation; nodes in order of first use over the sorted edges;
    attributes sorted by name.
    """
    return _node_table(facts)[0]


class _Table:
    """A record's node table while it is built: every URN once, a column as its parent's index and its path, its
    parent added (and, if a column, split) before it."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.nodes: list[object] = []
        self.urns: list[str] = []
        self.parents: list[int] = []
        """Index of each node's parent; -1: not a column."""
        self.paths: list[str] = []

    def at(self, urn: str) -> int:
        """The index of ``urn``, added when new."""
        i = self.index.get(urn, -1)
        return i if i >= 0 else self.add(urn)

    def add(self, urn: str) -> int:
        start = len(COLUMN_PREFIX)
        comma = urn.rfind(",", start) if urn.startswith(COLUMN_PREFIX) and urn.endswith(")") else -1
        if comma >= 0:  # urn:li:schemaField:(<parent>,<path>): [index of parent, path], the parent split alike
            parent_at = self.at(urn[start:comma])
            path = urn[comma + 1 : -1]
            self.nodes.append([parent_at, path])
            self.parents.append(parent_at)
            self.paths.append(path)
        else:
            self.nodes.append(urn)
            self.parents.append(-1)
            self.paths.append("")
        self.urns.append(urn)
        i = len(self.urns) - 1
        self.index[urn] = i
        return i


def _node_table(facts: Facts) -> tuple[str, _Table, dict[Rel, list[int]], list[str]]:
    """(encoded facts, the node table, edges as index pairs by relation, attributes as name, value, ….)"""
    table = _Table()
    by_rel: dict[Rel, list[int]] = {}
    for rel, src, dst in sorted(facts.edges):
        pairs = by_rel.get(rel)
        if pairs is None:
            pairs = by_rel[rel] = []
        pairs.append(table.at(src))
        pairs.append(table.at(dst))
    attrs: list[str] = []
    for name, value in sorted((str(k), v) for k, v in facts.attrs.items()):
        attrs.append(name)
        attrs.append(value)
    text = orjson.dumps({"a": attrs, "e": {str(r): v for r, v in by_rel.items()}, "n": table.nodes}).decode()
    return text, table, by_rel, attrs


def generic_field(urn: str) -> str:
    """:func:`field_of` without the child-of-the-node form: how ``urn`` is written in a hash of any other node."""
    if urn and urn[0] < "\x10":
        return ESCAPE + urn
    for marker, prefix in FIELD_PREFIXES:
        if urn.startswith(prefix):
            return marker + urn[len(prefix) :]
    return urn


_DATASET = FIELD_PREFIXES[0][1][len(COLUMN_PREFIX) :]
_DATASET_LEN = len(_DATASET)
_COLUMN_DATASET, _COLUMN = FIELD_PREFIXES[0][0], FIELD_PREFIXES[1][0]
_ESCAPES = str.maketrans({"\x1d": "\x1d\x01", "\x1e": "\x1d\x02", "\x1f": "\x1d\x03"})


def encode_update(facts: Facts, prefix: str) -> tuple[str, list[str]]:
    """(:func:`encode_facts`, the write plan of a first write of ``facts`` under ``prefix``).

    The plan is what the apply script would compute from the facts when no earlier record is there to diff
    against, computed here so that the server does not: groups ``a, "", n, (name, value) × n`` (the attributes),
    ``c, key, n, field × n`` (count hashes, each field +1) and ``b, key, n, (path, entry) × n`` (column buckets).
    It must equal the script's own reading (the tests pin it: a first write followed by any later write or delete
    leaves exactly what the in-memory store has).
    """
    text, table, by_rel, attrs = _node_table(facts)
    names = _Names(table)
    parents, paths = table.parents, table.paths
    counts: dict[str, list[str]] = {}
    buckets: dict[str, list[str]] = {}
    # an entry needs escaping only if a URN or path has one of the separators (orjson writes them as \u001d-f)
    plain = "\\u001d" not in text and "\\u001e" not in text and "\\u001f" not in text
    for rel, pairs in by_rel.items():
        own = rel == Rel.HAS_COLUMN
        # per (side, node or column parent): its group of the plan, found once
        o_bucket: dict[int, list[str]] = {}
        i_bucket: dict[int, list[str]] = {}
        o_count: dict[int, list[str]] = {}
        i_count: dict[int, list[str]] = {}
        o_head, i_head = f"{prefix}oc:{rel}:", f"{prefix}ic:{rel}:"
        o_node, i_node = f"{prefix}o:{rel}:", f"{prefix}i:{rel}:"
        for j in range(0, len(pairs), 2):
            si, di = pairs[j], pairs[j + 1]
            ps, pd = parents[si], parents[di]
            # forward: at si, naming di
            if ps >= 0:
                group = _group(o_bucket, ps, o_head, names, buckets)
                group.append(paths[si])
                entry = CHILD + paths[di] if pd == ps else names.generic(di)
                group.append(entry if plain else _escaped(entry))
            else:
                _group(o_count, si, o_node, names, counts).append(CHILD + paths[di] if pd == si else names.generic(di))
                if own and pd == si:
                    continue  # a node's own column: no reverse entry
            # reverse: at di, naming si
            if pd >= 0:
                group = _group(i_bucket, pd, i_head, names, buckets)
                group.append(paths[di])
                entry = CHILD + paths[si] if ps == pd else names.generic(si)
                group.append(entry if plain else _escaped(entry))
            else:
                _group(i_count, di, i_node, names, counts).append(CHILD + paths[si] if ps == di else names.generic(si))
    plan: list[str] = ["a", "", str(len(attrs) // 2), *attrs] if attrs else []
    for key, fields in counts.items():
        plan += ("c", key, str(len(fields)), *fields)
    for key, entries in buckets.items():
        plan += ("b", key, str(len(entries) // 2), *entries)
    return text, plan


class _Names:
    """The spellings of a node table's nodes in the plan, each built once: its key (:func:`key_of`) and its
    field in another node's hash (:func:`generic_field`; a column's from its parent's, as the script builds it)."""

    def __init__(self, table: _Table) -> None:
        self.table = table
        n = len(table.urns)
        self.generics: list[str | None] = [None] * n
        self.keys: list[str | None] = [None] * n
        self.heads: dict[int, str] = {}

    def generic(self, i: int) -> str:
        g = self.generics[i]
        if g is None:
            table = self.table
            parent = table.parents[i]
            if parent < 0:
                g = generic_field(table.urns[i])
            else:
                head = self.heads.get(parent)
                if head is None:
                    pu = table.urns[parent]
                    head = _COLUMN_DATASET + pu[_DATASET_LEN:] if pu.startswith(_DATASET) else _COLUMN + pu
                    self.heads[parent] = head
                g = f"{head},{table.paths[i]})"
            self.generics[i] = g
        return g

    def key(self, i: int) -> str:
        k = self.keys[i]
        if k is None:
            k = self.keys[i] = key_of(self.table.urns[i])
        return k


def _group(found: dict[int, list[str]], at: int, head: str, names: _Names, plan: dict[str, list[str]]) -> list[str]:
    """The plan's group of the hash ``head`` + the key of node ``at``, kept in ``found`` for the next edge at it."""
    group = found.get(at)
    if group is None:
        group = found[at] = plan.setdefault(head + names.key(at), [])
    return group


def _escaped(entry: str) -> str:
    """``entry`` with the bucket separators escaped."""
    return entry.translate(_ESCAPES) if "\x1d" in entry or "\x1e" in entry or "\x1f" in entry else entry


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


def field_nodes(fields: list[Any], node: str) -> set[str]:
    """The URNs the fields of the hash keyed by ``node`` stand for (:func:`node_of`), each field as read (bytes,
    or str from a client that decodes)."""
    return {node_of(text_of(f), node) for f in fields}


def bucket_nodes(value: Any, owner: str) -> set[str]:
    """The URNs a bucket value of a column of ``owner`` lists (:func:`bucket_entries`, :func:`node_of`), the value
    as read (bytes or str)."""
    return {node_of(e, owner) for e in bucket_entries(text_of(value))}


def text_of(value: Any) -> str:
    """A reply's bytes as text (a client that decodes hands over str already). The decoders above call this one
    rather than :func:`pareis.store.redis_errors.text`, which the rest of the store uses: a call out of the
    extension into a Python function costs a generic call per field, and a lookup decodes ~250,000 of them."""
    return value.decode() if isinstance(value, bytes) else str(value)
