"""The assertions role: run events → run history + signals keyed by the canonical sibling (in-memory ports)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pareis.compose.ports import Ports
from pareis.compose.roles import assertions_pipeline
from pareis.config import Settings
from pareis.contracts.records import Message, RawMessage, header
from pareis.core.graph import Rel
from pareis.core.keys import canonical, incident_keys, sibling_classes
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.wire.codec import Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.errors import DecodeError
from pareis.kafka.batch import BatchProcessor
from pareis.kafka.dlq import ERROR_REASON
from pareis.roles.assertions import AssertionsHandler, Observed, ObservedOperation, ObservedRun
from pareis.roles.messages import decode_signal
from pareis.store.lineage import Facts, LineageUpdate, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.runs_memory import MemoryRunHistory

TOPIC = "MetadataChangeLog_Timeseries_v1"
SIGNALS = "pareis.signals.v1"


def ds(platform: str, name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},{name},PROD)"


WAREHOUSE = ds("snowflake", "shop.orders")
DBT = ds("dbt", "shop.orders")
DBT_SOURCE = ds("dbt", "shop.raw_orders")
EPHEMERAL_A = ds("dbt", "shop.eph_a")
EPHEMERAL_B = ds("dbt", "shop.eph_b")
ALONE = ds("postgres", "shop.alone")
A1 = "urn:li:assertion:not_null_order_id"
A2 = "urn:li:assertion:unique_order_id"


def siblings(store: MemoryLineageStore, entity: str, *others: str) -> None:
    facts = Facts.of((Rel.SIBLING, entity, o) for o in others)
    store.apply([LineageUpdate(entity, "siblings", Stamp(1, 1), facts)])


@pytest.fixture
def lineage() -> MemoryLineageStore:
    store = MemoryLineageStore()
    # dbt declares the warehouse table; the warehouse side says nothing: the relation is read both ways.
    siblings(store, DBT, WAREHOUSE)
    siblings(store, DBT_SOURCE, DBT)  # a chain: the class is transitive
    siblings(store, EPHEMERAL_A, EPHEMERAL_B)
    return store


def test_sibling_classes_are_transitive_and_symmetric(lineage: MemoryLineageStore) -> None:
    classes = sibling_classes(lineage, [WAREHOUSE, DBT_SOURCE, ALONE])
    assert classes[WAREHOUSE] == classes[DBT_SOURCE] == {WAREHOUSE, DBT, DBT_SOURCE}
    assert classes[ALONE] == {ALONE}


def test_the_incident_key_is_the_non_dbt_member_else_the_smallest(lineage: MemoryLineageStore) -> None:
    keys = incident_keys(lineage, [DBT, DBT_SOURCE, WAREHOUSE, EPHEMERAL_B, ALONE])
    assert keys == {DBT: WAREHOUSE, DBT_SOURCE: WAREHOUSE, WAREHOUSE: WAREHOUSE, EPHEMERAL_B: EPHEMERAL_A, ALONE: ALONE}
    # Order-independent: the smallest non-dbt URN wins even when a dbt URN sorts first.
    assert canonical([ds("snowflake", "b"), ds("dbt", "a"), ds("bigquery", "c")]) == ds("bigquery", "c")


def observed(assertion: str, ts: int, result: ResultType, dataset: str = DBT, rows: int | None = None) -> ObservedRun:
    return ObservedRun(AssertionRun(assertion, ts, result, dataset, f"run-{ts}", rows), logged_ms=ts + 7)


def messages(*values: ObservedRun) -> list[Message[ObservedRun]]:
    return [Message(TOPIC, 0, i, v.run.assertion.encode(), v) for i, v in enumerate(values)]


def test_signals_are_keyed_by_the_canonical_sibling_and_runs_are_recorded(lineage: MemoryLineageStore) -> None:
    runs = MemoryRunHistory()
    handler = AssertionsHandler(runs, lineage, SIGNALS)
    batch = messages(
        observed(A1, 100, ResultType.FAILURE, rows=3),
        observed(A2, 100, ResultType.SUCCESS, dataset=WAREHOUSE),
        observed(A1, 50, ResultType.SUCCESS, dataset=ALONE),
    )
    out = handler(batch)
    assert [(r.topic, r.key) for r in out] == [
        (SIGNALS, WAREHOUSE.encode()),
        (SIGNALS, WAREHOUSE.encode()),
        (SIGNALS, ALONE.encode()),
    ]
    first = decode_signal(out[0].value or b"")
    assert first.dataset == WAREHOUSE and first.run == batch[0].value.run and first.logged_ms == 107
    assert first.run.dataset == DBT, "the run keeps its assertee as DataHub wrote it"
    assert runs.assertions_of(DBT) == [A1] and runs.assertions_of(WAREHOUSE) == [A2]
    assert runs.get(A1, 100) == batch[0].value.run


def test_error_and_init_runs_are_recorded_but_not_forwarded(lineage: MemoryLineageStore) -> None:
    runs = MemoryRunHistory()
    out = AssertionsHandler(runs, lineage, SIGNALS)(
        messages(observed(A1, 1, ResultType.ERROR), observed(A1, 2, ResultType.INIT))
    )
    assert out == []
    assert [r.result for r in runs.runs(A1)] == [ResultType.ERROR, ResultType.INIT]


def test_a_run_seen_before_is_forwarded_again_as_the_history_has_it(lineage: MemoryLineageStore) -> None:
    """At-least-once: a crash between recording and producing must not lose the signal; the stored run wins."""
    runs = MemoryRunHistory()
    handler = AssertionsHandler(runs, lineage, SIGNALS)
    handler(messages(observed(A1, 100, ResultType.FAILURE, rows=3)))
    again = handler(messages(observed(A1, 100, ResultType.FAILURE, rows=99)))
    assert len(again) == 1
    assert decode_signal(again[0].value or b"").run.failed_rows == 3
    assert len(runs.runs(A1)) == 1


class CountingRuns(MemoryRunHistory):
    """The in-memory history, counting the write calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, int] = {}

    def record_many(self, runs: Sequence[AssertionRun]) -> list[AssertionRun | None]:
        self.calls["record_many"] = self.calls.get("record_many", 0) + 1
        return super().record_many(runs)

    def record_operations(self, changes: Sequence[tuple[str, int]]) -> list[bool]:
        self.calls["record_operations"] = self.calls.get("record_operations", 0) + 1
        return super().record_operations(changes)


