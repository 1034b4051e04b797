"""What one batch of the scores role reads (pareis.roles.batch_reads): the stores' own answers, each question asked of
the store once, writes refused; and the gate over them answers as over the stores."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from pareis.answers.gate import gate
from pareis.answers.render import dump
from pareis.answers.sources import Sources
from pareis.core.graph import Attr, Query, Rel
from pareis.errors import Fatal
from pareis.roles.batch_reads import LineageReads, RunReads
from tests.support.recorded import RAW, mlflow, recorded_sources

FAILING_MS = 1_759_730_400_000  # 2025-10-06T06:00Z: the recording's failing step


class Counting:
    """Counts the calls of each method of what it wraps."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        self.calls[name] += 1
        return getattr(self.inner, name)


def test_lineage_reads_answer_as_the_store_asking_it_each_question_once() -> None:
    store = Counting(recorded_sources().lineage)
    reads = LineageReads(store)  # type: ignore[arg-type]
    columns = [Query(Rel.HAS_COLUMN, [RAW]), Query(Rel.DATASET, [RAW, "urn:li:dataset:unknown"], True)]
    first = reads.lookup(columns)
    assert first == store.inner.lookup(columns)
    assert reads.lookup(columns[:1]) == first[:1] and store.calls["lookup"] == 1
    assert reads.attributes([RAW]) == store.inner.attributes([RAW])
    assert reads.attribute([RAW], Attr.REMOVED) == store.inner.attribute([RAW], Attr.REMOVED)
    assert reads.outlines([RAW]) == store.inner.outlines([RAW])
    assert reads.record(RAW, "schemaMetadata") == store.inner.record(RAW, "schemaMetadata")
    keys = [(RAW, "schemaMetadata"), (RAW, "upstreamLineage")]
    assert reads.records(keys) == store.inner.records(keys)  # the one not read yet asked of the store
    assert reads.entities("mlModelProperties") == store.inner.entities("mlModelProperties")
    for _ in range(2):  # asked again: answered from the batch's reads
        reads.attributes([RAW])
        reads.attribute([RAW], Attr.REMOVED)
        reads.outlines([RAW])
        reads.record(RAW, "schemaMetadata")
        reads.records(keys)
        reads.entities("mlModelProperties")
    assert dict(store.calls) == dict.fromkeys(
        ("lookup", "attributes", "attribute", "outlines", "record", "records", "entities"), 1
    )
    with pytest.raises(Fatal, match="never writes"):
        reads.apply([])


def test_run_reads_keep_the_dataset_questions_and_pass_the_others_through() -> None:
    runs = Counting(recorded_sources().runs)
    reads = RunReads(runs)  # type: ignore[arg-type]
    for _ in range(3):
        assert reads.failed_datasets() == runs.inner.failed_datasets()
        assert reads.assertions_by_dataset([RAW]) == runs.inner.assertions_by_dataset([RAW])
        assert reads.assertions_of(RAW) == runs.inner.assertions_of(RAW)
    assert (runs.calls["failed_datasets"], runs.calls["assertions_by_dataset"]) == (1, 1)
    names = reads.assertions_of(RAW)
    assert reads.timeline(names, None) == runs.inner.timeline(names, None)
    assert reads.latest_of(names, FAILING_MS) == runs.inner.latest_of(names, FAILING_MS)
    with pytest.raises(Fatal, match="never writes"):
        reads.record_operation(RAW, 1)


def test_run_reads_answer_the_timelines_read_ahead_from_memory() -> None:
    runs = Counting(recorded_sources().runs)
    reads = RunReads(runs)  # type: ignore[arg-type]
    names = runs.inner.assertions_of(RAW)
    questions = [(set(names), None), (set(names[:1]), FAILING_MS), (set(), FAILING_MS)]
    reads.prefetch([*questions, (set(reversed(names)), None)])  # the same question twice: read once
    assert runs.calls["timelines"] == 1
    for assertions, floor in questions:
        assert reads.timeline(assertions, floor) == runs.inner.timeline(assertions, floor)
    assert reads.timelines(questions) == [runs.inner.timeline(a, f) for a, f in questions]
    assert (runs.calls["timelines"], runs.calls["timeline"]) == (1, 0)
    # A question not read ahead goes to the store.
    assert reads.timeline(names, FAILING_MS - 1) == runs.inner.timeline(names, FAILING_MS - 1)
    assert runs.calls["timeline"] == 1


def test_the_gate_over_one_batch_reads_answers_as_over_the_stores() -> None:
    sources = recorded_sources()
    batch = Sources(LineageReads(sources.lineage), RunReads(sources.runs), origin="batch")
    for model in (mlflow("mlModelGroup", "churn"), mlflow("mlModel", "churn_3"), mlflow("mlModel", "ltv_2")):
        expected = dump(gate(sources, model=model, at_ms=FAILING_MS).to_json())
        assert dump(gate(batch, model=model, at_ms=FAILING_MS).to_json()) == expected, model
