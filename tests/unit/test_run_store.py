"""The run history contract: one suite, run against the in-memory and the Redis implementation."""

from __future__ import annotations

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pareis.core.runs import AssertionRun, ResultType
from pareis.errors import Fatal, Retriable
from pareis.store.runs import RunHistory
from pareis.store.runs_memory import MemoryRunHistory
from pareis.store.runs_redis import RedisRunHistory
from tests.support.backends import Backend

S, F, E, INIT = ResultType.SUCCESS, ResultType.FAILURE, ResultType.ERROR, ResultType.INIT
DS = "urn:li:dataset:(urn:li:dataPlatform:snowflake,shop.orders,PROD)"
OTHER = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.orders,PROD)"
A, B = "urn:li:assertion:a", "urn:li:assertion:b"


def run(assertion: str, ts: int, result: ResultType, dataset: str = DS, rows: int | None = None) -> AssertionRun:
    return AssertionRun(assertion, ts, result, dataset, run_id=f"r{ts}", failed_rows=rows)


@pytest.fixture
def store(backend: Backend) -> RunHistory:
    if backend.client is None:
        return MemoryRunHistory()
    return RedisRunHistory(backend.client, prefix="test:runs:")


def test_implementations_satisfy_the_port(store: RunHistory) -> None:
    assert isinstance(store, RunHistory)


def test_record_is_idempotent_by_assertion_and_timestamp(store: RunHistory) -> None:
    first = run(A, 100, F, rows=3)
    assert store.record(first) is True
    assert store.record(first) is False
    # Same identity, different content: the stored run is kept, and the new one never counts.
    assert store.record(run(A, 100, S)) is False
    assert store.runs(A) == [first]
    assert store.latest(A, 1000, counting=True) == first
    # Same timestamp on another assertion is another run.
    assert store.record(run(B, 100, S)) is True


def test_a_duplicate_error_never_reaches_the_counting_history(store: RunHistory) -> None:
    store.record(run(A, 100, E))
    store.record(run(A, 100, F))
    assert store.latest(A, 100, counting=True) is None
    assert store.latest(A, 100) == run(A, 100, E)


def test_runs_come_back_in_time_order_whatever_the_recording_order(store: RunHistory) -> None:
    for ts in (300, 100, 200, -50):
        store.record(run(A, ts, S))
    assert [r.timestamp_ms for r in store.runs(A)] == [-50, 100, 200, 300]


def test_every_field_round_trips(store: RunHistory) -> None:
    stored = AssertionRun(A, 1_700_000_000_123, F, OTHER, run_id="invocation-7", failed_rows=42)
    unknown = AssertionRun(A, 1_700_000_000_124, F, OTHER, run_id="", failed_rows=None)
    store.record(stored)
    store.record(unknown)
    assert store.get(A, 1_700_000_000_123) == stored
    assert store.get(A, 1_700_000_000_124) == unknown
    assert store.get(A, 1_700_000_000_125) is None


def test_latest_at_or_before(store: RunHistory) -> None:
    for r in (run(A, 100, S), run(A, 200, F), run(A, 300, E), run(A, 400, INIT)):
        store.record(r)
    assert store.latest(A, 99) is None
    assert store.latest(A, 100) == run(A, 100, S)
    assert store.latest(A, 199) == run(A, 100, S)
    assert store.latest(A, 200) == run(A, 200, F)
    assert store.latest(A, 10_000) == run(A, 400, INIT)
    # Counting runs only: ERROR and INIT say nothing about the data.
    assert store.latest(A, 10_000, counting=True) == run(A, 200, F)
    assert store.latest("urn:li:assertion:none", 10_000) is None


def test_runs_in_a_time_range_include_both_ends(store: RunHistory) -> None:
    for ts in (100, 200, 300, 400):
        store.record(run(A, ts, S))
    assert [r.timestamp_ms for r in store.runs(A, 200, 300)] == [200, 300]
    assert [r.timestamp_ms for r in store.runs(A, 201, 299)] == []
    assert [r.timestamp_ms for r in store.runs(A, None, 200)] == [100, 200]
    assert [r.timestamp_ms for r in store.runs(A, 300, None)] == [300, 400]
    with pytest.raises(ValueError, match="empty time range"):
        store.runs(A, 5, 4)


def test_assertions_of_a_dataset_are_those_run_against_it(store: RunHistory) -> None:
    store.record(run(B, 1, S))
    store.record(run(A, 2, F))
    store.record(run("urn:li:assertion:c", 3, S, dataset=OTHER))
    assert store.assertions_of(DS) == [A, B]
    assert store.assertions_of(OTHER) == ["urn:li:assertion:c"]
    assert store.assertions_of("urn:li:dataset:(x,y,PROD)") == []


def test_datasets_are_every_assertee_with_a_run_sorted(store: RunHistory) -> None:
    assert store.datasets() == []
    store.record(run(A, 2, F, dataset=OTHER))
    store.record(run(B, 1, S))
    store.record(run(A, 3, S, dataset=OTHER))
    assert store.datasets() == sorted([DS, OTHER])


