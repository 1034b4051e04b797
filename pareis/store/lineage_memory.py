"""The lineage index in process memory: for tests, the offline CLI (``--metadata FILE``) and the demo."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from pareis.core.graph import Adjacency, Attr, Query, Rel
from pareis.store.lineage import Edge, Facts, LineageUpdate, Outcome, Record

_EMPTY = Facts()


class MemoryLineageStore:
    """:class:`~pareis.store.lineage.LineageStore` in dictionaries; not thread-safe."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], Record] = {}
        self._out: dict[tuple[Rel, str], Counter[str]] = {}
        self._in: dict[tuple[Rel, str], Counter[str]] = {}
        self._attrs: dict[str, dict[Attr, str]] = {}

    def apply(self, updates: Sequence[LineageUpdate]) -> list[Outcome]:
        return [self._apply(u) for u in updates]

    def _apply(self, update: LineageUpdate) -> Outcome:
        key = (update.entity, update.aspect)
        old = self._records.get(key)
        if old is not None:
            if update.stamp.older_than(old.stamp, other_deleted=old.facts is None):
                return Outcome.STALE
            if old.facts == update.facts:
                return Outcome.UNCHANGED
        before = old.facts if old is not None and old.facts is not None else _EMPTY
        after = update.facts if update.facts is not None else _EMPTY
        for edge in before.edges - after.edges:
            self._count(edge, -1)
        for edge in after.edges - before.edges:
            self._count(edge, +1)
        attrs = self._attrs.setdefault(update.entity, {})
        for name in before.attrs.keys() - after.attrs.keys():
            attrs.pop(name, None)
        attrs.update(after.attrs)
        if not attrs:
            del self._attrs[update.entity]
        self._records[key] = Record(update.stamp, update.facts)
        return Outcome.APPLIED

    def _count(self, edge: Edge, delta: int) -> None:
        rel, src, dst = edge
        for index, node, other in ((self._out, src, dst), (self._in, dst, src)):
            counter = index.setdefault((rel, node), Counter())
            counter[other] += delta
            if counter[other] <= 0:
                del counter[other]
                if not counter:
                    del index[(rel, node)]

    def record(self, entity: str, aspect: str) -> Record | None:
        return self._records.get((entity, aspect))

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        out: list[Adjacency] = []
        for q in queries:
            index = self._in if q.reverse else self._out
            out.append({n: frozenset(index.get((q.rel, n), ())) for n in q.nodes})
        return out

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        return {n: {str(k): v for k, v in self._attrs.get(n, {}).items()} for n in nodes}
