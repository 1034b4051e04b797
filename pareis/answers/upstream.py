"""Walks up the lineage from a model version, batched for a store that answers a frontier per round trip.

* Column ancestors (DESIGN §2.4 "upstream"): a column's lineage parents (column edges, every known column of a
  whole-dataset upstream) and its sibling twins (the same-name column of a sibling dataset), transitively — what
  :func:`pareis.core.graph.upstream_columns` and :func:`~pareis.core.graph.sibling_columns` give.
* Table-level regions: a dataset's table-level parents (lineage and column-covered upstreams, siblings, inputs of
  the processes writing it), transitively, for several seed sets at once (:mod:`pareis.answers.reach` prunes the
  incidents that cannot reach a version with them).

:func:`walk_up` does both in lockstep: every level of both walks costs the same two round trips, so a gate call
pays for the deeper of the two walks, not their sum.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

from pareis.core.fieldpath import column_urn, parent_of, path_of
from pareis.core.graph import Adjacency, LineageView, Names, Query, Rel, union

K = TypeVar("K", bound=Hashable)


def walk_up(view: LineageView, columns: set[str], seeds: Mapping[K, set[str]]) -> tuple[set[str], dict[K, set[str]]]:
    """``columns`` with all their column ancestors, and each seed set with every dataset upstream of it at table
    level (the seeds included)."""
    col_seen, col_front = set(columns), set(columns)
    seen = {key: set(start) for key, start in seeds.items()}
    todo = {key: set(start) for key, start in seeds.items() if start}
    while col_front or todo:
        cols = sorted(col_front)
        owners = sorted({parent_of(c) for c in cols})
        nodes = sorted(set().union(*todo.values())) if todo else []
        direct, whole, sib, sib_rev, ups, covered, tsib, tsib_rev, writers = view.lookup(
            [
                Query(Rel.COLUMN, cols, True),
                Query(Rel.DATASET_COLUMN, cols, True),
                Query(Rel.SIBLING, owners),
                Query(Rel.SIBLING, owners, True),
                Query(Rel.DATASET, nodes, True),
                Query(Rel.COVERED, nodes, True),
                Query(Rel.SIBLING, nodes),
                Query(Rel.SIBLING, nodes, True),
                Query(Rel.WRITES, nodes, True),
            ]
        )
        twins_of = {d: (sib[d] | sib_rev[d]) - {d} for d in owners}
        schemas, inputs = view.lookup(
            [
                Query(Rel.HAS_COLUMN, sorted(union(whole) | union(twins_of))),
                Query(Rel.READS, sorted(union(writers)), True),
            ]
        )
        col_front = _column_parents(cols, direct, whole, twins_of, schemas) - col_seen
        col_seen |= col_front
        parents = {
            d: set(ups[d] | covered[d] | tsib[d] | tsib_rev[d]).union(*(inputs[p] for p in writers[d])) - {d}
            for d in nodes
        }
        nxt: dict[K, set[str]] = {}
        for key, frontier in todo.items():
            new = set().union(*(parents[d] for d in frontier)) - seen[key]
            if new:
                seen[key] |= new
                nxt[key] = new
        todo = nxt
    return col_seen, seen


def _column_parents(
    cols: list[str],
    direct: Adjacency,
    whole: Adjacency,
    twins_of: Mapping[str, frozenset[str]],
    schemas: Adjacency,
) -> set[str]:
    names = {d: Names(schema) for d, schema in schemas.items() if schema}
    found: set[str] = set()
    for c in cols:
        found |= direct[c].union(*(schemas[d] for d in whole[c]))
        path = path_of(c)
        for twin in twins_of[parent_of(c)]:
            found.update(names[twin].match(path) if twin in names else [column_urn(twin, path)])
    return found