def test_a_batch_is_recorded_in_one_write_of_its_runs_and_one_of_its_operations(lineage: MemoryLineageStore) -> None:
    """One round trip per batch on Redis, however many messages (before: one or more per message)."""
    runs = CountingRuns()
    handler = AssertionsHandler(runs, lineage, SIGNALS)
    batch: list[Message[Observed]] = [
        *messages(*(observed(A1, ts, ResultType.FAILURE) for ts in range(1, 40))),
        Message(TOPIC, 0, 40, WAREHOUSE.encode(), ObservedOperation(WAREHOUSE, 5)),
        Message(TOPIC, 0, 41, WAREHOUSE.encode(), ObservedOperation(WAREHOUSE, 6)),
        *messages(observed(A1, 1, ResultType.SUCCESS)),  # a redelivery of the first, other content
    ]
    out = handler(batch)
    assert runs.calls == {"record_many": 1, "record_operations": 1}
    assert len(out) == 40 and decode_signal(out[-1].value or b"").run == runs.get(A1, 1)
    assert runs.last_operation(WAREHOUSE, 10) == 6


# --- through the role's pipeline, from encoded change-log frames ---------------------------------------------------
def frame(aspect_name: str, aspect: Any, *, created_ms: int | None = 5_000, entity: str = A1) -> bytes:
    record = mcl_record(
        entity_urn=entity,
        aspect_name=aspect_name,
        aspect=aspect,
        created={"time": created_ms, "actor": "urn:li:corpuser:datahub"} if created_ms is not None else None,
    )
    return Encoder(VendoredSchemaSource(), TOPIC).encode_mcl(record)


def event(assertion: str, ts: int, result: str | None, assertee: str = DBT) -> dict[str, Any]:
    value: dict[str, Any] = {
        "timestampMillis": ts,
        "runId": "inv-1",
        "asserteeUrn": assertee,
        "assertionUrn": assertion,
        "status": "COMPLETE",
    }
    if result is not None:
        value["result"] = {"type": result, "nativeResults": {"failures": "17"} if result == "FAILURE" else None}
    return value


