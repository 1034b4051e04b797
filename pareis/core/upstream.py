"""The one upstream of model versions (DESIGN §2.1 "the one upstream", §2.4): the columns, datasets and assertions
whose failure reaches a version. The gate, protect (and the reliability scores), the evidence pack and the exposure
index all read it from :func:`model_upstream`, so no answer names a dataset as upstream of a model that another
answer says feeds no model.

**Links** (:func:`feature_links`; DESIGN §2.1): a feature (or primary key) links to a schemaField source; to a
dataset source's column named like it (exact, else case-insensitive), or, when that dataset's schema is unknown, to
the column of that name spelled in it; a dataset source whose known schema lacks the name links it to the whole
dataset (table precision: every column of it). A feature of a feature table keyed by a primary key is linked
through the key's links too (a bad join key breaks the table's point-in-time join). A version listing no features
reads its training runs' input datasets, at table precision.

**Upstream columns**: every column a failure of which reaches a linked column along the blast radius's spread
(:mod:`pareis.core.spread`: lineage, sibling twins, containment), walked up. The walk's states mirror the
spread's: (column, part), part :data:`ANY` when any bad part of the column reaches a link, ``""`` when the column
itself reaches it if wholly bad, ``".x"`` when only its field ``x`` matters. From a state:

* lineage parents (column edges, every known column of a whole-dataset upstream) and sibling twins: same part;
* for :data:`ANY` or ``""``: each struct ``s`` enclosing the column at ``rest``, as (s, rest) and (s, ``""``) —
  a bad struct poisons its fields, a bad field makes its struct partly bad at that field;
* for :data:`ANY`: every column nested in it, :data:`ANY` (a bad ``a.b`` poisons a reader of ``a``);
* for a part ``".x"``: the column nested in it at ``.x`` (as ``""``) and each struct nested in it on the way to
  ``.x`` (with the rest of that path) — never a field outside ``.x``.

A column is upstream when it is reached as :data:`ANY` or ``""``: so an assertion on ``a.b`` is upstream of a model
reading ``a``, and one on ``a.c`` is not upstream of a model reading ``a.b``.

**Upstream datasets**: those of the upstream columns and the table-precision ones. **Upstream assertions**: the
assertions the index defines that name an upstream column, or name none and check an upstream dataset.

:func:`model_upstream` walks every version asked for at once, and optionally table-level *regions* in lockstep
(a dataset's lineage and column-covered upstreams, siblings, inputs of the processes writing it, transitively: what
:mod:`pareis.answers.reach` prunes incidents with), so each level of both walks costs the same two round trips.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Generic, TypeVar

from pareis.core import catalog
from pareis.core.closures import reach
from pareis.core.containment import Containment
from pareis.core.fieldpath import column_parts, column_urn, feature_name, index_parent, index_path, is_column
from pareis.core.graph import Adjacency, LineageView, Memo, Names, Query, Rel, columns_of, memoised, related, union
from pareis.core.walk_cache import WalkCache

K = TypeVar("K", bound=Hashable)

ANY = "*"
"""The part of a state meaning: any bad part of the column reaches the model."""


@dataclass(frozen=True)
class ModelUpstream:
    """What feeds one model version (see the module docstring)."""

    model: str
    group: str | None
    features: tuple[str, ...]
    """The live features it lists."""
    feature_columns: Mapping[str, frozenset[str]]
    """Feature → the columns feeding it at column precision (its links, its keys' links, and what feeds those)."""
    table_datasets: frozenset[str]
    """Datasets feeding it at table precision."""
    table_columns: frozenset[str]
    """The columns of the table-precision datasets and what feeds them."""
    source_columns: frozenset[str] = frozenset()
    """The columns its features link to directly (not through a key)."""
    removed_features: tuple[str, ...] = ()
    """Features it lists that are removed (``status.removed``)."""
    sources: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Feature → its live declared sources."""
    removed_sources: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Feature → its declared sources that are removed."""
    assertions: frozenset[str] = frozenset()
    """The upstream assertions the index defines."""

    @cached_property
    def columns(self) -> frozenset[str]:
        """Every upstream column."""
        return frozenset().union(self.table_columns, *self.feature_columns.values())

    @cached_property
    def datasets(self) -> frozenset[str]:
        """Every upstream dataset: those of the upstream columns and the table-precision ones."""
        return frozenset({index_parent(c) for c in self.columns} | self.table_datasets)


@dataclass(frozen=True)
class Links:
    """What features (and primary keys) link to: per URN, the columns (column precision) and the datasets (table
    precision); and per feature, the primary keys of the feature tables holding it."""

    columns: Mapping[str, frozenset[str]]
    tables: Mapping[str, frozenset[str]]
    keys: Mapping[str, frozenset[str]]

    def column_links(self, feature: str) -> frozenset[str]:
        """The columns ``feature`` is linked to, itself or through a key."""
        return self.columns[feature].union(*(self.columns[k] for k in self.keys[feature]))

    def table_links(self, feature: str) -> frozenset[str]:
        """The datasets ``feature`` is linked to at table precision, itself or through a key."""
        return self.tables[feature].union(*(self.tables[k] for k in self.keys[feature]))


def feature_links(view: LineageView, features: Iterable[str]) -> Links:
    """The :class:`Links` of ``features`` (features or primary keys) and of the keys of their feature tables."""
    wanted = sorted(set(features))
    # Two round trips, a third only for the sources of keys not asked for.
    tables_of, sources = view.lookup([Query(Rel.TABLE_FEATURE, wanted, True), Query(Rel.FEATURE_SOURCE, wanted, True)])
    keys_of_table, _ = view.lookup([Query(Rel.TABLE_KEY, sorted(union(tables_of))), _schemas_of(sources)])
    keys = {f: frozenset().union(*(keys_of_table[t] for t in tables_of[f])) - {f} for f in wanted}
    every = sorted(set(wanted) | union(keys))
    sources = catalog.feature_sources(view, every)
    datasets = sorted({s for srcs in sources.values() for s in srcs if not is_column(s)})
    schemas = columns_of(view, datasets)
    names = {d: Names(schemas[d]) for d in datasets if schemas[d]}
    columns: dict[str, frozenset[str]] = {}
    tables: dict[str, frozenset[str]] = {}
    for f in every:
        cols: set[str] = set()
        table: set[str] = set()
        for s in sources[f]:
            if is_column(s):
                cols.add(s)
            elif s not in names:
                cols.add(column_urn(s, feature_name(f)))
            elif named := names[s].match(feature_name(f)):
                cols.update(named)
            else:
                table.add(s)
        columns[f], tables[f] = frozenset(cols), frozenset(table)
    return Links(columns, tables, keys)


def _schemas_of(sources: Adjacency) -> Query:
    """The question for the schemas of the datasets among ``sources``."""
    return Query(Rel.HAS_COLUMN, sorted({s for srcs in sources.values() for s in srcs if not is_column(s)}))


def linked_features(view: LineageView, links: Links, parents: Mapping[str, str]) -> dict[str, frozenset[str]]:
    """For each column of ``parents`` (column → its dataset) linked to any, the features (and keys) of ``links``
    linked to it: at column precision, or at table precision through its dataset's schema; a key's link links every
    feature keyed by it too. Columns linked to none are left out."""
    keyed: dict[str, set[str]] = {}
    for f, ks in links.keys.items():
        for k in ks:
            keyed.setdefault(k, set()).add(f)
    by_column: dict[str, set[str]] = {}
    by_table: dict[str, set[str]] = {}
    for f, cols in links.columns.items():
        for c in cols:
            by_column.setdefault(c, set()).add(f)
    for f, ds in links.tables.items():
        for d in ds:
            by_table.setdefault(d, set()).add(f)
    schemas = columns_of(view, {d for d in parents.values() if d in by_table})
    out: dict[str, frozenset[str]] = {}
    for c, d in parents.items():
        found = set(by_column.get(c, ()))
        if d in by_table and c in schemas[d]:
            found |= by_table[d]
        if found:
            for k in list(found):
                found |= keyed.get(k, set())
            out[c] = frozenset(found)
    return out


def links_near(view: LineageView, parents: Mapping[str, str]) -> Links:
    """The :class:`Links` of every feature or primary key that may link to one of the columns of ``parents``
    (column → its dataset): a source naming the column or its dataset; and of every feature keyed by such a key —
    what :func:`linked_features` needs."""
    by_column, by_dataset = view.lookup(
        [Query(Rel.FEATURE_SOURCE, sorted(parents)), Query(Rel.FEATURE_SOURCE, sorted(set(parents.values())))]
    )
    near = union(by_column) | union(by_dataset)
    (tables,) = view.lookup([Query(Rel.TABLE_KEY, sorted(near), True)])
    (keyed,) = view.lookup([Query(Rel.TABLE_FEATURE, sorted(union(tables)))])
    return feature_links(view, near | union(keyed))


def table_models(view: LineageView, parents: Mapping[str, str]) -> dict[str, frozenset[str]]:
    """For each column of ``parents`` (column → its dataset), the model versions that list no features and whose
    training runs read its dataset, when the column is in that dataset's schema: what it feeds at table
    precision."""
    datasets = sorted(set(parents.values()))
    reads = related(view, Rel.READS, datasets)
    trained = related(view, Rel.TRAINS, union(reads))
    listed = related(view, Rel.FEATURE_MODEL, union(trained), reverse=True)
    by_dataset = {d: frozenset(m for p in reads[d] for m in trained[p] if not listed[m]) for d in datasets}
    schemas = columns_of(view, [d for d in datasets if by_dataset[d]])
    none: frozenset[str] = frozenset()
    return {c: by_dataset[d] if by_dataset[d] and c in schemas[d] else none for c, d in parents.items()}


class _Up:
    """The walk up over (column, part) states (the module docstring), with table-level regions in lockstep."""

    def __init__(self, view: Memo) -> None:
        self.view = view
        self.contained = Containment(view)
        self.state: dict[str, set[str]] = {}
        self.parents: dict[str, frozenset[str]] = {}
        self.enclosing: dict[str, list[tuple[str, str]]] = {}
        self.nested: dict[str, frozenset[str]] = {}
        self.succ: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}
        self._reached: dict[tuple[str, str], frozenset[str]] = {}

    def run(
        self, seeds: Iterable[str], regions: Mapping[K, set[str]], datasets: Iterable[str] = ()
    ) -> dict[K, set[str]]:
        """Walk up from ``seeds`` (and ``regions``); the assertions on every column met and on ``datasets`` are read
        on the way, in the same round trips."""
        pending = {(c, ANY) for c in seeds}
        also = sorted(set(datasets))
        seen = {key: set(start) for key, start in regions.items()}
        todo = {key: set(start) for key, start in regions.items() if start}
        while pending or todo:
            new = [
                (c, part)
                for c, part in sorted(pending)
                if part not in (held := self.state.get(c, set())) and ANY not in held
            ]
            for c, part in new:
                self.state.setdefault(c, set()).add(part)
            cols = sorted({c for c, _ in new} - self.parents.keys())
            nodes = sorted(set().union(*todo.values())) if todo else []
            region_parents = self._read(cols, nodes, also)
            also = []
            pending = set()
            for node in new:
                nxt = frozenset(self._successors(*node))
                self.succ[node] = nxt
                pending |= nxt
            nxt_todo: dict[K, set[str]] = {}
            for key, frontier in todo.items():
                found = set().union(*(region_parents[d] for d in frontier)) - seen[key]
                if found:
                    seen[key] |= found
                    nxt_todo[key] = found
            todo = nxt_todo
        return seen

    def _read(self, cols: list[str], nodes: list[str], also: list[str]) -> dict[str, set[str]]:
        """Read the parents, twins and containment of ``cols`` and the table-level parents of ``nodes`` (returned),
        in two round trips; and the assertions on ``cols`` and on their datasets and ``also`` (read later)."""
        owners = sorted({index_parent(c) for c in cols})
        direct, whole, sib, sib_rev, *_, ups, covered, tsib, tsib_rev, writers = self.view.lookup(
            [
                Query(Rel.COLUMN, cols, True),
                Query(Rel.DATASET_COLUMN, cols, True),
                Query(Rel.SIBLING, owners),
                Query(Rel.SIBLING, owners, True),
                Query(Rel.HAS_COLUMN, owners),  # the outlines containment reads, in this round trip
                Query(Rel.ASSERTS_COLUMN, cols, True),
                Query(Rel.ASSERTS, sorted(set(owners) | set(also)), True),
                Query(Rel.DATASET, nodes, True),
                Query(Rel.COVERED, nodes, True),
                Query(Rel.SIBLING, nodes),
                Query(Rel.SIBLING, nodes, True),
                Query(Rel.WRITES, nodes, True),
            ]
        )
        twins_of = {d: (sib[d] | sib_rev[d]) - {d} for d in owners}
        schemas, inputs = self.view.lookup(
            [
                Query(Rel.HAS_COLUMN, sorted(union(whole) | union(twins_of))),
                Query(Rel.READS, sorted(union(writers)), True),
            ]
        )
        self.parents.update(_column_parents(cols, direct, whole, twins_of, schemas))
        self.enclosing.update(self.contained.enclosing(cols))
        self.nested.update(self.contained.nested(cols))
        return {
            d: set(ups[d] | covered[d] | tsib[d] | tsib_rev[d]).union(*(inputs[p] for p in writers[d])) - {d}
            for d in nodes
        }

    def _successors(self, c: str, part: str) -> Iterable[tuple[str, str]]:
        for p in self.parents[c]:
            yield p, part
        if part == ANY or not part:
            for struct, rest in self.enclosing[c]:
                yield struct, rest
                yield struct, ""
        if part == ANY:
            for n in self.nested[c]:
                yield n, ANY
        elif part:
            depth = len(index_path(c))
            for n in self.nested[c]:
                rel = index_path(n)[depth:]
                if part == rel:
                    yield n, ""
                elif part.startswith(rel) and part[len(rel)] == ".":
                    yield n, part[len(rel) :]

    def columns(self, starts: Iterable[str]) -> frozenset[str]:
        """The upstream columns of the links ``starts`` (see the module docstring)."""
        return frozenset().union(*(self._columns((c, ANY)) for c in starts))

    def _columns(self, node: tuple[str, str]) -> frozenset[str]:
        hit = self._reached.get(node)
        if hit is None:
            found = reach(node, self.succ, {})
            hit = self._reached[node] = frozenset(c for c, part in found if part == ANY or not part)
        return hit


