"""Blast radius at column precision (DESIGN §2.2): what a failing assertion poisons, down to models.

1. **Failing columns F**: the assertions' fields; an assertion without fields covers every column of its
   dataset (a dataset without a known schema borrows its siblings' column names; with none known, the dataset
   is failing at table level).
2. **Origins O**: F walked upstream along column lineage (and sibling hops) to the columns without a lineage
   parent. Siblings are one column: a sibling class is an origin when no member has a parent outside the class,
   and it is reported by its members without any parent (all members when each has one, i.e. a cycle).
3. **Affected columns A**: F, its ancestors, and everything downstream of those (lineage and sibling hops).
   Both walks also follow containment (:class:`~pareis.core.spread.Spread`): a bad nested field makes its
   enclosing structs bad (and what flows from them), a bad struct its nested fields.
4. **Affected datasets**: those with a column in A, plus the *table-level* spread: a dataset edge (lineage, or a
   process reading one and writing the other) along which no column edge exists carries the failure to the whole
   downstream dataset, and from there to everything downstream of it at table level (DESIGN §2.1, "used where no
   column edges exist"). Table-level datasets are listed with the others.
5. **Features**: linked to a column in A (precision ``column``); or by a dataset source whose same-name column
   (case-insensitive) is in A (``column``) — for a source without a known schema, the column of that name,
   failing when A holds it; or by a dataset source whose schema lacks such a column, to a dataset with a column
   in A, or by any source to a table-level dataset (``table``). A primary key (``mlPrimaryKey``) is linked like a
   feature; a poisoned key poisons every feature of every feature table keyed by it (the table's point-in-time
   join breaks), at the key's precision.
6. **Models**: consuming an affected feature (precision ``table`` when any of its poisoned features is only
   linked at table precision), or listing no features and trained by a run or job reading an affected dataset
   (``table``). Ratio and severity are :class:`~pareis.core.impact.ModelImpact`'s.

``failed_rows`` (§2.2 step 6) needs run history and is left ``None`` here for the incident engine to fill.
"""

from __future__ import annotations

from collections.abc import Iterable

from pareis.core.containment import Containment
from pareis.core.fieldpath import canonical_column, column_urn, feature_name, parent_of, path_of
from pareis.core.graph import (
    Attr,
    LineageView,
    Names,
    Query,
    Rel,
    closure,
    columns_of,
    dataset_children,
    downstream_columns,
    memoised,
    related,
    siblings_of,
    union,
    upstream_columns,
)
from pareis.core.impact import BlastRadius, ModelImpact, Precision
from pareis.core.spread import Spread


class UnknownAssertion(LookupError):
    """The index has no definition (``assertionInfo``) for an assertion; pass its dataset instead."""

    def __init__(self, assertion: str) -> None:
        super().__init__(f"no assertionInfo indexed for {assertion}")
        self.assertion = assertion


def blast_radius(
    view: LineageView,
    *,
    assertions: Iterable[str] = (),
    columns: Iterable[str] = (),
    datasets: Iterable[str] = (),
) -> BlastRadius:
    """The blast radius of failures on ``assertions``, explicit ``columns`` and whole ``datasets`` together.

    Raises :class:`UnknownAssertion` for an assertion the index does not define, and :class:`ValueError` for a
    column argument that is not a schemaField URN. Deterministic; every list in the result is sorted.
    """
    memo = memoised(view)
    failing, table_seeds = _failing(memo, sorted(set(assertions)), columns, sorted(set(datasets)))
    contained = Containment(memo)
    up = Spread(memo, contained, lambda frontier: upstream_columns(memo, frontier))
    up.run({c: {""} for c in failing})
    whole = {c for c, bad in up.state.items() if "" in bad}
    origins = _origins(whole, up.origin_parents(whole), up.twins)
    down = Spread(memo, contained, lambda frontier: downstream_columns(memo, frontier))
    down.run(up.state)
    affected = set(down.state)
    with_columns = {parent_of(c) for c in affected}
    table_level = _table_level(memo, with_columns, table_seeds)
    features = _features(memo, affected, with_columns, table_level)
    models = _models(memo, features, with_columns | table_level)
    touched = sorted(with_columns | table_level)
    incomplete = [d for d, why in memo.attribute(touched, Attr.LINEAGE_INCOMPLETE).items() if why is not None]
    return BlastRadius(
        failing_columns=tuple(sorted(failing)),
        origin_columns=tuple(sorted(origins)),
        columns=tuple(sorted(affected)),
        datasets=tuple(sorted(with_columns | table_level)),
        features=tuple(sorted(features)),
        models=tuple(models),
        table_features=tuple(sorted(f for f, precision in features.items() if precision == "table")),
        incomplete=tuple(sorted(incomplete)),
    )


def _failing(
    view: LineageView, assertions: list[str], columns: Iterable[str], datasets: list[str]
) -> tuple[set[str], set[str]]:
    """F, and the datasets failing at table level (no known columns)."""
    failing = {canonical_column(c) for c in columns}
    whole = set(datasets)
    if assertions:
        targets, fields = view.lookup([Query(Rel.ASSERTS, assertions), Query(Rel.ASSERTS_COLUMN, assertions)])
        for a in assertions:
            if not targets[a] and not fields[a]:
                raise UnknownAssertion(a)
            failing |= fields[a]
            if not fields[a]:
                whole |= targets[a]
    table: set[str] = set()
    if whole:
        schemas = columns_of(view, whole)
        sibs = siblings_of(view, whole)
        sib_schemas = columns_of(view, union(sibs))
        for d in sorted(whole):
            if schemas[d]:
                failing |= schemas[d]
                continue
            borrowed = {column_urn(d, path_of(c)) for s in sibs[d] for c in sib_schemas[s]}
            if borrowed:
                failing |= borrowed
            else:
                table.add(d)
    return failing, table


