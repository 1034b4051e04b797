"""Which columns feed which features and models (DESIGN §2.5): the exposure a reliability score and a gap rank use.

Two walks over the lineage view, both batched per frontier and cycle-safe:

* :func:`model_upstream` — from models up: each model's feature source columns (DESIGN §2.1: a schemaField
  source; a dataset source's column named like the feature, case-insensitive — spelled in it when its schema is
  unknown; a dataset source whose schema lacks that name, or the datasets a model's training runs read when it
  lists no features, feed it at table precision), then every column ancestor of those, with sibling twins.
* :func:`exposure` — from columns down: the features and model versions each column's lineage reaches (column
  edges, whole-dataset edges and sibling twins), by the same feature-linking rules, plus the featureless models
  trained on runs reading its dataset.

Not followed here (the blast radius follows them): table-level spread along dataset edges without column
lineage, nested-field containment and feature-table keys.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from pareis.core import catalog
from pareis.core.fieldpath import COLUMN_PREFIX, column_urn, decode_field_path, feature_name, split_column
from pareis.core.graph import (
    LineageView,
    Names,
    Query,
    Rel,
    columns_of,
    related,
    siblings_of,
    union,
    upstream_columns,
)


def _column_parts(column: str) -> tuple[str, str]:
    """(dataset, decoded path) of a column URN, as :func:`pareis.core.fieldpath.split_column` says, split at the
    last comma for the canonical URNs the index holds (a canonical path has no comma: it is percent-encoded), which
    is much cheaper than parsing the parent URN; any other spelling goes to the general parser."""
    if column.startswith(COLUMN_PREFIX) and column.endswith(")"):
        comma = column.rfind(",")
        if comma > len(COLUMN_PREFIX) and column.startswith("urn:li:", len(COLUMN_PREFIX)):
            path = column[comma + 1 : -1]
            if path and not path.startswith("[") and "(" not in path:
                return column[len(COLUMN_PREFIX) : comma], decode_field_path(path) if "%" in path else path
    return split_column(column)


column_parts = functools.lru_cache(maxsize=1 << 18)(_column_parts)
"""The cached :func:`_column_parts`: a walk meets each column several times."""


def parent_of(column: str) -> str:
    """The dataset of a column URN (:func:`column_parts`)."""
    return column_parts(column)[0]


def split_columns(columns: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``{column: column_parts(column)}`` for ``columns``, not through its cache: a survey's hundreds of thousands
    of distinct columns would only churn it. Raises as :func:`column_parts` does."""
    return {c: _column_parts(c) for c in columns}


def parents_of(columns: Iterable[str]) -> dict[str, str]:
    """``{column: parent_of(column)}`` for ``columns`` (:func:`split_columns`)."""
    return {c: parts[0] for c, parts in split_columns(columns).items()}


def path_of(column: str) -> str:
    """The decoded path of a column URN (:func:`column_parts`)."""
    return column_parts(column)[1]


def sibling_columns(view: LineageView, columns: Iterable[str]) -> dict[str, frozenset[str]]:
    """:func:`pareis.core.graph.sibling_columns` with :func:`column_parts` for the frontier."""
    cols = sorted(set(columns))
    parts = {c: column_parts(c) for c in cols}
    sibs = siblings_of(view, {parent for parent, _ in parts.values()})
    if not any(sibs.values()):
        return {c: frozenset() for c in cols}
    schemas = columns_of(view, union(sibs))
    names = {d: Names(schema) for d, schema in schemas.items() if schema}
    out: dict[str, frozenset[str]] = {}
    for c in cols:
        parent, path = parts[c]
        found: set[str] = set()
        for d in sibs[parent]:
            found.update(names[d].match(path) if d in names else [column_urn(d, path)])
        out[c] = frozenset(found)
    return out


def downstream_columns(view: LineageView, columns: Iterable[str]) -> dict[str, frozenset[str]]:
    """:func:`pareis.core.graph.downstream_columns` with :func:`column_parts` for the datasets."""
    cols = sorted(set(columns))
    parents = {c: parent_of(c) for c in cols}
    direct, whole = view.lookup([Query(Rel.COLUMN, cols), Query(Rel.DATASET_COLUMN, sorted(set(parents.values())))])
    return {c: direct[c] | whole[parents[c]] for c in cols}


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
class Exposure:
    """What each column feeds: features and model versions (sorted tuples); ``groups``, when the answer came from
    the exposure index, the group of every model named (the walk leaves it None: the caller reads them)."""

    features: Mapping[str, tuple[str, ...]]
    models: Mapping[str, tuple[str, ...]]
    groups: Mapping[str, str | None] | None = None


def _walk(view: LineageView, start: Iterable[str], *, up: bool) -> tuple[set[str], dict[str, frozenset[str]]]:
    """Closure of ``start`` along column lineage (parents when ``up``, else children) and sibling twins, with each
    node's neighbours."""
    seen = set(start)
    frontier = set(seen)
    step: dict[str, frozenset[str]] = {}
    while frontier:
        lineage = upstream_columns(view, frontier) if up else downstream_columns(view, frontier)
        twins = sibling_columns(view, frontier)
        for c in frontier:
            step[c] = lineage[c] | twins[c]
        frontier = union({c: step[c] for c in frontier}) - seen
        seen |= frontier
    return seen, step