def _column_parents(
    cols: list[str],
    direct: Adjacency,
    whole: Adjacency,
    twins_of: Mapping[str, frozenset[str]],
    schemas: Adjacency,
) -> dict[str, frozenset[str]]:
    """Each column's lineage parents and sibling twins (:func:`pareis.core.graph.upstream_columns` and
    :func:`~pareis.core.graph.sibling_columns`, from lookups already made)."""
    names = {d: Names(schema) for d, schema in schemas.items() if schema}
    out: dict[str, frozenset[str]] = {}
    for c in cols:
        found = set(direct[c].union(*(schemas[d] for d in whole[c])))
        parent, path = column_parts(c)
        for twin in twins_of[parent]:
            found.update(names[twin].match(path) if twin in names else [column_urn(twin, path)])
        out[c] = frozenset(found)
    return out


@dataclass(frozen=True)
class Upstreams(Generic[K]):
    """:func:`model_upstream`'s answer: each version's upstream, and each region's datasets (seeds included)."""

    models: Mapping[str, ModelUpstream]
    regions: Mapping[K, set[str]]


def model_upstream(
    view: LineageView, models: Iterable[str], *, walks: WalkCache[ModelUpstream] | None = None
) -> dict[str, ModelUpstream]:
    """The upstream of each model version (see the module docstring); unknown models come back empty. ``walks``:
    as for :func:`upstream_walk`."""
    return dict(upstream_walk(view, models, {}, walks=walks).models)