def _origins(ancestors: set[str], parents: dict[str, frozenset[str]], twins: dict[str, frozenset[str]]) -> set[str]:
    """The origin columns among the ancestors, treating each sibling class as one column."""
    rep = {c: c for c in ancestors}

    def find(c: str) -> str:
        while rep[c] != c:
            rep[c] = rep[rep[c]]
            c = rep[c]
        return c

    for c in sorted(ancestors):
        for t in twins[c]:
            a, b = sorted((find(c), find(t)))
            rep[b] = a
    classes: dict[str, set[str]] = {}
    for c in ancestors:
        classes.setdefault(find(c), set()).add(c)
    origins: set[str] = set()
    for members in classes.values():
        if any(parents[c] - members for c in members):
            continue
        roots = {c for c in members if not parents[c]}
        origins |= roots or members
    return origins


def _table_level(view: LineageView, with_columns: set[str], seeds: set[str]) -> set[str]:
    """Datasets affected as a whole: seeds, and children reached along edges without column lineage."""
    children = dataset_children(view, with_columns)
    covered = related(view, Rel.COVERED, with_columns)
    start = set(seeds)
    for d in with_columns:
        start |= children[d] - covered[d]
    if not start:
        return set()

    def step(frontier: set[str]) -> dict[str, frozenset[str]]:
        kids = dataset_children(view, frontier)
        cov, fed = view.lookup([Query(Rel.COVERED, sorted(frontier)), Query(Rel.DATASET_COLUMN, sorted(frontier))])
        sibs = siblings_of(view, frontier)
        return {d: kids[d] | cov[d] | sibs[d] | {parent_of(c) for c in fed[d]} for d in frontier}

    return closure(start, step)


def _features(
    view: LineageView, affected: set[str], with_columns: set[str], table_level: set[str]
) -> dict[str, Precision]:
    """Affected features and the best precision of the evidence for each.

    Primary keys (``mlPrimaryKey``) are linked to their sources exactly like features; a poisoned key poisons every
    feature of every feature table keyed by it, at the key's precision. Keys themselves are not listed.
    """
    found: dict[str, Precision] = {}

    def mark(feature: str, precision: Precision) -> None:
        if precision == "column" or feature not in found:
            found[feature] = precision

    for feats in related(view, Rel.FEATURE_SOURCE, affected).values():
        for f in feats:
            mark(f, "column")
    datasets = with_columns | table_level
    by_source = related(view, Rel.FEATURE_SOURCE, datasets)
    sourced = sorted(d for d in datasets if by_source[d])
    schemas = columns_of(view, sourced)
    hit: dict[str, set[str]] = {}
    for c in affected:
        hit.setdefault(parent_of(c), set()).add(c)
    for d in sourced:
        names = Names(schemas[d])
        hits = Names(hit.get(d, ()))
        for f in by_source[d]:
            name = feature_name(f)
            if not schemas[d]:
                # No known schema (Feast never emits one): the feature is the column of its name, known to be
                # failing from the assertions that name it.
                if hits.match(name):
                    mark(f, "column")
            elif named := names.match(name):
                if affected.intersection(named):
                    mark(f, "column")
            elif d in with_columns:
                mark(f, "table")
            if d in table_level:
                mark(f, "table")
    for feats in related(view, Rel.FEATURE_DATASET, table_level).values():
        for f in feats:
            mark(f, "table")
    keys = sorted(k for k in found if _is_key(k))
    if keys:
        tables = related(view, Rel.TABLE_KEY, keys, reverse=True)
        members = related(view, Rel.TABLE_FEATURE, union(tables))
        for k in keys:
            for t in sorted(tables[k]):
                for f in members[t]:
                    mark(f, found[k])
        for k in keys:
            del found[k]
    return found


def _is_key(urn: str) -> bool:
    return urn.startswith("urn:li:mlPrimaryKey:")


def _models(view: LineageView, features: dict[str, Precision], datasets: set[str]) -> list[ModelImpact]:
    """Affected models, sorted by URN."""
    consumers = union(related(view, Rel.FEATURE_MODEL, features))
    trained = union(related(view, Rel.TRAINS, union(related(view, Rel.READS, datasets))))
    candidates = sorted(consumers | trained)
    inputs, groups, sets = view.lookup(
        [
            Query(Rel.FEATURE_MODEL, candidates, True),
            Query(Rel.MODEL_GROUP, candidates),
            Query(Rel.VERSION_OF, candidates),
        ]
    )
    out: list[ModelImpact] = []
    for m in candidates:
        group = min(groups[m] or sets[m], default=None)
        poisoned = sorted(inputs[m].intersection(features))
        if poisoned:
            precision: Precision = "table" if any(features[f] == "table" for f in poisoned) else "column"
            out.append(ModelImpact(m, group, tuple(poisoned), len(inputs[m]), precision))
        elif not inputs[m]:
            out.append(ModelImpact(m, group, (), 0, "table"))
    return out
