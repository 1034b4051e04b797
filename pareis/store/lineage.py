"""The lineage index port: per-(entity, aspect) replacement of facts on the write side, the batched
:class:`~pareis.core.graph.LineageView` on the read side.

An update is *(entity urn, aspect name, version stamp, the facts this aspect contributes)*. The store keeps, per
(entity, aspect), a record of the stamp and of the facts it contributed, and applies an update as one atomic
unit: the edges and attributes in the record but not in the update are removed, the new ones added, the record
replaced. Rules, identical in every implementation (the contract suite pins them):

* **Newer wins.** An update *older* than the record (:meth:`Stamp.older_than`) is ignored: ``STALE``.
* **Idempotent.** Facts equal to the record's are a no-op (``UNCHANGED``; the record keeps its stamp) — this is
  how a ``RESTATE`` of an equal value, or a redelivery, costs nothing.
* **DELETE** (``facts=None``) removes the aspect's contribution and leaves a *tombstone* record with its stamp,
  so a late, older update cannot resurrect it; a later update after the tombstone applies again.
* **Shared edges are counted.** Two aspects contributing the same edge (a column edge stated by a dataset's
  ``upstreamLineage`` and by a job's ``dataJobInputOutput``) keep it until both withdraw it.
* **Attributes are owned.** Each :class:`~pareis.core.graph.Attr` is contributed by one aspect only; the record
  removes the attributes it set.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from pareis.core.graph import Attr, LineageView, Rel

Edge = tuple[Rel, str, str]
"""``(relation, src, dst)``."""


@dataclass(frozen=True, order=False)
class Stamp:
    """The version of an aspect value: ``systemMetadata.version`` when GMS sent one, and a time in ms (the MCL's
    ``created.time``, else ``systemMetadata.lastObserved``)."""

    version: int | None
    time_ms: int

    def older_than(self, other: Stamp, *, other_deleted: bool = False) -> bool:
        """Whether a value stamped ``self`` predates one stamped ``other``.

        Versions decide when both have one and they differ; otherwise, and always against a tombstone (aspect
        versions may restart after a deletion), the times decide. Equal stamps are not older (ties apply).
        """
        if other_deleted or self.version is None or other.version is None or self.version == other.version:
            return self.time_ms < other.time_ms
        return self.version < other.version


@dataclass(frozen=True)
class Facts:
    """What one aspect of one entity contributes: edges and attributes."""

    edges: frozenset[Edge] = frozenset()
    attrs: Mapping[Attr, str] = field(default_factory=dict)

    @staticmethod
    def of(edges: Iterable[Edge] = (), attrs: Mapping[Attr, str] | None = None) -> Facts:
        return Facts(frozenset(edges), dict(attrs or {}))

    def encode(self) -> str:
        """Canonical JSON (sorted; equal facts ⇔ equal strings)."""
        edges = sorted([str(r), s, d] for r, s, d in self.edges)
        attrs = sorted([str(k), v] for k, v in self.attrs.items())
        return json.dumps({"a": attrs, "e": edges}, separators=(",", ":"), ensure_ascii=False)

    @staticmethod
    def decode(text: str) -> Facts:
        obj = json.loads(text)
        return Facts(
            frozenset((Rel(r), s, d) for r, s, d in obj["e"]),
            {Attr(k): v for k, v in obj["a"]},
        )


@dataclass(frozen=True)
class LineageUpdate:
    """One aspect value of one entity, translated: replace that (entity, aspect)'s facts with ``facts``.

    ``facts=None`` is a DELETE of the aspect.
    """

    entity: str
    aspect: str
    stamp: Stamp
    facts: Facts | None


class Outcome(StrEnum):
    APPLIED = "applied"
    UNCHANGED = "unchanged"
    STALE = "stale"


@dataclass(frozen=True)
class Record:
    """What the store remembers of one (entity, aspect): its stamp and its facts (None after a DELETE)."""

    stamp: Stamp
    facts: Facts | None


class LineageStore(LineageView, Protocol):
    """The lineage index: write side plus the read view the core walks."""

    def apply(self, updates: Sequence[LineageUpdate]) -> list[Outcome]:
        """Apply updates in order, each atomically; one outcome per update. One round trip for the batch."""
        ...

    def record(self, entity: str, aspect: str) -> Record | None:
        """The record of (entity, aspect), None if the store never saw it."""
        ...

    def entities(self, aspect: str) -> list[str]:
        """Every entity with a live (not deleted) record of ``aspect``, sorted: the read side's enumeration (every
        model version is ``entities("mlModelProperties")``). Linear in the index size on Redis."""
        ...
