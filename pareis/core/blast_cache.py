"""Blast radii kept from one view of the lineage index to the next while the lineage does not change.

A blast radius (:func:`pareis.core.blast.blast_radius`) of a defined assertion is a function of the lineage index
alone: of the assertion's definition (``assertionInfo``: the dataset and fields it checks) and of the edges, schemas,
removals and models the walk reads — all of them facts of the aspects that advance the lineage *generation*
(:data:`~pareis.core.exposure_index.EXPOSURE_ASPECTS`, which ``tests/unit/test_exposure_aspects.py`` checks against
what a walk reads). So a radius found over a view of generation ``g`` is the radius over any later view of the same
generation whose definition of the assertion is the same. The scores role asks the gate about the same past
incidents batch after batch; with a :class:`BlastCache` their radii are walked once per generation instead of once
per batch.

The generation is the view's (:attr:`pareis.core.graph.Memo.generation`: read before its first question, so a change
that lands while a view computes is followed by an advance that the next view sees). A view of unknown generation
neither reads nor fills the cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pareis.core.graph import Memo, Query, Rel
from pareis.core.impact import BlastRadius

DEFAULT_LIMIT = 50_000
"""Radii kept at most (the oldest kept are dropped first: a dropped one is walked again when asked)."""

Definition = tuple[frozenset[str], frozenset[str]]
"""An assertion's definition as a walk reads it: the datasets it checks, the fields it checks."""


class BlastCache:
    """The blast radii of defined assertions found over views of one generation (see the module docstring)."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = limit
        self._generation: int | None = None
        self._radii: dict[str, tuple[Definition, BlastRadius]] = {}

    def known(self, view: Memo, assertions: Iterable[str]) -> dict[str, BlastRadius]:
        """The radii kept of ``assertions`` that hold over ``view``: of its generation, and of the definition it
        reads for each (one lookup, which the walks of the others read from the view anyway). A view of another
        generation empties the cache first."""
        if not self._valid(view):
            return {}
        wanted = sorted({a for a in assertions if a in self._radii})
        if not wanted:
            return {}
        defined = _definitions(view, wanted)
        return {a: radius for a in wanted for kept, radius in (self._radii[a],) if kept == defined[a]}

    def keep(self, view: Memo, radii: Mapping[str, BlastRadius]) -> None:
        """Keep ``radii``, blast radii of defined assertions found over ``view``, for later views of its generation."""
        if not radii or not self._valid(view):
            return
        defined = _definitions(view, sorted(radii))
        for assertion in sorted(radii):
            self._radii.pop(assertion, None)  # re-inserted last: the most recently kept are dropped last
            self._radii[assertion] = (defined[assertion], radii[assertion])
        while len(self._radii) > self._limit:
            del self._radii[next(iter(self._radii))]

    def __len__(self) -> int:
        return len(self._radii)

    def _valid(self, view: Memo) -> bool:
        """Whether the cache may serve ``view``: its generation is known; a new one starts the cache afresh."""
        if view.generation is None:
            return False
        if view.generation != self._generation:
            self._radii.clear()
            self._generation = view.generation
        return True


def _definitions(view: Memo, assertions: list[str]) -> dict[str, Definition]:
    targets, fields = view.lookup([Query(Rel.ASSERTS, assertions), Query(Rel.ASSERTS_COLUMN, assertions)])
    return {a: (targets[a], fields[a]) for a in assertions}