def upstream_walk(
    view: LineageView,
    models: Iterable[str],
    regions: Mapping[K, set[str]],
    *,
    walks: WalkCache[ModelUpstream] | None = None,
) -> Upstreams[K]:
    """:func:`model_upstream`, and each of ``regions`` (seed datasets) with every dataset upstream of it at table
    level, walked in the same round trips.

    ``walks``: what earlier views of ``view``'s generation walked (:class:`~pareis.core.walk_cache.WalkCache`): the
    models' upstreams and the regions found there are taken instead of walked, and what is walked here is kept. The
    upstream assertions are read afresh either way (an assertion defined since changes no generation)."""
    memo = memoised(view)
    wanted = sorted(set(models))
    kept = walks.models(memo, wanted) if walks is not None else {}
    kept_regions = walks.upstream(memo, regions) if walks is not None else {}
    walked = _walk(
        memo, [m for m in wanted if m not in kept], {k: s for k, s in regions.items() if k not in kept_regions}
    )
    if walks is not None:
        walks.keep_models(memo, walked.models)
        walks.keep_upstream(memo, regions, walked.regions)
    ups = {m: kept[m] if m in kept else walked.models[m] for m in wanted}
    names = _upstream_assertions(memo, ups)
    return Upstreams({m: replace(up, assertions=names[m]) for m, up in ups.items()}, {**walked.regions, **kept_regions})


