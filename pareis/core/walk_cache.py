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

A radius this process has not found may have been found by the exposure index's maintainer
(:mod:`pareis.core.radii`, which keeps every defined assertion's): ``kept`` reads those, and what it gives is kept
here like a radius walked.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from pareis.core.graph import Memo
from pareis.core.impact import BlastRadius
from pareis.core.radii import Definition, KeptRadii, definitions, weight


class Upstream(Protocol):
    """What the cache weighs of a model version's upstream (:class:`pareis.core.upstream.ModelUpstream`, which it
    keeps without knowing it: the walk that finds one keeps it)."""

    @property
    def columns(self) -> frozenset[str]: ...

    @property
    def table_datasets(self) -> frozenset[str]: ...


U = TypeVar("U", bound=Upstream)

K = TypeVar("K", bound=Hashable)

DEFAULT_BUDGET = 500_000
"""URNs kept at most, over all entries (a radius counts its columns, datasets and features; an upstream its datasets;
a model's upstream its columns and datasets). Past it the entries kept longest ago are dropped first; a dropped one
is walked again when asked. A URN kept costs ~150 bytes: ~75 MB at most, well within the chart's 512 MiB per role
(the full-scale benchmark keeps ~140,000 after 2,000 incidents: their radii, regions and models' upstreams)."""


class WalkCache(Generic[U]):
    """Blast radii of defined assertions, table-level upstreams of dataset sets and model versions' upstreams, found
    over views of one generation (see the module docstring), within ``budget`` URNs (:data:`DEFAULT_BUDGET`)."""

    def __init__(
        self,
        budget: int = DEFAULT_BUDGET,
        *,
        kept: KeptRadii | None = None,
    ) -> None:
        self._generation: int | None = None
        self._kept = _Kept(budget)
        self._elsewhere = kept

    def radii(self, view: Memo, assertions: Iterable[str]) -> dict[str, BlastRadius]:
        """The radii kept of ``assertions`` that hold over ``view``: of its generation, and of the definition it
        reads for each (one lookup, which the walks of the others read from the view anyway); those not kept here,
        from ``kept`` when given (kept here from then on)."""
        if not self._valid(view):
            return {}
        asked = sorted(set(assertions))
        found: dict[str, tuple[Definition, BlastRadius]] = {}
        for a in asked:
            hit = self._kept.get(("radius", a))
            if hit is not None:
                found[a] = hit
        out: dict[str, BlastRadius] = {}
        if found:
            defined = definitions(view, sorted(found))
            out = {a: radius for a, (kept, radius) in found.items() if kept == defined[a]}
        missing = [a for a in asked if a not in out]
        if missing and self._elsewhere is not None:
            more = self._elsewhere(view, missing)
            self.keep_radii(view, more)
            out.update(more)
        return out

    def keep_radii(self, view: Memo, radii: Mapping[str, BlastRadius]) -> None:
        """Keep ``radii``, blast radii of defined assertions found over ``view``, for later views of its generation."""
        if not radii or not self._valid(view):
            return
        defined = definitions(view, sorted(radii))
        for a in sorted(radii):
            r = radii[a]
            self._kept.put(("radius", a), (defined[a], r), weight(r))

    def upstream(self, view: Memo, regions: Mapping[K, Iterable[str]]) -> dict[K, set[str]]:
        """Of ``regions`` (key → seed datasets), those whose table-level upstream (seeds included) is kept for
        ``view``'s generation, with it."""
        if not self._valid(view):
            return {}
        out: dict[K, set[str]] = {}
        for key, seeds in regions.items():
            found = self._kept.get(("upstream", frozenset(seeds)))
            if found is not None:
                out[key] = set(found)
        return out

    def keep_upstream(self, view: Memo, regions: Mapping[K, Iterable[str]], found: Mapping[K, Iterable[str]]) -> None:
        """Keep ``found[key]``, the table-level upstream of the seeds ``regions[key]`` walked over ``view``."""
        if not found or not self._valid(view):
            return
        for key, upstream in found.items():
            kept = frozenset(upstream)
            self._kept.put(("upstream", frozenset(regions[key])), kept, len(kept) + 1)

    def models(self, view: Memo, models: Iterable[str]) -> dict[str, U]:
        """The upstreams kept of ``models`` for ``view``'s generation (without their assertions: see the module
        docstring)."""
        if not self._valid(view):
            return {}
        out: dict[str, U] = {}
        for m in models:
            found = self._kept.get(("model", m))
            if found is not None:
                out[m] = found
        return out

    def keep_models(self, view: Memo, found: Mapping[str, U]) -> None:
        """Keep ``found``, model versions' upstreams (without their assertions) walked over ``view``."""
        if not found or not self._valid(view):
            return
        for m in sorted(found):
            up = found[m]
            self._kept.put(("model", m), up, len(up.columns) + len(up.table_datasets) + 1)

    def __len__(self) -> int:
        return len(self._kept)

    def _valid(self, view: Memo) -> bool:
        """Whether the cache may serve ``view``: its generation is known; a new one starts the cache afresh."""
        if view.generation is None:
            return False
        if view.generation != self._generation:
            self._kept.clear()
            self._generation = view.generation
        return True


class _Kept:
    """Entries in the order kept (a re-kept one moves last), each with its weight; past ``budget`` in all, the first
    kept are dropped. An entry heavier than the budget is not kept."""

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._entries: dict[Hashable, tuple[Any, int]] = {}
        self._weight = 0

    def get(self, key: Hashable) -> Any:
        found = self._entries.get(key)
        return None if found is None else found[0]

    def put(self, key: Hashable, value: object, weight: int) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._weight -= old[1]
        if weight > self._budget:
            return
        self._entries[key] = (value, weight)
        self._weight += weight
        while self._weight > self._budget:
            first = next(iter(self._entries))
            self._weight -= self._entries.pop(first)[1]

    def clear(self) -> None:
        self._entries.clear()
        self._weight = 0

    def __len__(self) -> int:
        return len(self._entries)
