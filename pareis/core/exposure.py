"""Which columns feed which features and models (DESIGN §2.5): the exposure a reliability score and a gap rank use.

Two walks over the lineage view (one here), both batched per frontier and cycle-safe:

* :func:`pareis.core.upstream.model_upstream` — from models up (the one upstream);
* :func:`exposure` — from columns down: the features and model versions each column's lineage reaches (column
  edges, whole-dataset edges and sibling twins), by the same feature-linking rules, plus the featureless models
  trained on runs reading its dataset.

Not followed here (the blast radius follows them): table-level spread along dataset edges without column
lineage, nested-field containment and feature-table keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pareis.core.closures import closed_union
from pareis.core.fieldpath import feature_name, index_parent, parents_of
from pareis.core.graph import (
    LineageView,
    Names,
    Rel,
    closure,
    columns_of,
    downstream_columns,
    related,
    sibling_columns,
    union,
)

__all__ = ["Exposure", "exposure", "parents_of"]


@dataclass(frozen=True)
class Exposure:
    """What each column feeds: features and model versions (sorted tuples); ``groups``, when the answer came from
    the exposure index, the group of every model named (the walk leaves it None: the caller reads them)."""

    features: Mapping[str, tuple[str, ...]]
    models: Mapping[str, tuple[str, ...]]
    groups: Mapping[str, str | None] | None = None


def exposure(view: LineageView, columns: Iterable[str]) -> Exposure:
    """The features and model versions downstream of each column in ``columns``."""
    start = sorted(set(columns))
    children: dict[str, frozenset[str]] = {}

    def step(frontier: set[str]) -> dict[str, frozenset[str]]:
        lineage, twins = downstream_columns(view, frontier), sibling_columns(view, frontier)
        found = {c: lineage[c] | twins[c] for c in frontier}
        children.update(found)
        return found

    reached = closure(start, step)
    direct: dict[str, set[str]] = {c: set(fs) for c, fs in related(view, Rel.FEATURE_SOURCE, reached).items()}
    datasets = sorted({index_parent(c) for c in reached})
    by_dataset = related(view, Rel.FEATURE_SOURCE, datasets)
    schemas = columns_of(view, [d for d in datasets if by_dataset[d]])
    in_reach: dict[str, list[str]] = {}
    for c in reached:
        in_reach.setdefault(index_parent(c), []).append(c)
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
    tables = {c: by_table.get(index_parent(c), set()) for c in reached} if any_table else {}
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
