"""The lineage index port: per-(entity, aspect) replacement of facts on the write side, the batched
:class:`~pareis.core.graph.LineageView` on the read side.

An update is *(entity urn, aspect name, version stamp, the facts this aspect contributes)*. The store keeps, per
(entity, aspect), a record of the stamp and of the facts it contributed, and applies an update as one atomic
unit: the edges and attributes in the record but not in the update are removed, the new ones added, the record
replaced. Rules, identical in every implementation (the contract suite pins them):

* **Newer wins.** An update *older* than the record (:meth:`Stamp.older_than`) is ignored: ``STALE``.
* **Idempotent.** Facts equal to the record's are a no-op: ``REPEATED`` when the stamp is the record's too (a
  redelivery, whose effects the caller delivers again: the attempt that applied it may have stopped before it
  delivered them), ``UNCHANGED`` otherwise (a ``RESTATE`` of an equal value; the record keeps its stamp).
* **DELETE** (``facts=None``) removes the aspect's contribution and leaves a *tombstone* record with its stamp,
  so a late, older update cannot resurrect it; a later update after the tombstone applies again.
* **Shared edges are counted.** Two aspects contributing the same edge (a column edge stated by a dataset's
  ``upstreamLineage`` and by a job's ``dataJobInputOutput``) keep it until both withdraw it.
* **Attributes are owned.** Each :class:`~pareis.core.graph.Attr` is contributed by one aspect only; the record
  removes the attributes it set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pareis.contracts.lineage import AspectRecord, Edge, Facts, LineageUpdate, Outcome, Stamp
from pareis.core.graph import LineageView

__all__ = ["AspectRecord", "Edge", "Facts", "LineageStore", "LineageUpdate", "Outcome", "Stamp"]


class LineageStore(LineageView, Protocol):
    """The lineage index: write side plus the read view the core walks."""

    def apply(self, updates: Sequence[LineageUpdate]) -> list[Outcome]:
        """Apply updates in order, each atomically; one outcome per update. One round trip for the batch."""
        ...

    def record(self, entity: str, aspect: str) -> AspectRecord | None:
        """The record of (entity, aspect), None if the store never saw it."""
        ...

    def records(self, keys: Sequence[tuple[str, str]]) -> list[AspectRecord | None]:
        """:meth:`record` of each (entity, aspect) of ``keys``, in order. One round trip for them all."""
        ...

    def entities(self, aspect: str) -> list[str]:
        """Every entity with a live (not deleted) record of ``aspect``, sorted: the read side's enumeration (every
        model version is ``entities("mlModelProperties")``). Linear in the index size on Redis."""
        ...