def raw(value: bytes, offset: int, timestamp_ms: int | None = None) -> RawMessage:
    return RawMessage(TOPIC, 0, offset, A1.encode(), value, (), timestamp_ms)


def test_the_pipeline_decodes_run_events_and_dead_letters_invalid_ones(lineage: MemoryLineageStore) -> None:
    settings = Settings()
    ports = Ports.in_memory()
    ports.lineage = lineage
    pipeline = assertions_pipeline(settings, ports)
    batch = [
        raw(frame("assertionRunEvent", event(A1, 100, "FAILURE")), 0),
        raw(frame("datasetProfile", {"timestampMillis": 1}, entity=WAREHOUSE), 1),  # not a run: filtered
        raw(frame("assertionRunEvent", {"timestampMillis": 3, "asserteeUrn": DBT}), 2),  # no assertionUrn: poison
        raw(frame("assertionRunEvent", event(A2, 200, "SUCCESS"), created_ms=None), 3, timestamp_ms=9_000),
        raw(frame("assertionRunEvent", event(A2, 300, "SUCCESS"), created_ms=None), 4),
    ]
    result = BatchProcessor("assertions", pipeline, "dlq").process(batch)
    signals = [decode_signal(r.value or b"") for r in result.outputs if r.topic == SIGNALS]
    assert [(s.dataset, s.run.assertion, s.run.failed_rows) for s in signals] == [
        (WAREHOUSE, A1, 17),
        (WAREHOUSE, A2, None),
        (WAREHOUSE, A2, None),
    ]
    assert [s.logged_ms for s in signals] == [5_000, 9_000, 300], "created.time, else Kafka time, else run time"
    (dead,) = [r for r in result.outputs if r.topic == "dlq"]
    assert header(dead.headers, ERROR_REASON) == b"aspect-shape"
    assert dead.value == batch[2].value
    assert sum(result.tally.filtered.values()) == 1


def test_a_malformed_run_event_is_a_located_decode_error() -> None:
    pipeline = assertions_pipeline(Settings(), Ports.in_memory())
    bad = event(A1, 100, "MAYBE")
    with pytest.raises(DecodeError) as caught:
        pipeline.decode(raw(frame("assertionRunEvent", bad), 8))
    assert caught.value.reason == "aspect-shape"
    assert caught.value.origin is not None and caught.value.origin.offset == 8


def test_the_pipeline_records_dataset_operations_without_a_signal() -> None:
    ports = Ports.in_memory()
    pipeline = assertions_pipeline(Settings(), ports)
    operation = {"timestampMillis": 7_000, "lastUpdatedTimestamp": 6_500, "operationType": "INSERT"}
    batch = [
        raw(frame("operation", operation, entity=WAREHOUSE), 0),
        raw(frame("operation", {"timestampMillis": 8_000}, entity=WAREHOUSE), 1),
        raw(frame("operation", {"operationType": "DROP"}, entity=WAREHOUSE), 2),  # no time: nothing to record
    ]
    result = BatchProcessor("assertions", pipeline, "dlq").process(batch)
    assert result.outputs == []
    assert ports.runs.last_operation(WAREHOUSE, 7_999) == 6_500  # lastUpdatedTimestamp, else the event's time
    assert ports.runs.last_operation(WAREHOUSE, 10_000) == 8_000
    assert ports.runs.assertions_of(WAREHOUSE) == []


@pytest.mark.parametrize("open_on_low", [False, True])
def test_a_failure_of_severity_low_is_a_warning_unless_the_setting_opens_on_it(open_on_low: bool) -> None:
    """DESIGN §2.3: dbt's ``warn`` (result.severity LOW) is recorded as a warning by the running role, not only by
    file readers; ``incidents.open_on_low_severity`` makes it a failure like any other."""
    settings = Settings.model_validate({"incidents": {"open_on_low_severity": open_on_low}})
    low = event(A1, 100, "FAILURE")
    low["result"]["severity"] = "LOW"
    observed_run = assertions_pipeline(settings, Ports.in_memory()).decode(raw(frame("assertionRunEvent", low), 0))
    assert isinstance(observed_run, ObservedRun)
    assert observed_run.run.severity == "LOW"
    assert (observed_run.run.warning, observed_run.run.fails) == (not open_on_low, open_on_low)