def test_timeline_is_everything_from_the_floor_plus_each_counting_seed(store: RunHistory) -> None:
    for r in (
        run(A, 100, F),
        run(A, 150, S),  # A's seed: latest counting run before the floor
        run(A, 180, E),  # not a seed: ERROR
        run(A, 200, F),  # at the floor: included as a run
        run(A, 250, INIT),
        run(B, 120, S),  # B's seed
        run(B, 300, F),
        run("urn:li:assertion:c", 50, S),  # not asked for
    ):
        store.record(r)
    assert store.timeline([B, A, A], 200) == [
        run(B, 120, S),
        run(A, 150, S),
        run(A, 200, F),
        run(A, 250, INIT),
        run(B, 300, F),
    ]
    assert [(r.assertion, r.timestamp_ms) for r in store.timeline([A], None)] == [
        (A, 100),
        (A, 150),
        (A, 180),
        (A, 200),
        (A, 250),
    ]
    assert store.timeline([], 0) == []


def test_redis_store_reports_an_unreachable_server_as_retriable() -> None:
    client = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    with pytest.raises(Retriable):
        RedisRunHistory(client).latest(A, 0)


@pytest.mark.integration
def test_redis_store_reports_corrupt_data_and_wrong_types_as_fatal(redis_client: redis.Redis) -> None:
    store = RedisRunHistory(redis_client, prefix="t:")
    redis_client.zadd("t:{" + A + "}:all", {"not json": 5})
    with pytest.raises(Fatal, match="corrupt run"):
        store.runs(A)
    redis_client.set("t:{" + B + "}:all", "a string")
    with pytest.raises(Fatal, match="WRONGTYPE"):
        store.latest(B, 10)


def test_operations_record_when_a_dataset_changed(store: RunHistory) -> None:
    assert store.last_operation(DS, 10_000) is None
    assert store.record_operation(DS, 300) is True
    assert store.record_operation(DS, 100) is True
    assert store.record_operation(DS, 300) is False  # the same change time again: a redelivery
    store.record_operation(OTHER, 200)
    assert store.last_operation(DS, 99) is None
    assert store.last_operation(DS, 100) == 100  # at or before
    assert store.last_operation(DS, 299) == 100
    assert store.last_operation(DS, 10_000) == 300
    assert store.last_operation(OTHER, 10_000) == 200
    # Operations are not runs: they never show up as assertions or datasets with runs.
    assert store.assertions_of(DS) == []
    assert store.datasets() == []


def test_failed_datasets_are_those_a_failure_was_recorded_for(store: RunHistory) -> None:
    store.record(run(A, 1, S))
    store.record(run(B, 2, E, dataset=OTHER))
    assert store.failed_datasets() == []
    store.record(run(A, 3, F))
    store.record(run(B, 4, F, dataset=OTHER))
    store.record(run(A, 5, F))
    assert store.failed_datasets() == sorted([DS, OTHER])


def test_batched_reads_equal_their_one_by_one_forms(store: RunHistory) -> None:
    for r in (run(A, 1, S), run(A, 2, E), run(B, 3, F, dataset=OTHER), run(B, 4, INIT, dataset=OTHER)):
        store.record(r)
    store.record_operation(DS, 5)
    names, datasets = [A, B, "urn:li:assertion:none"], [DS, OTHER, "urn:li:dataset:(x,none,PROD)"]
    for at in (0, 2, 3, 10):
        assert store.latest_of(names, at) == {
            n: (store.latest(n, at), store.latest(n, at, counting=True)) for n in names
        }
        assert store.last_operations(datasets, at) == {
            d: t for d in datasets if (t := store.last_operation(d, at)) is not None
        }
    assert store.assertions_by_dataset(datasets) == {d: store.assertions_of(d) for d in datasets}
    assert (
        store.latest_of([], 10) == {} and store.assertions_by_dataset([]) == {} and store.last_operations([], 1) == {}
    )


def test_a_batch_of_runs_records_as_one_by_one_and_says_what_was_stored(store: RunHistory) -> None:
    first = run(A, 100, F, rows=3)
    store.record(first)
    batch = [
        run(A, 100, S),  # stored already (other content): the stored run comes back, and it never counts
        run(B, 50, E, dataset=OTHER),
        run(A, 200, F),
        run(B, 50, F, dataset=OTHER),  # the batch's own earlier run is stored
        run(B, 60, S, dataset=OTHER),
    ]
    assert store.record_many(batch) == [first, None, None, run(B, 50, E, dataset=OTHER), None]
    assert store.runs(A) == [first, run(A, 200, F)]
    assert store.runs(B) == [run(B, 50, E, dataset=OTHER), run(B, 60, S, dataset=OTHER)]
    assert store.latest(B, 55, counting=True) is None
    assert store.assertions_of(OTHER) == [B]
    # A FAILURE offered for a dataset counts it as failed even when a run with its identity was stored already.
    assert store.failed_datasets() == sorted([DS, OTHER])
    assert store.record_many([]) == []
    assert store.record_many(batch) == [first, *(batch[1], batch[2], batch[1], batch[4])]


def test_a_batch_of_operations_records_as_one_by_one(store: RunHistory) -> None:
    assert store.record_operations([(DS, 300), (OTHER, 200), (DS, 300), (DS, 100)]) == [True, True, False, True]
    assert store.record_operations([(DS, 100)]) == [False]
    assert store.record_operations([]) == []
    assert store.last_operations([DS, OTHER], 250) == {DS: 100, OTHER: 200}


def test_timelines_are_each_questions_timeline(store: RunHistory) -> None:
    for r in (run(A, 100, F), run(A, 150, S), run(A, 200, E), run(B, 120, S), run(B, 300, F)):
        store.record(r)
    questions: list[tuple[set[str], int | None]] = [({A, B}, 200), ({A}, None), (set(), 0), ({B, "urn:li:x"}, 121)]
    assert store.timelines(questions) == [store.timeline(a, f) for a, f in questions]
    assert store.timelines([]) == []
