"""The lineage index in process memory: for tests, the offline CLI (``--metadata FILE``) and the demo."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pareis.core.graph import Adjacency, Attr, Outline, Query, Rel, outlines_of
from pareis.store.lineage import AspectRecord, Edge, Facts, LineageUpdate, Outcome

_EMPTY = Facts()
_NONE: frozenset[str] = frozenset()  # the answer of every node without edges (one object, not one each)


class MemoryLineageStore:
    """:class:`~pareis.store.lineage.LineageStore` in dictionaries; not thread-safe."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], AspectRecord] = {}
        # (relation, node) → {neighbour: number of records contributing the edge}
        self._out: dict[tuple[Rel, str], dict[str, int]] = {}
        self._in: dict[tuple[Rel, str], dict[str, int]] = {}
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
                return Outcome.REPEATED if old.stamp == update.stamp else Outcome.UNCHANGED
        before = old.facts if old is not None and old.facts is not None else _EMPTY
        after = update.facts if update.facts is not None else _EMPTY
        if before.edges:
            self._withdraw(before.edges - after.edges)
            self._add(after.edges - before.edges)
        else:
            self._add(after.edges)
        attrs = self._attrs.setdefault(update.entity, {})
        for name in before.attrs.keys() - after.attrs.keys():
            attrs.pop(name, None)
        attrs.update(after.attrs)
        if not attrs:
            del self._attrs[update.entity]
        self._records[key] = AspectRecord(update.stamp, update.facts)
        return Outcome.APPLIED

    def _add(self, edges: Collection[Edge]) -> None:
        out, into = self._out, self._in
        for rel, src, dst in edges:
            targets = out.get((rel, src))
            if targets is None:
                out[(rel, src)] = {dst: 1}
            else:
                targets[dst] = targets.get(dst, 0) + 1
            sources = into.get((rel, dst))
            if sources is None:
                into[(rel, dst)] = {src: 1}
            else:
                sources[src] = sources.get(src, 0) + 1

    def _withdraw(self, edges: Collection[Edge]) -> None:
        for rel, src, dst in edges:
            for index, node, other in ((self._out, src, dst), (self._in, dst, src)):
                counts = index[(rel, node)]
                if counts[other] > 1:
                    counts[other] -= 1
                else:
                    del counts[other]
                    if not counts:
                        del index[(rel, node)]

    def record(self, entity: str, aspect: str) -> AspectRecord | None:
        return self._records.get((entity, aspect))

    def records(self, keys: Sequence[tuple[str, str]]) -> list[AspectRecord | None]:
        return [self._records.get(key) for key in keys]

    def entities(self, aspect: str) -> list[str]:
        return sorted(e for (e, a), r in self._records.items() if a == aspect and r.facts is not None)

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        out: list[Adjacency] = []
        for q in queries:
            index = self._in if q.reverse else self._out
            rel = q.rel
            out.append({n: frozenset(found) if (found := index.get((rel, n))) else _NONE for n in q.nodes})
        return out

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        return {n: {str(k): v for k, v in self._attrs.get(n, {}).items()} for n in nodes}

    def attribute(self, nodes: Collection[str], name: Attr) -> Mapping[str, str | None]:
        return {n: self._attrs.get(n, {}).get(name) for n in nodes}

    def outlines(self, datasets: Collection[str]) -> Mapping[str, Outline]:
        return outlines_of(self, datasets)
