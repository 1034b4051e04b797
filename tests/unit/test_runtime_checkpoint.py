"""The commit protocol against recording stand-ins for the consumer and producer (no broker).

Covers ordering (outputs durable before offsets), error classification at each call, and what is kept or dropped;
the real broker behaviour is covered by tests/integration/test_runtime_*.py.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
import structlog
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from pareis.contracts.records import OutRecord, RawMessage
from pareis.errors import Fatal, Poison
from pareis.kafka import dlq
from pareis.kafka.at_least_once import AtLeastOnce
from pareis.kafka.checkpoint import DeliveryFailed
from pareis.kafka.classify import AbortTransaction
from pareis.kafka.exactly_once import ExactlyOnce


def fail(code: int, **flags: bool) -> KafkaException:
    return KafkaException(KafkaError(code, "injected", **flags))


class Calls:
    """Stand-in for a Consumer and a Producer at once; records calls in order, raises what ``script`` says."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []
        self.script: dict[str, list[BaseException]] = {}
        self.delivery_error: KafkaError | None = None
        self._pending_reports: list[tuple[Callable[[KafkaError | None, Any], None], KafkaError | None]] = []

    def _call(self, name: str, arg: Any = None) -> None:
        self.log.append((name, arg))
        errors = self.script.get(name)
        if errors:
            raise errors.pop(0)

    # consumer
    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> list[TopicPartition] | None:
        self._call(
            "commit_async" if asynchronous else "commit", [(tp.topic, tp.partition, tp.offset) for tp in offsets]
        )
        return None if asynchronous else offsets

    def consumer_group_metadata(self) -> str:
        return "group-metadata"

    # producer
    def produce(self, topic: str, value: bytes, key: bytes, headers: Any, on_delivery: Any) -> None:
        self._call("produce", (topic, key, value))
        # The error set when it was produced, and a stand-in for the message the report carries.
        report = SimpleNamespace(headers=lambda: headers)
        self._pending_reports.append((lambda err, _msg: on_delivery(err, report), self.delivery_error))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        self._call("flush")
        for report, error in self._pending_reports:
            report(error, None)
        self._pending_reports.clear()
        return 0

    def init_transactions(self, timeout: float) -> None:
        self._call("init_transactions")

    def begin_transaction(self) -> None:
        self._call("begin_transaction")

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: str, timeout: float) -> None:
        self._call("send_offsets_to_transaction", ([(tp.topic, tp.partition, tp.offset) for tp in offsets], metadata))

    def commit_transaction(self, timeout: float) -> None:
        self._call("commit_transaction")

    def abort_transaction(self, timeout: float) -> None:
        self._call("abort_transaction")

    def names(self) -> list[str]:
        return [name for name, _ in self.log]


RECORD = OutRecord("out", b"k", b"v")


def alo(calls: Calls, every: int = 2) -> AtLeastOnce:
    return AtLeastOnce(calls, calls, commit_every=every, commit_interval_s=3600, deadline_s=0.5)  # type: ignore[arg-type]


def eos(calls: Calls, every: int = 2) -> ExactlyOnce:
    return ExactlyOnce(calls, calls, commit_every=every, commit_interval_s=3600, deadline_s=0.5)  # type: ignore[arg-type]


def test_at_least_once_flushes_outputs_before_committing_the_next_offsets() -> None:
    calls = Calls()
    checkpoint = alo(calls)
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 0): 11}, 1)
    assert not checkpoint.due()
    checkpoint.advance({("in", 0): 12, ("in", 1): 5}, 1)
    assert checkpoint.due()
    checkpoint.commit()
    assert calls.names() == ["produce", "flush", "commit"]
    assert calls.log[-1] == ("commit", [("in", 0, 12), ("in", 1, 5)])
    assert not checkpoint.due() and checkpoint.pending == {}


def test_at_least_once_commits_nothing_when_an_output_was_not_delivered() -> None:
    calls = Calls()
    calls.delivery_error = KafkaError(KafkaError._MSG_TIMED_OUT, "timed out", retriable=True)
    checkpoint = alo(calls, every=1)
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 0): 1}, 1)
    with pytest.raises(DeliveryFailed):  # an abort (rewind and redo), not a retry of the same batch
        checkpoint.commit()
    assert "commit" not in calls.names()


