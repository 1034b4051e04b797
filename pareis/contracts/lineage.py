"""What the lineage index stores, as plain data: an aspect's facts (edges and attributes), its version stamp, the
update that replaces them, and the record kept per (entity, aspect). The rules that apply them are the port's
(:mod:`pareis.store.lineage`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from pareis.core.graph import Attr, Rel

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
    """What a store did with one update (:mod:`pareis.store.lineage`)."""

    APPLIED = "applied"
    """The index changed to hold the update."""
    REPEATED = "repeated"
    """The record is this very update already (same stamp, same facts): a redelivery. The index is unchanged, but
    the update's effects are due again: it may be the redo of an attempt that applied it and stopped before what
    followed from it (the watch's signals, the lineage generation) was delivered."""
    UNCHANGED = "unchanged"
    """Facts equal to the record's under another stamp (a restatement): nothing changed, nothing follows."""
    STALE = "stale"
    """Older than the record: ignored."""

    @property
    def effective(self) -> bool:
        """Whether what follows from the update is due: it was applied now, or is a redelivery of one applied."""
        return self in _EFFECTIVE


_EFFECTIVE = frozenset({Outcome.APPLIED, Outcome.REPEATED})


@dataclass(frozen=True)
class AspectRecord:
    """What the store remembers of one (entity, aspect): its stamp and its facts (None after a DELETE)."""

    stamp: Stamp
    facts: Facts | None
