"""The read plan of a batch of lookups in the Redis lineage store (layout 3, :mod:`pareis.store.lineage_redis`): which
keys and fields a batch of queries asks, and the adjacency its replies stand for.

A query's nodes are read where :mod:`~pareis.store.lineage_redis_encoding` keeps their edges: a column from its
parent's bucket for the relation (one ``HMGET`` of the frontier's columns per bucket, by the fields script), any
other node from its own hash (``HKEYS``, by the read script); a reverse ``has_column`` query on a column also asks
``HEXISTS`` in the forward schema hash of each dataset its URN may name. A node's key names are spelled once per
batch, however many of its queries ask it.

Compiled to a C extension by mypyc at install (``pyproject.toml`` ``[tool.pareis] compiled``): a walk's reads are
mostly this loop over its frontier (a small blast asks ~100 nodes, a large one ~100,000). mypyc checks the
annotations at run time, so they must be exact."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pareis.core.fieldpath import COLUMN_PREFIX
from pareis.core.graph import Rel
from pareis.store.lineage_redis_encoding import CHILD, bucket_nodes, bucket_of, field_nodes, spelled

HAS_COLUMN: str = Rel.HAS_COLUMN.value
_NONE: frozenset[str] = frozenset()


class ReadPlan:
    """What a batch of queries (``(relation, nodes, reverse)`` each) asks of the index under ``prefix``; ``slot_of``:
    the cluster slot of a hash tag (:func:`pareis.store.redis_servers.slot_of`), None when keys are not routed by slot
    (every slot is then 0). :meth:`answers` reads the replies.

    ``hashes`` / ``hash_slots``: the hashes whose fields (``HKEYS``) are asked. ``buckets`` / ``bucket_slots`` /
    ``bucket_fields``: the column buckets and the fields asked of each. ``checks`` / ``check_slots``: ``(key, field)``
    of each ``HEXISTS``."""

    def __init__(
        self, prefix: str, slot_of: Callable[[str], int] | None, queries: list[tuple[str, list[str], bool]]
    ) -> None:
        self.hashes: list[str] = []
        self.hash_slots: list[int] = []
        self.buckets: list[str] = []
        self.bucket_slots: list[int] = []
        self.bucket_fields: list[list[str]] = []
        self.checks: list[tuple[str, str]] = []
        self.check_slots: list[int] = []
        self._prefix = prefix
        self._slot_of = slot_of
        self._homes: dict[str, tuple[str, int]] = {}
        self._nodes: list[list[str]] = []
        self._owners: list[list[str]] = []
        """Per query and node: its bucket's parent ("" for a node read from its own hash, and for a column whose
        parent is spelled empty: :attr:`_pos` tells them apart)."""
        self._at: list[list[int]] = []
        """Per query and node: its hash's index, or its bucket's."""
        self._pos: list[list[int]] = []
        """Per query and node: its field's position in its bucket's (-1 for a hash)."""
        self._spelled_as: list[dict[int, list[tuple[str, int]]]] = []
        """Per query: node index → the (dataset, check index) of its ``HEXISTS``."""
        for rel, nodes, reverse in queries:
            self._plan(rel, nodes, reverse)

    def _home(self, node: str) -> tuple[str, int]:
        """The start of ``node``'s key names (the prefix and its hash tag) and its slot."""
        found = self._homes.get(node)
        if found is None:
            tag = spelled(node)
            found = (self._prefix + "{" + tag + "}", 0 if self._slot_of is None else self._slot_of(tag))
            self._homes[node] = found
        return found

    def _plan(self, rel: str, nodes: list[str], reverse: bool) -> None:
        side = ("i:" if reverse else "o:") + rel
        bucket_side = ("ic:" if reverse else "oc:") + rel
        schema = reverse and rel == HAS_COLUMN
        groups: dict[str, int] = {}  # bucket's parent → its index in buckets
        fields_at: list[dict[str, int]] = []  # per bucket of this query: field → position
        first = len(self.buckets)
        owners: list[str] = []
        at: list[int] = []
        pos: list[int] = []
        checks: dict[int, list[tuple[str, int]]] = {}
        for i, n in enumerate(nodes):
            bucket = bucket_of(n)
            if bucket is None:
                home, slot = self._home(n)
                owners.append("")
                at.append(len(self.hashes))
                pos.append(-1)
                self.hashes.append(home + side)
                self.hash_slots.append(slot)
            else:
                parent, field = bucket
                index = groups.get(parent, -1)
                if index < 0:
                    home, slot = self._home(parent)
                    index = groups[parent] = len(self.buckets)
                    self.buckets.append(home + bucket_side)
                    self.bucket_slots.append(slot)
                    self.bucket_fields.append([])
                    fields_at.append({})
                known = fields_at[index - first]
                where = known.get(field, -1)
                if where < 0:
                    where = known[field] = len(known)
                    self.bucket_fields[index].append(field)
                owners.append(parent)
                at.append(index)
                pos.append(where)
            if schema:
                found: list[tuple[str, int]] = []
                for dataset, rest in _spellings(n):
                    home, slot = self._home(dataset)
                    found.append((dataset, len(self.checks)))
                    self.checks.append((home + "o:" + HAS_COLUMN, CHILD + rest))
                    self.check_slots.append(slot)
                checks[i] = found
        self._nodes.append(nodes)
        self._owners.append(owners)
        self._at.append(at)
        self._pos.append(pos)
        self._spelled_as.append(checks)

    def answers(self, keys: list[Any], values: list[Any], exists: list[Any]) -> list[dict[str, frozenset[str]]]:
        """One mapping per query, every queried node a key: from ``keys`` (each hash's fields, in order of
        :attr:`hashes`), ``values`` (each bucket's values of its fields, in order) and ``exists`` (each check's
        reply)."""
        out: list[dict[str, frozenset[str]]] = []
        for q in range(len(self._nodes)):
            nodes = self._nodes[q]
            owners = self._owners[q]
            at = self._at[q]
            pos = self._pos[q]
            checks = self._spelled_as[q]
            answer: dict[str, frozenset[str]] = {}
            for i in range(len(nodes)):
                n = nodes[i]
                found: set[str] | None = None
                if pos[i] < 0:  # a node's own hash
                    got = keys[at[i]]
                    if got:
                        found = field_nodes(got, n)
                else:  # a column in its parent's bucket (the parent may be spelled empty: ``(,path)``)
                    value = values[at[i]][pos[i]]
                    if value is not None:
                        found = bucket_nodes(value, owners[i])
                if checks:
                    spelled_as = checks.get(i)
                    if spelled_as:
                        if found is None:
                            found = set()
                        for dataset, c in spelled_as:
                            if exists[c]:
                                found.add(dataset)
                answer[n] = frozenset(found) if found else _NONE  # most nodes have none: one shared empty set
            out.append(answer)
        return out


def _spellings(column: str) -> list[tuple[str, str]]:
    """Every (dataset, rest) with ``column == urn:li:schemaField:(<dataset>,<rest>)`` and ``<dataset>`` not itself
    a column: where a child-of-the-key ``has_column`` field for it may be (a plan writes one only for a non-column
    source)."""
    if not (column.startswith(COLUMN_PREFIX) and column.endswith(")")):
        return []
    inner = column[len(COLUMN_PREFIX) : -1]
    return [(inner[:i], inner[i + 1 :]) for i, c in enumerate(inner) if c == "," and bucket_of(inner[:i]) is None]
