"""The exposure index port (DESIGN §2.5): a versioned snapshot of what lies downstream of every column, the
affected columns of past incidents as of that snapshot, for ``pareis protect`` and the retrain gate, and the blast
radius of every defined assertion (:mod:`pareis.core.radii`), for the incidents role and the gate, which take one only
from a snapshot of the current lineage generation (:attr:`ExposureRead.fresh`).

The lineage role counts its changes (:meth:`ExposureIndex.touch`: the lineage *generation*); a maintainer
(:mod:`pareis.roles.exposure`) recomputes the whole snapshot (:func:`pareis.core.exposure_index.snapshot`) when the
generation moved and publishes it as a new *version*. Readers read the last complete version and are told its age
(the time it was computed, and how many lineage changes it is behind). Rules, identical in every implementation
(``tests/unit/test_exposure_store.py`` runs both):

* **Complete versions only.** :meth:`publish` writes every entry of a version, then makes it current in one step;
  a reader sees the previous version or the new one, never a mix.
* **Never backwards.** A version computed from an older generation than the current one is not made current
  (two maintainers racing: the later lineage wins); :meth:`publish` says whether it was.
* **One round trip** (two on Redis) per read, whatever the number of datasets and incidents asked.
* **Incidents join the current version.** :meth:`add_incidents` adds affected columns to the version they were
  computed for; it does nothing (returns False) when that version is no longer current.
* The previous version stays readable until the next publish, for readers in flight.

Implementations: :class:`MemoryExposureIndex` (here) and :class:`pareis.store.exposure_redis.RedisExposureIndex`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pareis.core.exposure_index import DatasetExposure, IncidentColumns, decode, encode
from pareis.core.radii import AssertionRadius


@dataclass(frozen=True)
class ExposureVersion:
    """One published snapshot: its sequence number, the lineage generation it was computed from, and when."""

    version: int
    generation: int
    computed_at_ms: int

    def to_json(self, current_generation: int, at_ms: int | None = None) -> dict[str, int | None]:
        """How a reader states the snapshot's age."""
        return {
            "version": self.version,
            "computed_at_ms": self.computed_at_ms,
            "lineage_generation": self.generation,
            "lineage_changes_since": max(0, current_generation - self.generation),
            "age_ms": None if at_ms is None else max(0, at_ms - self.computed_at_ms),
        }


@dataclass(frozen=True)
class ExposureRead:
    """What one read returns: the version read (None: nothing published yet), the current lineage generation, the
    entries of the datasets asked that have one, and the incident and assertion radius entries asked that the
    version holds."""

    version: ExposureVersion | None
    generation: int
    datasets: Mapping[str, DatasetExposure] = field(default_factory=dict)
    incidents: Mapping[str, IncidentColumns] = field(default_factory=dict)
    radii: Mapping[str, AssertionRadius] = field(default_factory=dict)

    @property
    def fresh(self) -> bool:
        """Whether the version read is of the current lineage generation (no change came after it)."""
        return self.version is not None and self.version.generation >= self.generation


@runtime_checkable
class ExposureIndex(Protocol):
    """Errors are :class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`."""

    def touch(self) -> int:
        """The lineage changed: advance the generation; the new generation."""
        ...

    def generation(self) -> int:
        """The current lineage generation (0 before any change)."""
        ...

    def current(self) -> ExposureVersion | None:
        """The current version, None when none was published."""
        ...

    def publish(
        self,
        generation: int,
        computed_at_ms: int,
        entries: Mapping[str, DatasetExposure],
        incidents: Iterable[IncidentColumns] = (),
        radii: Iterable[AssertionRadius] = (),
    ) -> ExposureVersion | None:
        """Write a complete version and make it current, unless the current one is of a newer generation (then
        the written version is dropped and None returned)."""
        ...

    def add_incidents(self, version: int, incidents: Iterable[IncidentColumns]) -> bool:
        """Add (replace) incident entries of ``version`` when it is current; False when it is not."""
        ...

    def read(self, datasets: Iterable[str], incidents: Iterable[str] = (), radii: Iterable[str] = ()) -> ExposureRead:
        """The entries of ``datasets``, ``incidents`` and the radii of the assertions ``radii`` in the current
        version."""
        ...

    def incident_urns(self) -> set[str]:
        """The URNs of every incident entry of the current version."""
        ...


@dataclass
class _Version:
    head: ExposureVersion
    datasets: dict[str, str]
    incidents: dict[str, str]
    radii: dict[str, str]


class MemoryExposureIndex:
    """:class:`ExposureIndex` in process memory; keeps the encoded entries, so it round-trips as Redis does.
    Thread-safe (the maintainer publishes from its own thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._sequence = 0
        self._current: _Version | None = None

    def touch(self) -> int:
        with self._lock:
            self._generation += 1
            return self._generation

    def generation(self) -> int:
        with self._lock:
            return self._generation

    def current(self) -> ExposureVersion | None:
        with self._lock:
            return None if self._current is None else self._current.head

    def publish(
        self,
        generation: int,
        computed_at_ms: int,
        entries: Mapping[str, DatasetExposure],
        incidents: Iterable[IncidentColumns] = (),
        radii: Iterable[AssertionRadius] = (),
    ) -> ExposureVersion | None:
        datasets = {d: encode(e) for d, e in entries.items()}
        found = {i.urn: i.encode() for i in incidents}
        kept = {r.assertion: r.encode() for r in radii}
        with self._lock:
            self._sequence += 1
            if self._current is not None and self._current.head.generation > generation:
                return None
            head = ExposureVersion(self._sequence, generation, computed_at_ms)
            self._current = _Version(head, datasets, found, kept)
            return head

    def add_incidents(self, version: int, incidents: Iterable[IncidentColumns]) -> bool:
        found = {i.urn: i.encode() for i in incidents}
        with self._lock:
            if self._current is None or self._current.head.version != version:
                return False
            self._current.incidents.update(found)
            return True

    def read(self, datasets: Iterable[str], incidents: Iterable[str] = (), radii: Iterable[str] = ()) -> ExposureRead:
        with self._lock:
            current, generation = self._current, self._generation
            if current is None:
                return ExposureRead(None, generation)
            texts = {d: current.datasets[d] for d in set(datasets) if d in current.datasets}
            found = {u: current.incidents[u] for u in set(incidents) if u in current.incidents}
            kept = {a: current.radii[a] for a in set(radii) if a in current.radii}
        return ExposureRead(
            current.head,
            generation,
            {d: decode(d, t) for d, t in sorted(texts.items())},
            {u: IncidentColumns.decode(u, t) for u, t in sorted(found.items())},
            {a: AssertionRadius.decode(a, t) for a, t in sorted(kept.items())},
        )

    def incident_urns(self) -> set[str]:
        with self._lock:
            return set() if self._current is None else set(self._current.incidents)