def _walk(memo: Memo, models: Iterable[str], regions: Mapping[K, set[str]]) -> Upstreams[K]:
    """The walk of :func:`upstream_walk`: the models' upstreams without their assertions, and the regions'."""
    infos = catalog.models(memo, models)
    listed = sorted(union({m: frozenset(i.features) for m, i in infos.items()}))
    removed_features = memo.removed_neighbours(Rel.FEATURE_MODEL, infos, reverse=True)
    links = feature_links(memo, listed)
    removed_sources = memo.removed_neighbours(Rel.FEATURE_SOURCE, listed, reverse=True)
    featureless = [m for m, i in infos.items() if not i.features]
    # The runs' inputs alone (catalog.runs reads their start times too, which no upstream depends on).
    inputs = related(memo, Rel.READS, {r for m in featureless for r in infos[m].training_runs}, reverse=True)
    tables: dict[str, frozenset[str]] = {}
    for m, info in infos.items():
        if info.features:
            tables[m] = frozenset().union(*(links.table_links(f) for f in info.features))
        else:
            tables[m] = frozenset(d for r in info.training_runs for d in sorted(inputs[r]) if not is_column(d))
    table_schemas = columns_of(memo, union(tables))
    seeds = {c for f in listed for c in links.column_links(f)} | union(table_schemas)
    walk = _Up(memo)
    found = walk.run(seeds, regions, union(tables))
    sources = catalog.feature_sources(memo, listed)
    ups = {}
    for m, info in infos.items():
        ups[m] = ModelUpstream(
            model=m,
            group=info.group,
            features=info.features,
            feature_columns={f: walk.columns(links.column_links(f)) for f in info.features},
            table_datasets=tables[m],
            table_columns=walk.columns(c for d in tables[m] for c in table_schemas[d]),
            source_columns=frozenset().union(*(links.columns[f] for f in info.features)),
            removed_features=tuple(sorted(removed_features[m])),
            sources={f: sources[f] for f in info.features},
            removed_sources={f: removed_sources[f] for f in info.features},
        )
    return Upstreams(ups, found)


def _upstream_assertions(view: LineageView, ups: Mapping[str, ModelUpstream]) -> dict[str, frozenset[str]]:
    """Per model, the assertions the index defines that name one of its upstream columns, or name no column and
    check one of its upstream datasets."""
    columns = {m: up.columns for m, up in ups.items()}
    datasets = {m: up.datasets for m, up in ups.items()}
    on_columns, on_datasets = view.lookup(
        [Query(Rel.ASSERTS_COLUMN, sorted(union(columns)), True), Query(Rel.ASSERTS, sorted(union(datasets)), True)]
    )
    names = sorted(union(on_columns) | union(on_datasets))
    targets, fields = view.lookup([Query(Rel.ASSERTS, names), Query(Rel.ASSERTS_COLUMN, names)])
    return {
        m: frozenset(a for a in names if (fields[a] & columns[m]) or (not fields[a] and targets[a] & datasets[m]))
        for m in ups
    }
