"""The stores as one batch of a role reads them: what the retrain gates of a scores batch ask, or the signals of an
incidents batch, asked once.

The retrain gate (:func:`pareis.answers.gate.gate`) opens a :class:`~pareis.core.graph.Memo` of its own per model,
so the gates of one batch — every model downstream of its datasets — would each ask the store the same questions
(the upstream walks and the blast radii of the incidents near each model overlap almost entirely: on Redis, one
round trip per step of each walk). :class:`LineageReads` sits between those memos and the store: what any of them
asked once is answered from memory for the rest of the batch, and only what none asked yet goes to the store, still
one round trip per question batch. The answers are the store's raw answers (each memo applies removal itself), so
every gate answers exactly as it would over the store, over one snapshot of it for the whole batch.
:class:`RunReads` does the same for the run history's questions about datasets (which have failed, which
assertions ran on each: every gate lists the incident candidates) and for the timelines asked ahead
(:meth:`RunReads.prefetch`: the incidents role reads the timelines of a batch's signals in one round trip before
it steps them), and passes the others through.

Read-only: writes are refused. Not thread-safe (one batch, one thread).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from pareis.contracts.lineage import AspectRecord, LineageUpdate, Outcome
from pareis.core.graph import Adjacency, Attr, Outline, Query, Rel, unasked
from pareis.core.runs import AssertionRun
from pareis.errors import Fatal
from pareis.store.lineage import LineageStore
from pareis.store.runs import RunHistory


class LineageReads:
    """A :class:`~pareis.store.lineage.LineageStore` that reads through to ``store`` once per question."""

    def __init__(self, store: LineageStore) -> None:
        self._store = store
        self._edges: dict[tuple[Rel, bool], dict[str, frozenset[str]]] = {}
        self._attrs: dict[str, Mapping[str, str]] = {}
        self._attr: dict[Attr, dict[str, str | None]] = {}
        self._outlines: dict[str, Outline] = {}
        self._records: dict[tuple[str, str], AspectRecord | None] = {}
        self._entities: dict[str, list[str]] = {}

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        missing = unasked(queries, self._edges)
        if missing:
            for q, answer in zip(missing, self._store.lookup(missing), strict=True):
                known = self._edges[(q.rel, q.reverse)]
                for node in q.nodes:
                    known[node] = answer.get(node, frozenset())
        return [{n: self._edges[(q.rel, q.reverse)][n] for n in q.nodes} for q in queries]

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        todo = sorted({n for n in nodes if n not in self._attrs})
        if todo:
            found = self._store.attributes(todo)
            self._attrs.update({n: found.get(n, {}) for n in todo})
        return {n: self._attrs[n] for n in nodes}

    def attribute(self, nodes: Collection[str], name: Attr) -> Mapping[str, str | None]:
        known = self._attr.setdefault(name, {})
        todo = sorted({n for n in nodes if n not in known})
        if todo:
            found = self._store.attribute(todo, name)
            known.update({n: found.get(n) for n in todo})
        return {n: known[n] for n in nodes}

    def outlines(self, datasets: Collection[str]) -> Mapping[str, Outline]:
        todo = sorted({d for d in datasets if d not in self._outlines})
        if todo:
            self._outlines.update(self._store.outlines(todo))
        return {d: self._outlines[d] for d in datasets}

    def record(self, entity: str, aspect: str) -> AspectRecord | None:
        key = (entity, aspect)
        if key not in self._records:
            self._records[key] = self._store.record(entity, aspect)
        return self._records[key]

    def records(self, keys: Sequence[tuple[str, str]]) -> list[AspectRecord | None]:
        todo = sorted({key for key in keys if key not in self._records})
        if todo:
            self._records.update(zip(todo, self._store.records(todo), strict=True))
        return [self._records[key] for key in keys]

    def entities(self, aspect: str) -> list[str]:
        if aspect not in self._entities:
            self._entities[aspect] = self._store.entities(aspect)
        return list(self._entities[aspect])

    def apply(self, updates: Sequence[LineageUpdate]) -> list[Outcome]:
        raise Fatal("the scores role reads the lineage index; it never writes it")


class RunReads:
    """A :class:`~pareis.store.runs.RunHistory` that keeps ``runs``' answers about datasets for the batch."""

    def __init__(self, runs: RunHistory) -> None:
        self._runs = runs
        self._failed: list[str] | None = None
        self._datasets: list[str] | None = None
        self._by_dataset: dict[str, list[str]] = {}
        self._timelines: dict[tuple[frozenset[str], int | None], list[AssertionRun]] = {}

    def prefetch(self, queries: Iterable[tuple[Collection[str], int | None]]) -> None:
        """Read the timelines of ``queries`` (assertions, floor) not read yet, in one round trip: a later
        :meth:`timeline` of the same question is answered from memory."""
        todo = sorted({(frozenset(a), f) for a, f in queries} - self._timelines.keys(), key=_question)
        if todo:
            self._timelines.update(zip(todo, self._runs.timelines(todo), strict=True))

    def failed_datasets(self) -> list[str]:
        if self._failed is None:
            self._failed = self._runs.failed_datasets()
        return list(self._failed)

    def datasets(self) -> list[str]:
        if self._datasets is None:
            self._datasets = self._runs.datasets()
        return list(self._datasets)

    def assertions_by_dataset(self, datasets: Iterable[str]) -> dict[str, list[str]]:
        wanted = set(datasets)
        todo = sorted(wanted - self._by_dataset.keys())
        if todo:
            self._by_dataset.update(self._runs.assertions_by_dataset(todo))
        return {d: list(self._by_dataset[d]) for d in sorted(wanted)}

    def assertions_of(self, dataset: str) -> list[str]:
        return self.assertions_by_dataset([dataset])[dataset]

    def get(self, assertion: str, timestamp_ms: int) -> AssertionRun | None:
        return self._runs.get(assertion, timestamp_ms)

    def latest(self, assertion: str, at_ms: int, *, counting: bool = False) -> AssertionRun | None:
        return self._runs.latest(assertion, at_ms, counting=counting)

    def runs(self, assertion: str, start_ms: int | None = None, end_ms: int | None = None) -> list[AssertionRun]:
        return self._runs.runs(assertion, start_ms, end_ms)

    def timeline(self, assertions: Iterable[str], floor_ms: int | None) -> list[AssertionRun]:
        found = self._timelines.get((frozenset(assertions), floor_ms))
        return list(found) if found is not None else self._runs.timeline(assertions, floor_ms)

    def timelines(self, queries: Sequence[tuple[Collection[str], int | None]]) -> list[list[AssertionRun]]:
        self.prefetch(queries)
        return [self.timeline(a, f) for a, f in queries]

    def latest_of(
        self, assertions: Iterable[str], at_ms: int
    ) -> dict[str, tuple[AssertionRun | None, AssertionRun | None]]:
        return self._runs.latest_of(assertions, at_ms)

    def last_operations(self, datasets: Iterable[str], at_ms: int) -> dict[str, int]:
        return self._runs.last_operations(datasets, at_ms)

    def last_operation(self, dataset: str, at_ms: int) -> int | None:
        return self._runs.last_operation(dataset, at_ms)

    def record(self, run: AssertionRun) -> bool:
        raise Fatal(_READ_ONLY)

    def record_many(self, runs: Sequence[AssertionRun]) -> list[AssertionRun | None]:
        raise Fatal(_READ_ONLY)

    def record_operation(self, dataset: str, time_ms: int) -> bool:
        raise Fatal(_READ_ONLY)

    def record_operations(self, changes: Sequence[tuple[str, int]]) -> list[bool]:
        raise Fatal(_READ_ONLY)


_READ_ONLY = "a role reading the run history through a batch never writes it (the assertions role records runs)"


def _question(query: tuple[frozenset[str], int | None]) -> tuple[list[str], int]:
    """An order of timeline questions (deterministic round trips)."""
    assertions, floor = query
    return sorted(assertions), -1 if floor is None else floor
