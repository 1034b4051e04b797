"""What walks of the lineage index found, kept from one view of it to the next while the lineage does not change.

Two walks are functions of the lineage index alone:

* a defined assertion's **blast radius** (:func:`pareis.core.blast.blast_radius`): of the assertion's definition
  (``assertionInfo``: the datasets and fields it checks) and of the edges, schemas, removals and models the walk
  reads;
* a set of datasets' **table-level upstream** (the regions of :func:`pareis.core.upstream.upstream_walk`): of the
  dataset edges, siblings, jobs and removals it reads;
* a model version's **upstream** without its assertions (:func:`pareis.core.upstream.model_upstream`, which reads
  the assertions afresh on each view): of its features, their sources, the column lineage above them, its training
  runs.

Everything either walk reads besides the definition is a fact of an aspect that advances the lineage *generation*
(:data:`~pareis.core.exposure_index.EXPOSURE_ASPECTS`; ``tests/unit/test_exposure_aspects.py`` checks it against
what the walks read). So what a walk found over a view of generation ``g`` is what it finds over any later view of
that generation (for a radius: whose definition of the assertion is the same, read again on each view). The scores
role asks the gate about the same past incidents batch after batch; with a :class:`WalkCache` their radii and their
upstream are walked once per generation instead of once per batch.

The generation is the view's (:attr:`pareis.core.graph.Memo.generation`: read before its first question, so a change
that lands while a view computes is followed by an advance that the next view sees). A view of unknown generation
neither reads nor fills the cache; a view of another generation empties it first.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar

from pareis.core.graph import Memo, Query, Rel
from pareis.core.impact import BlastRadius

if TYPE_CHECKING:
    from pareis.core.upstream import ModelUpstream

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

DEFAULT_LIMIT = 50_000
"""Entries kept at most of each kind (the oldest kept are dropped first: a dropped one is walked again when asked)."""

Definition = tuple[frozenset[str], frozenset[str]]
"""An assertion's definition as a walk reads it: the datasets it checks, the fields it checks."""


class WalkCache:
    """Blast radii of defined assertions and table-level upstreams of dataset sets, found over views of one
    generation (see the module docstring)."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = limit
        self._generation: int | None = None
        self._radii: dict[str, tuple[Definition, BlastRadius]] = {}
        self._upstream: dict[frozenset[str], frozenset[str]] = {}
        self._models: dict[str, ModelUpstream] = {}

    def radii(self, view: Memo, assertions: Iterable[str]) -> dict[str, BlastRadius]:
        """The radii kept of ``assertions`` that hold over ``view``: of its generation, and of the definition it
        reads for each (one lookup, which the walks of the others read from the view anyway)."""
        if not self._valid(view):
            return {}
        wanted = sorted({a for a in assertions if a in self._radii})
        if not wanted:
            return {}
        defined = _definitions(view, wanted)
        return {a: radius for a in wanted for kept, radius in (self._radii[a],) if kept == defined[a]}

    def keep_radii(self, view: Memo, radii: Mapping[str, BlastRadius]) -> None:
        """Keep ``radii``, blast radii of defined assertions found over ``view``, for later views of its generation."""
        if not radii or not self._valid(view):
            return
        defined = _definitions(view, sorted(radii))
        for assertion in sorted(radii):
            self._radii.pop(assertion, None)  # re-inserted last: the most recently kept are dropped last
            self._radii[assertion] = (defined[assertion], radii[assertion])
        _bound(self._radii, self._limit)

    def upstream(self, view: Memo, regions: Mapping[K, Iterable[str]]) -> dict[K, set[str]]:
        """Of ``regions`` (key → seed datasets), those whose table-level upstream (seeds included) is kept for
        ``view``'s generation, with it."""
        if not self._valid(view):
            return {}
        out: dict[K, set[str]] = {}
        for key, seeds in regions.items():
            found = self._upstream.get(frozenset(seeds))
            if found is not None:
                out[key] = set(found)
        return out

    def keep_upstream(self, view: Memo, regions: Mapping[K, Iterable[str]], found: Mapping[K, Iterable[str]]) -> None:
        """Keep ``found[key]``, the table-level upstream of the seeds ``regions[key]`` walked over ``view``."""
        if not found or not self._valid(view):
            return
        for key, upstream in found.items():
            seeds = frozenset(regions[key])
            self._upstream.pop(seeds, None)
            self._upstream[seeds] = frozenset(upstream)
        _bound(self._upstream, self._limit)

    def models(self, view: Memo, models: Iterable[str]) -> dict[str, ModelUpstream]:
        """The upstreams kept of ``models`` for ``view``'s generation (without their assertions: see the module
        docstring)."""
        if not self._valid(view):
            return {}
        return {m: self._models[m] for m in models if m in self._models}

    def keep_models(self, view: Memo, found: Mapping[str, ModelUpstream]) -> None:
        """Keep ``found``, model versions' upstreams (without their assertions) walked over ``view``."""
        if not found or not self._valid(view):
            return
        for model in sorted(found):
            self._models.pop(model, None)
            self._models[model] = found[model]
        _bound(self._models, self._limit)

    def __len__(self) -> int:
        return len(self._radii) + len(self._upstream) + len(self._models)

    def _valid(self, view: Memo) -> bool:
        """Whether the cache may serve ``view``: its generation is known; a new one starts the cache afresh."""
        if view.generation is None:
            return False
        if view.generation != self._generation:
            self._radii.clear()
            self._upstream.clear()
            self._models.clear()
            self._generation = view.generation
        return True


def _definitions(view: Memo, assertions: list[str]) -> dict[str, Definition]:
    targets, fields = view.lookup([Query(Rel.ASSERTS, assertions), Query(Rel.ASSERTS_COLUMN, assertions)])
    return {a: (targets[a], fields[a]) for a in assertions}


def _bound(kept: dict[K, V], limit: int) -> None:
    while len(kept) > limit:
        del kept[next(iter(kept))]