def test_at_least_once_commits_nothing_past_an_earlier_batch_whose_output_failed_delivery() -> None:
    calls = Calls()
    checkpoint = alo(calls, every=2)
    calls.delivery_error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "no such topic", retriable=True)
    checkpoint.produce([OutRecord("dlq", b"k", b"poison")])  # batch N: its dead letter will fail
    checkpoint.advance({("in", 0): 5}, 1)
    assert not checkpoint.due()
    calls.delivery_error = None
    checkpoint.produce([RECORD])  # batch N+1 is fine; its commit is due
    checkpoint.advance({("in", 0): 9}, 1)
    assert checkpoint.due()
    with pytest.raises(DeliveryFailed):
        checkpoint.commit()
    assert "commit" not in calls.names()
    # Every pending offset is dropped (the runner rewinds to the committed ones); a retried commit of whatever
    # comes next can never carry batch N's offsets.
    assert checkpoint.pending == {} and not checkpoint.due()
    checkpoint.commit()
    assert "commit" not in calls.names()


def test_at_least_once_keeps_offsets_refused_during_a_rebalance_and_forgets_revoked_ones() -> None:
    calls = Calls()
    calls.script["commit"] = [fail(KafkaError.REBALANCE_IN_PROGRESS)]
    checkpoint = alo(calls, every=1)
    checkpoint.advance({("in", 0): 7, ("in", 1): 3}, 2)
    checkpoint.commit()
    assert checkpoint.pending == {("in", 0): 7, ("in", 1): 3}
    checkpoint.forget([("in", 1)])
    checkpoint.commit()
    assert calls.log[-1] == ("commit", [("in", 0, 7)])


def test_at_least_once_retries_a_retriable_commit_and_gives_up_fatally_at_the_deadline() -> None:
    calls = Calls()
    calls.script["commit"] = [fail(KafkaError._TRANSPORT), fail(KafkaError.COORDINATOR_NOT_AVAILABLE)]
    checkpoint = alo(calls, every=1)
    checkpoint.advance({("in", 0): 1}, 1)
    checkpoint.commit()
    assert calls.names().count("commit") == 3
    calls.script["commit"] = [fail(KafkaError._TRANSPORT)] * 1000
    checkpoint.advance({("in", 0): 2}, 1)
    with pytest.raises(Fatal, match="gave up"):
        checkpoint.commit()


def test_exactly_once_puts_outputs_and_offsets_in_one_transaction() -> None:
    calls = Calls()
    checkpoint = eos(calls)
    checkpoint.init()
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 2): 40}, 2)
    assert checkpoint.due()
    checkpoint.commit()
    assert calls.names() == [
        "init_transactions",
        "begin_transaction",
        "produce",
        "send_offsets_to_transaction",
        "commit_transaction",
    ]
    assert calls.log[3] == ("send_offsets_to_transaction", ([("in", 2, 40)], "group-metadata"))
    checkpoint.commit()  # nothing open: nothing to do
    assert calls.names().count("commit_transaction") == 1


def test_exactly_once_aborts_on_an_abortable_error_and_tells_the_runner_to_rewind() -> None:
    calls = Calls()
    calls.script["commit_transaction"] = [fail(KafkaError._TIMED_OUT, txn_requires_abort=True)]
    checkpoint = eos(calls)
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 0): 3}, 2)
    with pytest.raises(AbortTransaction):
        checkpoint.commit()
    assert calls.names()[-1] == "abort_transaction"
    assert checkpoint.pending == {} and not checkpoint.in_transaction
    checkpoint.produce([RECORD])  # the redo opens a fresh transaction
    assert calls.names()[-2:] == ["begin_transaction", "produce"]


def test_exactly_once_says_when_it_aborted_an_open_transaction_and_only_then() -> None:
    calls = Calls()
    checkpoint = eos(calls)
    with structlog.testing.capture_logs() as logs:
        checkpoint.abort()  # nothing open: nothing aborted, nothing said
        checkpoint.produce([RECORD])
        checkpoint.advance({("in", 0): 3}, 2)
        checkpoint.abort()  # e.g. its partitions were lost: the broker agreed to abort, the role goes on
    assert calls.names().count("abort_transaction") == 1
    assert [(e["event"], e["uncommitted"]) for e in logs if e["event"] == "transaction aborted"] == [
        ("transaction aborted", 2)
    ]


def test_exactly_once_retries_a_retriable_commit_and_stops_when_fenced() -> None:
    calls = Calls()
    calls.script["commit_transaction"] = [fail(KafkaError._TIMED_OUT, retriable=True)]
    checkpoint = eos(calls)
    checkpoint.advance({("in", 0): 3}, 2)
    checkpoint.commit()
    assert calls.names().count("commit_transaction") == 2
    calls.script["send_offsets_to_transaction"] = [fail(KafkaError._FENCED, fatal=True)]
    checkpoint.advance({("in", 0): 5}, 2)
    with pytest.raises(Fatal):
        checkpoint.commit()


