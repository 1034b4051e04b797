"""Which aspects advance the lineage generation (:data:`~pareis.core.exposure_index.EXPOSURE_ASPECTS`): every aspect
whose facts the exposure snapshot reads, checked on real metadata.

The exposure index is recomputed only when the generation moves, and the scores role trusts a snapshot of the current
generation as fresh (:class:`~pareis.roles.scores.ScorePublisher`): an aspect that changes what the snapshot reads
but does not advance the generation leaves a stale snapshot that says it is fresh. ``logicalParent`` (sibling and
column edges) and ``mlFeatureTableProperties`` (a key's feature tables) were such aspects.

The relations and attributes each aspect contributes are read from every golden, every overlay and the demo recording
loaded through the lineage role's translation; those the snapshot reads, from a view that records its questions while
it computes the snapshot of all of them together.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence

from pareis.core import catalog
from pareis.core.blast import blast_radius
from pareis.core.exposure_index import EXPOSURE_ASPECTS, enumerate_inputs, snapshot
from pareis.core.graph import Adjacency, Attr, LineageView, Memo, Outline, Query, Rel
from pareis.core.upstream import model_upstream, upstream_walk
from pareis.datahub.translate.lineage import LINEAGE_ASPECTS
from pareis.lineage_loader import load_files
from pareis.store.lineage import LineageUpdate, Outcome
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.goldens import DEMO, OVERLAYS, every_golden

REMOVAL = "status"
"""Soft deletion: read as the removed flag of every node a walk meets (:class:`~pareis.core.graph.Memo`)."""


class Contributions(MemoryLineageStore):
    """A store that remembers which relations and attributes each aspect contributed."""

    def __init__(self) -> None:
        super().__init__()
        self.rels: dict[str, set[Rel]] = {}
        self.attrs: dict[str, set[str]] = {}

    def apply(self, updates: Sequence[LineageUpdate]) -> list[Outcome]:
        for u in updates:
            if u.facts is not None:
                self.rels.setdefault(u.aspect, set()).update(rel for rel, _, _ in u.facts.edges)
                self.attrs.setdefault(u.aspect, set()).update(str(a) for a in u.facts.attrs)
        return super().apply(updates)


class Read(Mapping[str, str]):
    """A node's attributes that record which of them are read (into ``seen``); iterating reads them all."""

    def __init__(self, attrs: Mapping[str, str], seen: set[str]) -> None:
        self._attrs = attrs
        self._seen = seen

    def __getitem__(self, name: str) -> str:
        self._seen.add(str(name))
        return self._attrs[name]

    def __iter__(self) -> Iterator[str]:
        self._seen.update(str(n) for n in self._attrs)
        return iter(self._attrs)

    def __len__(self) -> int:
        return len(self._attrs)


class Questions:
    """A view that records the relations and attributes asked of ``view``."""

    def __init__(self, view: LineageView) -> None:
        self.view = view
        self.rels: set[Rel] = set()
        self.attrs: set[str] = set()

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        self.rels.update(q.rel for q in queries if q.nodes)
        return self.view.lookup(queries)

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        return {n: Read(attrs, self.attrs) for n, attrs in self.view.attributes(nodes).items()}

    def attribute(self, nodes: Collection[str], name: Attr) -> Mapping[str, str | None]:
        self.attrs.add(str(name))
        return self.view.attribute(nodes, name)

    def outlines(self, datasets: Collection[str]) -> Mapping[str, Outline]:
        self.rels.add(Rel.HAS_COLUMN)
        return self.view.outlines(datasets)


def loaded() -> Contributions:
    store = Contributions()
    overlays = [p for p in sorted(OVERLAYS.glob("*.json")) if not p.name.startswith("malformed_")]  # refused whole
    load_files(store, [*every_golden(), *sorted(DEMO.glob("*.json")), *overlays])
    return store


def test_every_aspect_the_exposure_snapshot_reads_advances_the_generation() -> None:
    store = loaded()
    asked = Questions(store)
    entries = snapshot(asked, **enumerate_inputs(store.entities))
    assert entries, "the metadata has no exposure to compute: the test would check nothing"
    assert asked.rels >= {Rel.FEATURE_SOURCE, Rel.FEATURE_MODEL, Rel.SIBLING, Rel.COLUMN, Rel.TABLE_KEY}
    bearing = {
        aspect
        for aspect in LINEAGE_ASPECTS
        if store.rels.get(aspect, set()) & asked.rels or store.attrs.get(aspect, set()) & asked.attrs
    }
    assert bearing <= EXPOSURE_ASPECTS, f"they change the exposure, not the generation: {bearing - EXPOSURE_ASPECTS}"


def test_the_generation_advances_on_nothing_the_snapshot_does_not_read() -> None:
    store = loaded()
    asked = Questions(store)
    snapshot(asked, **enumerate_inputs(store.entities))
    # Each aspect seen in the metadata and listed must contribute something the snapshot reads (or be the removal):
    # a listed aspect that does not costs a recomputation of the exposure for nothing.
    seen = store.rels.keys() | store.attrs.keys()
    idle = {
        aspect
        for aspect in EXPOSURE_ASPECTS & seen
        if aspect != REMOVAL
        and not (store.rels.get(aspect, set()) & asked.rels or store.attrs.get(aspect, set()) & asked.attrs)
    }
    assert not idle, idle


DEFINITION = "assertionInfo"
"""What an assertion checks: the blast radius cache reads it on each view (:class:`~pareis.core.walk_cache.
WalkCache`), so it need not advance the generation."""


def test_the_walks_kept_across_views_read_nothing_but_the_generation_s_aspects_and_the_definition() -> None:
    """What :class:`~pareis.core.walk_cache.WalkCache` relies on: a defined assertion's radius is the same over
    every view of one generation whose definition of it is the same, and so is a set of datasets' table-level
    upstream (the regions of :func:`~pareis.core.upstream.upstream_walk`) and a model version's upstream but for its
    assertions (read afresh)."""
    store = loaded()
    asked = Questions(store)
    defined = sorted(catalog.assertions(Memo(store), store.entities(DEFINITION)))  # removed datasets' left out
    assert len(defined) > 10, "the metadata defines assertions: the test would check nothing"
    for assertion in defined:
        blast_radius(asked, assertions=[assertion])
    assert asked.rels >= {Rel.ASSERTS, Rel.COLUMN, Rel.FEATURE_SOURCE, Rel.FEATURE_MODEL}
    datasets = sorted({d for a in defined for d in Memo(store).lookup([Query(Rel.ASSERTS, [a])])[0][a]})
    walked = Questions(store)
    up = upstream_walk(walked, [], {d: {d} for d in datasets})
    assert any(len(found) > 1 for found in up.regions.values()), "some dataset has an upstream: the walk is checked"
    assert Rel.DATASET in walked.rels
    models = store.entities("mlModelProperties")
    assert any(up.columns for up in model_upstream(walked, models).values()), "some model has an upstream"
    asked.rels |= walked.rels
    asked.attrs |= walked.attrs
    bearing = {
        aspect
        for aspect in LINEAGE_ASPECTS
        if store.rels.get(aspect, set()) & asked.rels or store.attrs.get(aspect, set()) & asked.attrs
    }
    assert bearing - {DEFINITION} <= EXPOSURE_ASPECTS, bearing - {DEFINITION} - EXPOSURE_ASPECTS
