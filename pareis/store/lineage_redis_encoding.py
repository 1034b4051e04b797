"""The Redis lineage store's encodings (layout 3, :mod:`pareis.store.lineage_redis`): how nodes are spelled in key
names and hash fields, the records, the column buckets, and the *write plan* of an update — which count, bucket
entry and attribute moves in which node's keys — computed here, on the client, so that the store's scripts only
merge what they are given.

Every key of the index belongs to one node, its *home* (:func:`home_of`: a column's parent, any other node itself),
and carries the home's spelling (:func:`spelled`) as its Redis Cluster hash tag: one home's keys share a slot.

Compiled to a C extension by mypyc at install (``pyproject.toml`` ``[tool.pareis] compiled``): the index build's
client work is mostly here. mypyc checks the annotations at run time, so they must be exact; the hot loops use
classes and module functions rather than closures, which it compiles to slower generic calls."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from pareis.contracts.lineage import Edge, Facts
from pareis.core.fieldpath import COLUMN_PREFIX
from pareis.core.graph import Attr, Rel

CHILD = "\x01"
"""Field marker: the column ``urn:li:schemaField:(<hash node>,<rest>)``."""
ESCAPE = "\x00"
"""Field marker: the rest is the URN as is (it begins with a byte below ``\\x10``, or, in a key, with ``}``)."""
RELATIVE = "\x0e"
"""Field marker: a node spelled by what differs from the hash node's spelling: ``\\x0e``, ``chr(32 + n)`` for the
``n`` characters it starts with, ``chr(32 + m)`` for the ``m`` it ends with, then the middle (a table of the same
schema as the hash's costs its distinct digits, not its whole URN)."""
RELATIVE_COLUMN = "\x0f"
"""Field marker: a column of another node, its parent spelled as :data:`RELATIVE` does, then ``,`` and its path."""
SHARED_MIN, SHARED_MAX = 5, 95
"""A relative spelling is used when at least ``SHARED_MIN`` characters are shared (start and end together; its two
length characters cost 2); ``chr(32 + SHARED_MAX)`` is the last ASCII character."""
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
BUCKET_END, COUNT_MARK, BUCKET_ESCAPE = "\x1e", "\x1f", "\x1d"
_ESCAPES = str.maketrans({"\x1d": "\x1d\x01", "\x1e": "\x1d\x02", "\x1f": "\x1d\x03"})
_UNESCAPE = (("\x1d\x02", "\x1e"), ("\x1d\x03", "\x1f"), ("\x1d\x01", "\x1d"))


# --- spellings -----------------------------------------------------------------------------------------------------
def generic_field(urn: str) -> str:
    """``urn`` with its common prefix abbreviated (:data:`FIELD_PREFIXES`), or escaped when it begins with a byte
    below ``\\x10``: how a node is written where nothing relates it to the hash's own node."""
    if urn and urn[0] < "\x10":
        return ESCAPE + urn
    for marker, prefix in FIELD_PREFIXES:
        if urn.startswith(prefix):
            return marker + urn[len(prefix) :]
    return urn


def expand(spelling: str) -> str:
    """The URN :func:`generic_field` (or :func:`spelled`) wrote as ``spelling``."""
    if not spelling or spelling[0] >= "\x10":
        return spelling
    if spelling[0] == ESCAPE:
        return spelling[1:]
    return _EXPANSIONS[spelling[0]] + spelling[1:]


def spelled(node: str) -> str:
    """``node`` in key names, its keys' hash tag: :func:`generic_field`, escaped when that is empty or begins with
    ``}`` (an empty hash tag would hash each whole key name, scattering the node's keys over slots)."""
    g = generic_field(node)
    return g if g and g[0] != "}" else ESCAPE + node


def bucket_of(node: str) -> tuple[str, str] | None:
    """(parent, path) of a column URN ``urn:li:schemaField:(<parent>,<path>)`` split at its last comma: the
    bucket (a hash of the parent's) and field that hold its edges; None for any other node."""
    if node.startswith(COLUMN_PREFIX) and node.endswith(")"):
        comma = node.rfind(",", len(COLUMN_PREFIX))
        if comma >= 0:
            return node[len(COLUMN_PREFIX) : comma], node[comma + 1 : -1]
    return None


def home_of(node: str) -> str:
    """The node whose keys hold ``node``'s edges: a column's parent, any other node itself."""
    split = bucket_of(node)
    return node if split is None else split[0]


def relative(base: str, spelling: str) -> str | None:
    """``chr(32 + n) + chr(32 + m) + middle``: ``spelling`` as its middle between the ``n`` leading and ``m`` trailing
    characters it shares with ``base`` (each at most :data:`SHARED_MAX`), or None when they share fewer than
    :data:`SHARED_MIN` in all."""
    limit = min(len(base), len(spelling))
    n = 0
    while n < limit and n < SHARED_MAX and base[n] == spelling[n]:
        n += 1
    m = 0
    while m < limit - n and m < SHARED_MAX and base[-1 - m] == spelling[-1 - m]:
        m += 1
    if n + m < SHARED_MIN:
        return None
    return chr(32 + n) + chr(32 + m) + spelling[n : len(spelling) - m]


def _unrelative(base: str, text: str) -> str:
    """The spelling :func:`relative` wrote as ``text`` (its two length characters first)."""
    n, m = ord(text[0]) - 32, ord(text[1]) - 32
    return base[:n] + text[2:] + (base[len(base) - m :] if m else "")


def field_of(urn: str, node: str, base: str) -> str:
    """How ``urn`` is written in a hash of ``node`` (whose :func:`spelled` is ``base``): the inverse of
    :func:`node_of`."""
    split = bucket_of(urn)
    if split is not None:
        parent, path = split
        if parent == node:
            return CHILD + path
        near = relative(base, generic_field(parent))
        return generic_field(urn) if near is None else RELATIVE_COLUMN + near + "," + path
    g = generic_field(urn)
    near = relative(base, g)
    return g if near is None else RELATIVE + near


def node_of(field: str, node: str, base: str) -> str:
    """The URN a field of a hash of ``node`` (spelled ``base``) stands for (see :func:`field_of`)."""
    if not field or field[0] >= "\x10":
        return field
    marker = field[0]
    if marker == CHILD:
        return f"{COLUMN_PREFIX}{node},{field[1:]})"
    if marker == RELATIVE_COLUMN:
        comma = field.rfind(",")
        parent = expand(_unrelative(base, field[1:comma]))
        return f"{COLUMN_PREFIX}{parent},{field[comma + 1 :]})"
    if marker == RELATIVE:
        return expand(_unrelative(base, field[1:]))
    return expand(field)


def escaped(entry: str) -> str:
    """``entry`` with the separators of bucket values and records escaped."""
    return entry.translate(_ESCAPES) if "\x1d" in entry or "\x1e" in entry or "\x1f" in entry else entry


def unescaped(entry: str) -> str:
    if BUCKET_ESCAPE in entry:
        for escape, plain in _UNESCAPE:
            entry = entry.replace(escape, plain)
    return entry


# --- reading -------------------------------------------------------------------------------------------------------
def bucket_entries(value: str) -> list[str]:
    """The fields (relative to the bucket's node, see :func:`field_of`) a bucket value lists."""
    return [unescaped(entry.partition(COUNT_MARK)[0]) for entry in value.split(BUCKET_END)[:-1]]


def text_of(value: Any) -> str:
    """A reply's bytes as text (a client that decodes hands over str already). The decoders here call this one
    rather than :func:`pareis.store.redis_errors.text`, which the rest of the store uses: a call out of the
    extension into a Python function costs a generic call per field, and a lookup decodes ~250,000 of them."""
    return value.decode() if isinstance(value, bytes) else str(value)


def field_nodes(fields: list[Any], node: str) -> set[str]:
    """The URNs the fields of a hash of ``node`` stand for (:func:`node_of`), each field as read (bytes, or str
    from a client that decodes)."""
    base = spelled(node)
    return {node_of(text_of(f), node, base) for f in fields}


def bucket_nodes(value: Any, owner: str) -> set[str]:
    """The URNs a bucket value of a column of ``owner`` lists, the value as read (bytes or str)."""
    base = spelled(owner)
    return {node_of(e, owner, base) for e in bucket_entries(text_of(value))}


# --- records -------------------------------------------------------------------------------------------------------
def attr_digest(attrs: dict[str, str]) -> str:
    """A short digest of the attributes' names and values (empty for none): a record keeps it instead of the
    values, which live in the entity's attribute hash, to tell an unchanged update."""
    if not attrs:
        return ""
    text = "\x1f".join(f"{k}\x1e{attrs[k]}" for k in sorted(attrs))
    return base64.b64encode(hashlib.blake2b(text.encode(), digest_size=9).digest()).decode()


def record_id(entity: str, aspect: str) -> str:
    """The short id a record's moves are marked with in the other nodes' keys (see the store's apply)."""
    digest = hashlib.blake2b(f"{aspect}|{entity}".encode(), digest_size=6).digest()
    return base64.b64encode(digest).decode()


class Node:
    """A node of one update's facts: its URN, parent and path when a column, and its spellings, each computed once
    (a dataset pair's 22 column edges name two datasets 22 times)."""

    def __init__(self, urn: str, parent: Node | None, path: str) -> None:
        self.urn = urn
        self.parent = parent
        self.path = path
        self.depth: int = 0 if parent is None else parent.depth + 1
        self._generic: str | None = None
        self._base: str | None = None
        self._fields: dict[str, str] | None = None
        self._heads: dict[str, str] | None = None

    def generic(self) -> str:
        """:func:`generic_field` of the URN."""
        g = self._generic
        if g is None:
            g = self._generic = generic_field(self.urn)
        return g

    def base(self) -> str:
        """:func:`spelled`: the node as a hash's own node."""
        b = self._base
        if b is None:
            b = self._base = spelled(self.urn)
        return b

    def field(self, other: Node) -> str:
        """:func:`field_of` ``other`` in a hash of this node; a column from its parent's spelling, once per parent."""
        parent = other.parent
        if parent is None:
            fields = self._fields
            if fields is None:
                fields = self._fields = {}
            got = fields.get(other.urn)
            if got is None:
                got = fields[other.urn] = field_of(other.urn, self.urn, self.base())
            return got
        if parent is self:
            return CHILD + other.path
        heads = self._heads
        if heads is None:
            heads = self._heads = {}
        head = heads.get(parent.urn)
        if head is None:  # the field of the parent's column of path "": up to its "," (generic: its ")" dropped)
            head = field_of(f"{COLUMN_PREFIX}{parent.urn},)", self.urn, self.base())
            head = heads[parent.urn] = head if head[0] == RELATIVE_COLUMN else head[:-1]
        return head + other.path if head[0] == RELATIVE_COLUMN else head + other.path + ")"


class Table:
    """One update's facts as nodes: each edge's ends, and every parent of a column among them."""

    def __init__(self, facts: Facts) -> None:
        self.nodes: dict[str, Node] = {}
        self.edges: list[tuple[str, Node, Node]] = []
        self.plain = True
        """No URN holds a separator (``\\x1d``–``\\x1f``): nothing to escape (:func:`escaped`), the common case."""
        name, last = "", None
        for rel, src, dst in sorted(facts.edges):
            if rel is not last:
                name, last = str(rel), rel
            self.edges.append((name, self.node(src), self.node(dst)))
        self.attrs: list[tuple[str, str]] = sorted((str(k), v) for k, v in facts.attrs.items())

    def node(self, urn: str) -> Node:
        found = self.nodes.get(urn)
        if found is None:
            if self.plain and ("\x1d" in urn or "\x1e" in urn or "\x1f" in urn):
                self.plain = False
            split = bucket_of(urn)
            found = Node(urn, None, "") if split is None else Node(urn, self.node(split[0]), split[1])
            self.nodes[urn] = found
        return found


def encode_body(facts: Facts) -> str:
    """:func:`encode_table` of ``facts``."""
    return encode_table(Table(facts))


def encode_table(table: Table) -> str:
    """A record's facts: ``<attribute digest>\\n<attribute names>\\n<nodes>\\n<edges>`` — canonical (equal facts ⇔
    equal bodies), and compact: nodes are listed once, by :func:`generic_field`, columns as groups ``\\x1f<index of
    their parent>\\x1f<path>\\x1f<path>…`` after their parent, or ``\\x1f<index>\\x1f\\x1d<n>`` for the paths of
    the ``n``-th group again (entries ended by ``\\x1e``); edges per relation as ``rel:s,d,s,d,…`` of node indexes,
    ``-k`` standing for ``k`` more pairs each one step (the last two pairs' difference) on (a dataset pair's column
    edges are one run). Attribute values are not kept (see :func:`attr_digest`)."""
    attrs = dict(table.attrs)
    names = ",".join(k for k, _ in table.attrs)
    index, listing = _listing(table)
    by_rel: dict[str, list[tuple[int, int]]] = {}
    for rel, src, dst in table.edges:
        pairs = by_rel.get(rel)
        if pairs is None:
            pairs = by_rel[rel] = []
        pairs.append((index[src.urn], index[dst.urn]))
    edges = ";".join(f"{rel}:{_runs(sorted(by_rel[rel]))}" for rel in sorted(by_rel))
    return f"{attr_digest(attrs)}\n{names}\n{listing}\n{edges}"


def _listing(table: Table) -> tuple[dict[str, int], str]:
    """(node → index, the listing) of the table's nodes: by depth (a parent before its columns), then by the parent's
    spelling, then by path, so that a parent's columns are one group."""
    keyed: list[tuple[int, str, str, str]] = []
    for node in table.nodes.values():
        parent = node.parent
        keyed.append((node.depth, node.generic() if parent is None else parent.generic(), node.path, node.urn))
    keyed.sort()
    nodes = table.nodes
    index: dict[str, int] = {}
    parts: list[str] = []
    groups: dict[str, int] = {}  # a group's paths, as listed → its number (a later group of the same paths says so)
    group: Node | None = None  # the parent of the column group being listed
    paths: list[str] = []
    for _, g, path, urn in keyed:
        node = nodes[urn]
        index[urn] = len(index)
        parent = node.parent
        if parent is None:
            parts.append((g if table.plain else escaped(g)) + BUCKET_END)
            continue
        if parent is not group:
            if group is not None:
                _close_group(parts, paths, groups)
            parts.append(f"{COUNT_MARK}{index[parent.urn]}")
            group, paths = parent, []
        paths.append(COUNT_MARK + (path if table.plain else escaped(path)))
    if group is not None:
        _close_group(parts, paths, groups)
    return index, "".join(parts)


def _close_group(parts: list[str], paths: list[str], groups: dict[str, int]) -> None:
    """End a column group: its paths, or ``\x1f\x1d<n>`` when group ``n`` listed the same ones (a dataset pair's
    columns of the same names, the common case)."""
    listed = "".join(paths)
    same = groups.get(listed)
    if same is None:
        groups[listed] = len(groups)
        parts.append(listed)
    else:
        parts.append(f"{COUNT_MARK}{BUCKET_ESCAPE}{same}")
    parts.append(BUCKET_END)


def _runs(pairs: list[tuple[int, int]]) -> str:
    out: list[str] = []
    prev_s, prev_d = pairs[0]
    out.append(str(prev_s))
    out.append(str(prev_d))
    step_s, step_d, has_step = 0, 0, False
    j, n = 1, len(pairs)
    while j < n:
        s, d = pairs[j]
        if has_step and s - prev_s == step_s and d - prev_d == step_d:
            k = 0
            while j < n and pairs[j][0] - prev_s == step_s and pairs[j][1] - prev_d == step_d:
                prev_s, prev_d = pairs[j]
                j += 1
                k += 1
            out.append(str(-k))
        else:
            out.append(str(s))
            out.append(str(d))
            step_s, step_d, has_step = s - prev_s, d - prev_d, True
            prev_s, prev_d = s, d
            j += 1
    return ",".join(out)


def decode_body(body: str) -> tuple[frozenset[Edge], list[str]]:
    """(edges, attribute names) of a record's :func:`encode_body`."""
    _, names, rest = body.split("\n", 2)
    listing, edges_text = rest.rsplit("\n", 1)
    nodes: list[str] = []
    groups: list[list[str]] = []
    for entry in listing.split(BUCKET_END)[:-1]:
        if entry.startswith(COUNT_MARK):
            parts = entry.split(COUNT_MARK)
            parent = nodes[int(parts[1])]
            if len(parts) == 3 and parts[2].startswith(BUCKET_ESCAPE) and parts[2][1:].isdigit():
                paths = groups[int(parts[2][1:])]
            else:
                paths = [unescaped(p) for p in parts[2:]]
                groups.append(paths)
            for path in paths:
                nodes.append(f"{COLUMN_PREFIX}{parent},{path})")
        else:
            nodes.append(expand(unescaped(entry)))
    edges: set[Edge] = set()
    if edges_text:
        for part in edges_text.split(";"):
            rel, _, ints = part.partition(":")
            r = Rel(rel)
            for s, d in _pairs(ints):
                edges.add((r, nodes[s], nodes[d]))
    return frozenset(edges), names.split(",") if names else []


def _pairs(text: str) -> list[tuple[int, int]]:
    pairs: list[tuple[int, int]] = []
    numbers = [int(x) for x in text.split(",")]
    i = 0
    while i < len(numbers):
        x = numbers[i]
        if x < 0:
            (s1, d1), (s2, d2) = pairs[-2], pairs[-1]
            step_s, step_d = s2 - s1, d2 - d1
            for _ in range(-x):
                s2, d2 = s2 + step_s, d2 + step_d
                pairs.append((s2, d2))
            i += 1
        else:
            pairs.append((x, numbers[i + 1]))
            i += 2
    return pairs


# --- the write plan ------------------------------------------------------------------------------------------------
class HomeWrites:
    """What one update moves in one home's keys: counts (non-column nodes' hashes: ``o:<rel>``/``i:<rel>``, field →
    delta), bucket entries (its columns' hashes: ``oc:<rel>``/``ic:<rel>``, path → entry → delta) and, in the
    entity's own home, its attributes (set, deleted). Keys are named by their suffix after the home's hash tag,
    ``tag`` (:func:`spelled`)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.counts: dict[str, dict[str, int]] = {}
        self.buckets: dict[str, dict[str, dict[str, int]]] = {}
        self.sets: list[str] = []
        self.deletes: list[str] = []

    def count(self, suffix: str, field: str, delta: int) -> None:
        fields = self.counts.get(suffix)
        if fields is None:
            fields = self.counts[suffix] = {}
        fields[field] = fields.get(field, 0) + delta

    def entry(self, suffix: str, path: str, entry: str, delta: int) -> None:
        paths = self.buckets.get(suffix)
        if paths is None:
            paths = self.buckets[suffix] = {}
        entries = paths.get(path)
        if entries is None:
            entries = paths[path] = {}
        entries[entry] = entries.get(entry, 0) + delta

    def suffixes(self) -> list[str]:
        """The data keys touched (suffixes), ``a`` (the attribute hash) last when attributes move."""
        out = [s for s, f in self.counts.items() if any(f.values())]
        out += [s for s, p in self.buckets.items() if any(any(e.values()) for e in p.values())]
        if self.sets or self.deletes:
            out.append("a")
        return out

    def ops(self, first: int) -> list[str]:
        """The scripts' ARGV tail for these moves, the data keys being ``KEYS[first…]`` in :meth:`suffixes`' order:
        groups ``c, key, n, (field, delta) × n``, ``b, key, n, (path, entry, delta) × n``, ``s, key, n, (name,
        value) × n``, ``d, key, n, name × n``."""
        out: list[str] = []
        at = first
        for fields in self.counts.values():
            moved = [(f, d) for f, d in fields.items() if d]
            if not moved:
                continue
            out += ("c", str(at), str(len(moved)))
            for f, d in moved:
                out.append(f)
                out.append(str(d))
            at += 1
        for paths in self.buckets.values():
            items: list[str] = []
            for path, entries in paths.items():
                for e, d in entries.items():
                    if d:
                        items.append(path)
                        items.append(e)
                        items.append(str(d))
            if not items:
                continue
            out += ("b", str(at), str(len(items) // 3), *items)
            at += 1
        if self.sets or self.deletes:
            if self.sets:
                out += ("s", str(at), str(len(self.sets) // 2), *self.sets)
            if self.deletes:
                out += ("d", str(at), str(len(self.deletes)), *self.deletes)
        return out


def plan(entity: str, before: Facts | None, after: Facts | None, table: Table | None = None) -> dict[str, HomeWrites]:
    """The moves that replace ``before`` (None: no record, or a tombstone) by ``after`` (None: a delete), by home
    node (``table``: ``after``'s, when the caller has it). The edges in ``before`` and not in ``after`` are withdrawn
    (−1), the new ones added (+1), each on both sides (forward at its source, reverse at its destination; a node's own
    ``has_column`` edge has no reverse); ``entity``'s attributes are set to ``after``'s and the ones ``before`` had
    and ``after`` lacks deleted."""
    homes: dict[str, HomeWrites] = {}
    if before is None or not before.edges:
        if after is not None:
            _moves(homes, table if table is not None else Table(after), 1)
    else:
        new = after.edges if after is not None else frozenset()
        _moves(homes, Table(Facts(before.edges - new)), -1)
        _moves(homes, Table(Facts(new - before.edges)), 1)
    old_attrs = before.attrs if before is not None else {}
    new_attrs = after.attrs if after is not None else {}
    if old_attrs or new_attrs:
        own = homes.get(entity)
        if own is None:
            own = homes[entity] = HomeWrites(spelled(entity))
        for name in sorted(str(k) for k in old_attrs.keys() - new_attrs.keys()):
            own.deletes.append(name)
        for name, value in sorted((str(k), v) for k, v in new_attrs.items()):
            own.sets.append(name)
            own.sets.append(value)
    return homes


def _home(homes: dict[str, HomeWrites], node: Node) -> HomeWrites:
    found = homes.get(node.urn)
    if found is None:
        found = homes[node.urn] = HomeWrites(node.base())
    return found


def _moves(homes: dict[str, HomeWrites], table: Table, delta: int) -> None:
    """Each edge of ``table`` moved by ``delta`` on both sides."""
    names: tuple[str, str, str, str] = ("", "", "", "")
    last = ""
    own_rel = str(Rel.HAS_COLUMN)
    plain = table.plain
    for rel, src, dst in table.edges:
        if rel != last:
            names, last = ("oc:" + rel, "o:" + rel, "ic:" + rel, "i:" + rel), rel
        sp, dp = src.parent, dst.parent
        if sp is not None:
            entry = sp.field(dst)
            _home(homes, sp).entry(names[0], src.path, entry if plain else escaped(entry), delta)
        else:
            _home(homes, src).count(names[1], src.field(dst), delta)
            if dp is src and rel == own_rel:
                continue  # a node's own column: no reverse entry (the column's URN names the node)
        if dp is not None:
            entry = dp.field(src)
            _home(homes, dp).entry(names[2], dst.path, entry if plain else escaped(entry), delta)
        else:
            _home(homes, dst).count(names[3], dst.field(src), delta)


def decode_facts(body: str, values: dict[str, str]) -> Facts:
    """The facts of a record body, its attributes' values taken from ``values`` (the entity's attribute hash)."""
    edges, names = decode_body(body)
    return Facts(edges, {Attr(n): values[n] for n in names if n in values})