def letter(value: bytes) -> OutRecord:
    poison = RawMessage("in", 0, 7, b"k", value)
    return dlq.dead_letter("dlq", poison, "lineage", Poison("bad"), max_bytes=10_000)


def test_a_dead_letter_is_bounded_with_the_original_size_and_hash() -> None:
    small, big = letter(b"x" * 100), letter(bytes(range(256)) * 100)
    assert small.value == b"x" * 100 and dlq.TRUNCATED not in dict(small.headers)
    headers = dict(big.headers)
    assert headers[dlq.TRUNCATED] == b"true" and headers[dlq.ORIGINAL_SIZE] == b"25600"
    assert headers[dlq.ORIGINAL_SHA256] == hashlib.sha256(bytes(range(256)) * 100).hexdigest().encode()
    assert big.value and (bytes(range(256)) * 100).startswith(big.value) and dlq.size(big) <= 10_000


def test_a_dead_letter_the_broker_refuses_as_too_large_is_redone_with_headers_only_never_fatal() -> None:
    calls = Calls()
    checkpoint = alo(calls, every=1)
    calls.delivery_error = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large")
    checkpoint.produce([letter(b"x" * 5000)])
    checkpoint.advance({("in", 0): 8}, 1)
    with pytest.raises(DeliveryFailed):
        checkpoint.commit()
    calls.delivery_error = None
    checkpoint.produce([letter(b"x" * 5000)])  # the redo after the rewind
    assert calls.log[-1][1][2] == b""
    checkpoint.advance({("in", 0): 8}, 1)
    checkpoint.commit()
    assert calls.log[-1] == ("commit", [("in", 0, 8)])


def test_a_dead_letter_over_the_producers_limit_is_produced_with_headers_only() -> None:
    calls = Calls()
    calls.script["produce"] = [fail(KafkaError.MSG_SIZE_TOO_LARGE)]
    alo(calls).produce([letter(b"x" * 5000)])
    assert [arg[2] for name, arg in calls.log if name == "produce"] == [b"x" * 5000, b""]
    calls.script["produce"] = [fail(KafkaError.MSG_SIZE_TOO_LARGE)]
    with pytest.raises(Fatal):  # a too large output that is not a dead letter is a bug: stop
        alo(calls).produce([RECORD])


# --- at-least-once on the hot path: the asynchronous commit ---------------------------------------------------------
def reply(
    calls: Calls, checkpoint: AtLeastOnce, err: KafkaError | None = None, errors: dict[int, KafkaError] | None = None
) -> None:
    """The broker's reply to the last asynchronous commit, as the consumer's ``on_commit`` callback gives it."""
    name, offsets = calls.log[_last(calls)]
    assert name == "commit_async"
    partitions: list[Any] = [  # TopicPartition's error is read-only: a stand-in with the same attributes
        SimpleNamespace(topic=topic, partition=partition, offset=offset, error=(errors or {}).get(partition))
        for topic, partition, offset in offsets
    ]
    checkpoint.commit_result(err, partitions)


def _last(calls: Calls) -> int:
    return max(i for i, (name, _) in enumerate(calls.log) if name == "commit_async")


def test_the_hot_path_flushes_outputs_then_commits_without_waiting_and_acts_on_the_reply_later() -> None:
    calls = Calls()
    told: list[dict[tuple[str, int], int]] = []
    checkpoint = AtLeastOnce(calls, calls, commit_every=2, commit_interval_s=3600, on_committed=told.append)  # type: ignore[arg-type]
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 0): 2}, 2)
    assert checkpoint.due()
    checkpoint.commit_soon()
    assert calls.names() == ["produce", "flush", "commit_async"]
    assert checkpoint.pending == {} and not checkpoint.due() and told == []
    # One commit in flight at a time: more due work waits for the reply, with nothing flushed meanwhile.
    checkpoint.advance({("in", 0): 4}, 2)
    checkpoint.commit_soon()
    assert calls.names() == ["produce", "flush", "commit_async"]
    reply(calls, checkpoint)
    assert checkpoint.due()  # the reply is there to be acted upon
    checkpoint.commit_soon()
    assert told == [{("in", 0): 2}]
    assert calls.log[-1] == ("commit_async", [("in", 0, 4)]) and checkpoint.pending == {}


