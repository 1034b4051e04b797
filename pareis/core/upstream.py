"""What lies upstream of model versions (DESIGN §2.1 "the one upstream", §2.4), walked up the lineage view.

:func:`model_upstream` — each version's feature source columns (DESIGN §2.1: a schemaField source; a dataset
source's column named like the feature, case-insensitive — spelled in it when its schema is unknown; a dataset
source whose schema lacks that name, or the datasets a version's training runs read when it lists no features, feed
it at table precision), then every column ancestor of those, with sibling twins.

:func:`walk_up` is the walk itself, batched for a store that answers a frontier per round trip:

* column ancestors: a column's lineage parents (column edges, every known column of a whole-dataset upstream) and
  its sibling twins (the same-name column of a sibling dataset), transitively;
* table-level regions: a dataset's table-level parents (lineage and column-covered upstreams, siblings, inputs of
  the processes writing it), transitively, for several seed sets at once (:mod:`pareis.answers.reach` prunes the
  incidents that cannot reach a version with them).

Both walks go in lockstep: every level of both costs the same two round trips, so a caller pays for the deeper of
the two walks, not their sum.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pareis.core import catalog
from pareis.core.closures import reach
from pareis.core.fieldpath import column_parts, column_urn, feature_name, is_column
from pareis.core.graph import Adjacency, LineageView, Names, Query, Rel, columns_of, union

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class ModelUpstream:
    """What feeds one model version: source columns per feature, their ancestors, and table-precision inputs."""

    model: str
    group: str | None
    features: tuple[str, ...]
    columns: frozenset[str]
    """Every column feeding it: feature source columns and their column ancestors (with sibling twins)."""
    table_datasets: frozenset[str]
    """Datasets feeding it at table precision."""
    feature_columns: Mapping[str, frozenset[str]]
    """Feature → the columns feeding it (source columns and their ancestors)."""


@dataclass(frozen=True)
class Walk:
    """What :func:`walk_up` found: the columns reached with each one's parents, and each region's datasets."""

    columns: frozenset[str]
    parents: Mapping[str, frozenset[str]]
    """Column → its lineage parents and sibling twins."""

    def reach(self, starts: Iterable[str], memo: dict[str, frozenset[str]]) -> frozenset[str]:
        """``starts`` and every column ancestor of them (``memo`` remembers each start's)."""
        return frozenset().union(*(reach(c, self.parents, memo) for c in starts))


def feature_links(view: LineageView, features: Iterable[str]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Per feature: the columns it links to (column precision) and the datasets it links to at table precision."""
    sources = catalog.feature_sources(view, features)
    datasets = sorted({s for srcs in sources.values() for s in srcs if not is_column(s)})
    schemas = columns_of(view, datasets)
    names = {d: Names(schemas[d]) for d in datasets}
    columns: dict[str, set[str]] = {f: set() for f in sources}
    tables: dict[str, set[str]] = {f: set() for f in sources}
    for f, srcs in sources.items():
        for s in srcs:
            if is_column(s):
                columns[f].add(s)
                continue
            named = names[s].match(feature_name(f))
            if named:
                columns[f].update(named)
            elif schemas[s]:
                tables[f].add(s)
            else:
                columns[f].add(column_urn(s, feature_name(f)))
    return columns, tables


def model_upstream(view: LineageView, models: Iterable[str]) -> dict[str, ModelUpstream]:
    """The upstream of each model version (see the module docstring); unknown models come back empty."""
    infos = catalog.models(view, models)
    features = sorted({f for i in infos.values() for f in i.features})
    links, tables = feature_links(view, features)
    featureless = [m for m, i in infos.items() if not i.features]
    runs = catalog.runs(view, {r for m in featureless for r in infos[m].training_runs})
    walk, _ = walk_up(view, union({f: frozenset(c) for f, c in links.items()}), {})
    memo: dict[str, frozenset[str]] = {}
    per_feature = {f: walk.reach(links[f], memo) for f in features}
    out = {}
    for m, info in infos.items():
        table = set().union(*(tables[f] for f in info.features)) if info.features else set()
        if not info.features:
            table.update(d for r in info.training_runs for d in runs[r].inputs)
        cols = frozenset().union(*(per_feature[f] for f in info.features)) if info.features else frozenset()
        out[m] = ModelUpstream(
            model=m,
            group=info.group,
            features=info.features,
            columns=cols,
            table_datasets=frozenset(table),
            feature_columns={f: per_feature[f] for f in info.features},
        )
    return out


def walk_up(view: LineageView, columns: set[str], seeds: Mapping[K, set[str]]) -> tuple[Walk, dict[K, set[str]]]:
    """``columns`` with all their column ancestors, and each seed set with every dataset upstream of it at table
    level (the seeds included); see the module docstring."""
    col_seen, col_front = set(columns), set(columns)
    col_parents: dict[str, frozenset[str]] = {}
    seen = {key: set(start) for key, start in seeds.items()}
    todo = {key: set(start) for key, start in seeds.items() if start}
    while col_front or todo:
        cols = sorted(col_front)
        owners = sorted({column_parts(c)[0] for c in cols})
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
        found = _column_parents(cols, direct, whole, twins_of, schemas)
        col_parents.update(found)
        col_front = union(found) - col_seen
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
    return Walk(frozenset(col_seen), col_parents), seen


def _column_parents(
    cols: list[str],
    direct: Adjacency,
    whole: Adjacency,
    twins_of: Mapping[str, frozenset[str]],
    schemas: Adjacency,
) -> dict[str, frozenset[str]]:
    names = {d: Names(schema) for d, schema in schemas.items() if schema}
    out: dict[str, frozenset[str]] = {}
    for c in cols:
        found = set(direct[c].union(*(schemas[d] for d in whole[c])))
        parent, path = column_parts(c)
        for twin in twins_of[parent]:
            found.update(names[twin].match(path) if twin in names else [column_urn(twin, path)])
        out[c] = frozenset(found)
    return out
