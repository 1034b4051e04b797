"""Reading the exposure index for one computation (DESIGN §2.5): what lies downstream of columns, from the snapshot
the running service keeps (:mod:`pareis.store.exposure`) instead of walking the lineage per call.

:class:`ExposureReader` is what :func:`pareis.core.protect.survey` calls for the exposure of its columns: one read
of their datasets' entries (kept for the rest of the computation). When there is no index, or it has published
nothing yet, the reader walks (:func:`pareis.core.exposure.exposure`): the same answer, slower.
:attr:`ExposureReader.head` says which snapshot was read and :meth:`ExposureReader.age` how old it is. Used by the
read side (protect, the gate) and by the incidents role's score publisher (:mod:`pareis.roles.scores`).

:func:`kept_radii` reads the blast radii the snapshot keeps of assertions (:mod:`pareis.core.radii`): the incidents
role's and the retrain gate's, instead of walking them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pareis.core.exposure import Exposure, exposure, parents_of
from pareis.core.exposure_index import DatasetExposure, exposure_of
from pareis.core.graph import LineageView
from pareis.core.impact import BlastRadius
from pareis.core.radii import held
from pareis.store.exposure import ExposureIndex, ExposureVersion


class HasExposure(Protocol):
    """Anything holding an exposure index (or None)."""

    @property
    def exposure(self) -> ExposureIndex | None: ...


@dataclass
class ExposureReader:
    """The exposure of columns for one computation, read from ``index`` (None: walked)."""

    index: ExposureIndex | None
    head: ExposureVersion | None = None
    generation: int = 0
    read_once: bool = False
    fresh_only: bool = False
    """Read the snapshot only when no lineage change came after it (else walk): for a writer, whose answer must
    not lag the lineage (the score publisher); readers that state the snapshot's age (protect, the gate) take any."""
    entries: dict[str, DatasetExposure | None] = field(default_factory=dict)

    @classmethod
    def of(cls, sources: HasExposure) -> ExposureReader:
        """A reader of ``sources``' index (the answers layer's :class:`~pareis.answers.sources.Sources`, or the
        incidents role's ports)."""
        return cls(sources.exposure)

    @property
    def live(self) -> bool:
        """Whether answers come from the index (after the first read)."""
        return self.head is not None

    def __call__(self, view: LineageView, columns: Iterable[str], parents: Mapping[str, str] | None = None) -> Exposure:
        """:class:`~pareis.core.exposure.Exposed`: the exposure of ``columns`` (``parents``, their datasets when the
        caller has them)."""
        cols = columns if isinstance(columns, Collection) else list(columns)
        if self.index is None or (self.read_once and self.head is None):
            return exposure(view, cols)
        if parents is None:
            parents = parents_of(cols)
        wanted = sorted(set(parents.values()) - self.entries.keys())
        if wanted or not self.read_once:
            read = self.index.read(wanted)
            self.read_once = True
            if read.version is None or (self.fresh_only and read.version.generation < read.generation):
                return exposure(view, cols)
            if self.head is None:
                self.head, self.generation = read.version, read.generation
            for d in wanted:
                self.entries[d] = read.datasets.get(d)
        # exposure_of and exposure order the columns themselves (a survey asks ~300,000: sorted once, not twice).
        return exposure_of(self.entries, cols, parents)  # a dataset whose entry is None: nothing downstream

    def age(self, at_ms: int | None = None) -> dict[str, Any] | None:
        """The snapshot read (version, when computed, how many lineage changes behind); None when walked."""
        return None if self.head is None else self.head.to_json(self.generation, at_ms)


def kept_radii(index: ExposureIndex, view: LineageView, assertions: Collection[str]) -> dict[str, BlastRadius]:
    """The blast radii ``index`` keeps of ``assertions`` that hold over ``view`` (:func:`pareis.core.radii.held`):
    none unless the snapshot is of the current lineage generation (:attr:`~pareis.store.exposure.ExposureRead.fresh`,
    read in the same round trip as the radii). One read; the others are the caller's to walk."""
    if not assertions:
        return {}
    found = index.read((), radii=assertions)
    return held(view, found.radii) if found.fresh else {}