def test_offsets_the_broker_refused_asynchronously_are_kept_unless_later_ones_are_pending() -> None:
    calls = Calls()
    checkpoint = alo(calls, every=1)
    checkpoint.advance({("in", 0): 3, ("in", 1): 8}, 2)
    checkpoint.commit_soon()
    checkpoint.advance({("in", 1): 9}, 1)
    reply(calls, checkpoint, KafkaError(KafkaError.REBALANCE_IN_PROGRESS, "rebalancing"))
    checkpoint.commit_soon()
    # Partition 0's refused offset is committed again; partition 1's later offset supersedes the refused one.
    assert calls.log[-1] == ("commit_async", [("in", 0, 3), ("in", 1, 9)])
    reply(calls, checkpoint, errors={1: KafkaError(KafkaError.REQUEST_TIMED_OUT, "slow", retriable=True)})
    checkpoint.commit_soon()  # nothing new is due: partition 1's failed offset is kept for the next commit
    assert checkpoint.pending == {("in", 1): 9}


def test_a_fatal_asynchronous_reply_is_raised_on_the_loop_and_a_retriable_one_only_until_the_deadline() -> None:
    calls = Calls()
    checkpoint = alo(calls, every=1)
    checkpoint.advance({("in", 0): 1}, 1)
    checkpoint.commit_soon()
    reply(calls, checkpoint, KafkaError(KafkaError._FENCED, "fenced", fatal=True))
    with pytest.raises(Fatal):
        checkpoint.commit_soon()
    calls, checkpoint = Calls(), alo(Calls(), every=1)
    checkpoint = AtLeastOnce(calls, calls, commit_every=1, commit_interval_s=3600, deadline_s=0.0)  # type: ignore[arg-type]
    checkpoint.advance({("in", 0): 1}, 1)
    checkpoint.commit_soon()
    reply(calls, checkpoint, KafkaError(KafkaError._TRANSPORT, "down", retriable=True))
    checkpoint.commit_soon()  # the first failure starts the deadline: kept, and sent again
    assert checkpoint.pending == {} and calls.names().count("commit_async") == 2
    reply(calls, checkpoint, KafkaError(KafkaError._TRANSPORT, "down", retriable=True))
    threading.Event().wait(0.01)
    with pytest.raises(Fatal, match="gave up"):
        checkpoint.commit_soon()


def test_a_synchronous_commit_supersedes_the_one_in_flight_and_its_late_reply_is_ignored() -> None:
    calls = Calls()
    told: list[dict[tuple[str, int], int]] = []
    checkpoint = AtLeastOnce(calls, calls, commit_every=1, commit_interval_s=3600, on_committed=told.append)  # type: ignore[arg-type]
    checkpoint.advance({("in", 0): 5, ("in", 1): 2}, 2)
    checkpoint.commit_soon()
    checkpoint.advance({("in", 0): 7}, 1)
    checkpoint.commit()  # e.g. on revocation: never older than what is in flight
    assert calls.log[-1] == ("commit", [("in", 0, 7), ("in", 1, 2)])
    assert told == [{("in", 0): 7, ("in", 1): 2}]
    # The superseded commit's reply, even a refusal, can never bring its older offsets back.
    calls.log.append(("commit_async", [("in", 0, 5), ("in", 1, 2)]))
    reply(calls, checkpoint, KafkaError(KafkaError.REBALANCE_IN_PROGRESS, "rebalancing"))
    checkpoint.commit_soon()
    assert checkpoint.pending == {} and not checkpoint.due()


def test_a_revoked_partitions_offsets_in_flight_are_not_kept_when_their_commit_is_refused() -> None:
    calls = Calls()
    checkpoint = alo(calls, every=1)
    checkpoint.advance({("in", 0): 5, ("in", 1): 2}, 2)
    checkpoint.commit_soon()
    checkpoint.forget([("in", 1)])
    reply(calls, checkpoint, KafkaError(KafkaError.REBALANCE_IN_PROGRESS, "rebalancing"))
    checkpoint.commit_soon()
    assert calls.log[-1] == ("commit_async", [("in", 0, 5)])


def test_the_hot_path_commits_nothing_past_an_output_that_was_not_delivered() -> None:
    calls = Calls()
    calls.delivery_error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "no such topic", retriable=True)
    checkpoint = alo(calls, every=1)
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 0): 1}, 1)
    with pytest.raises(DeliveryFailed):
        checkpoint.commit_soon()
    assert "commit_async" not in calls.names() and checkpoint.pending == {}
