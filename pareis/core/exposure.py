"""Which columns feed which features and models (DESIGN §2.5): the exposure a reliability score and a gap rank use.

:func:`exposure` — from columns down: the features and model versions a wholly bad column reaches, the mirror of the
one upstream (:mod:`pareis.core.upstream`): the blast radius's spread (:mod:`pareis.core.spread`: column edges,
whole-dataset edges, sibling twins, containment), the features (and keys) linked to a column it reaches
(:func:`~pareis.core.upstream.linked_features`: a key's links link the features it keys), the models consuming
them, and the models listing no features trained on runs reading a dataset whose schema holds a column it reaches.
A column is upstream of a model exactly when the model is in its exposure.

Batched per frontier and cycle-safe. Not followed here (the blast radius follows it): table-level spread along
dataset edges without column lineage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from pareis.core.closures import closed_union
from pareis.core.containment import Containment
from pareis.core.fieldpath import parents_of
from pareis.core.graph import LineageView, Rel, downstream_columns, memoised, related, union
from pareis.core.spread import Spread
from pareis.core.upstream import linked_features, links_near, table_models

__all__ = ["Exposure", "exposure", "parents_of"]


@dataclass(frozen=True)
class Exposure:
    """What each column feeds: features and model versions (sorted tuples); ``groups``, when the answer came from
    the exposure index, the group of every model named (the walk leaves it None: the caller reads them)."""

    features: Mapping[str, tuple[str, ...]]
    models: Mapping[str, tuple[str, ...]]
    groups: Mapping[str, str | None] | None = None


class Exposed(Protocol):
    """What says the exposure of columns: :func:`exposure` (the walk) or a reader of the exposure index
    (:class:`pareis.store.exposure_reader.ExposureReader`), which answer alike. ``parents``: each column's dataset
    (as :func:`~pareis.core.fieldpath.index_parent` says) when the caller has it."""

    def __call__(
        self, view: LineageView, columns: Iterable[str], parents: Mapping[str, str] | None = None
    ) -> Exposure: ...


def exposure(view: LineageView, columns: Iterable[str], parents: Mapping[str, str] | None = None) -> Exposure:
    """The features and model versions downstream of each column in ``columns``: what it feeds, wholly bad
    (:class:`Exposed`; the walk needs no ``parents``)."""
    memo = memoised(view)
    start = sorted(set(columns))
    spread = Spread(memo, Containment(memo), lambda frontier: downstream_columns(memo, frontier))
    spread.run({c: {""} for c in start})
    parents = spread.parents
    direct = linked_features(memo, links_near(memo, parents), parents)
    tables = table_models(memo, parents)
    graph = spread.graph()
    below_f = closed_union(graph, spread.on_states(direct))
    below_t = closed_union(graph, spread.on_states(tables)) if any(tables.values()) else {}
    consumers = related(memo, Rel.FEATURE_MODEL, union(below_f))
    feats: dict[str, tuple[str, ...]] = {}
    mods: dict[str, tuple[str, ...]] = {}
    for c in start:
        fs = below_f.get(c, frozenset())
        feats[c] = tuple(sorted(fs))
        mods[c] = tuple(sorted(below_t.get(c, frozenset()).union(*(consumers[f] for f in fs))))
    return Exposure(feats, mods)