def _reach(node: str, step: Mapping[str, frozenset[str]], memo: dict[str, frozenset[str]]) -> frozenset[str]:
    """``node`` and everything reachable from it along ``step`` (iterative; cycle-safe)."""
    hit = memo.get(node)
    if hit is not None:
        return hit
    seen = {node}
    todo = [node]
    while todo:
        for n in step.get(todo.pop(), ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    out = frozenset(seen)
    memo[node] = out
    return out


def _feature_links(view: LineageView, features: Iterable[str]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Per feature: the columns it links to (column precision) and the datasets it links to at table precision."""
    sources = catalog.feature_sources(view, features)
    datasets = sorted({s for srcs in sources.values() for s in srcs if not s.startswith("urn:li:schemaField:")})
    schemas = columns_of(view, datasets)
    names = {d: Names(schemas[d]) for d in datasets}
    columns: dict[str, set[str]] = {f: set() for f in sources}
    tables: dict[str, set[str]] = {f: set() for f in sources}
    for f, srcs in sources.items():
        for s in srcs:
            if s.startswith("urn:li:schemaField:"):
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
    links, tables = _feature_links(view, features)
    featureless = [m for m, i in infos.items() if not i.features]
    runs = catalog.runs(view, {r for m in featureless for r in infos[m].training_runs})
    _, parents = _walk(view, union({f: frozenset(c) for f, c in links.items()}), up=True)
    memo: dict[str, frozenset[str]] = {}
    per_feature = {f: frozenset().union(*(_reach(c, parents, memo) for c in links[f])) for f in features}
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


def closed_union(step: Mapping[str, Iterable[str]], values: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """For every node of ``step`` (a graph: node → successors), the union of ``values`` over the node and everything
    reachable from it. Each strongly connected component is computed once, successors first (Tarjan's algorithm,
    iterative), so the cost is linear in the graph plus the unions, whatever the overlap of the reachable sets;
    cycle-safe. Nodes whose union is empty are left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: dict[str, frozenset[str]] = {}
    empty: frozenset[str] = frozenset()
    counter = 0
    # Traversal order does not change the result (unions commute), so nothing is sorted here.
    for root in step:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(step.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(step.get(nxt, ()))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    members.append(m)
                    if m == node:
                        break
                acc: set[str] = set()
                inside = set(members)
                for m in members:
                    acc |= values.get(m, empty)
                    for nxt in step.get(m, ()):
                        if nxt not in inside:
                            acc |= out.get(nxt, empty)
                if acc:
                    frozen = frozenset(acc)
                    for m in members:
                        out[m] = frozen
    return out


def exposure(view: LineageView, columns: Iterable[str]) -> Exposure:
    """The features and model versions downstream of each column in ``columns``."""
    start = sorted(set(columns))
    reached, children = _walk(view, start, up=False)
    direct: dict[str, set[str]] = {c: set(fs) for c, fs in related(view, Rel.FEATURE_SOURCE, reached).items()}
    datasets = sorted({parent_of(c) for c in reached})
    by_dataset = related(view, Rel.FEATURE_SOURCE, datasets)
    schemas = columns_of(view, [d for d in datasets if by_dataset[d]])
    in_reach: dict[str, list[str]] = {}
    for c in reached:
        in_reach.setdefault(parent_of(c), []).append(c)
    for d in sorted(d for d in datasets if by_dataset[d]):
        known = Names(schemas[d])
        present = Names(in_reach.get(d, ()))
        for f in by_dataset[d]:
            named = known.match(feature_name(f)) if schemas[d] else present.match(feature_name(f))
            for c in named if named else (schemas[d] or ()):
                if c in direct:
                    direct[c].add(f)
    reads = related(view, Rel.READS, datasets)
    trained = related(view, Rel.TRAINS, union(reads))
    table_models = sorted(union(trained))
    listed = related(view, Rel.FEATURE_MODEL, table_models, reverse=True)
    featureless = {m for m in table_models if not listed[m]}
    by_table = {d: {m for p in reads[d] for m in trained[p] if m in featureless} for d in datasets}
    any_table = any(by_table.values())
    consumers = related(view, Rel.FEATURE_MODEL, union({c: frozenset(fs) for c, fs in direct.items()}))
    tables = {c: by_table.get(parent_of(c), set()) for c in reached} if any_table else {}
    below_f = closed_union(children, {c: frozenset(fs) for c, fs in direct.items() if fs})
    below_t = closed_union(children, {c: frozenset(ms) for c, ms in tables.items() if ms}) if any_table else {}
    feats: dict[str, tuple[str, ...]] = {}
    mods: dict[str, tuple[str, ...]] = {}
    for c in start:
        fs = below_f.get(c, frozenset())
        ms = set().union(*(consumers[f] for f in fs)) if fs else set()
        ms |= below_t.get(c, frozenset())
        feats[c] = tuple(sorted(fs))
        mods[c] = tuple(sorted(ms))
    return Exposure(feats, mods)


def sibling_classes(view: LineageView, datasets: Iterable[str]) -> dict[str, frozenset[str]]:
    """Each dataset's sibling class (itself included): the closure of ``siblings`` in both directions."""
    start = set(datasets)
    adjacency: dict[str, frozenset[str]] = {}
    frontier = set(start)
    while frontier:
        nodes = sorted(frontier)
        fwd, rev = view.lookup([Query(Rel.SIBLING, nodes), Query(Rel.SIBLING, nodes, True)])
        for d in nodes:
            adjacency[d] = (fwd[d] | rev[d]) - {d}
        frontier = union({d: adjacency[d] for d in nodes}) - adjacency.keys()
    out: dict[str, frozenset[str]] = {}
    for d in sorted(start):
        out[d] = _reach(d, adjacency, {})
    return out
