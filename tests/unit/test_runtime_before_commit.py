"""The pipeline's ``before_commit`` in both delivery modes (issue 34, item 5): asked after the outputs are flushed and
before any offset or transaction is committed; a Retriable of it commits nothing (the input is redone from the
committed offsets), a Fatal stops the role with nothing committed. Against a recording stand-in for the consumer
and producer (no broker)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import TopicPartition

from pareis.contracts.records import OutRecord
from pareis.errors import Fatal, Retriable
from pareis.kafka.at_least_once import AtLeastOnce
from pareis.kafka.checkpoint import DeliveryFailed, NotDurable
from pareis.kafka.classify import AbortTransaction
from pareis.kafka.exactly_once import ExactlyOnce

RECORD = OutRecord("out", b"k", b"v")


class Calls:
    """Stand-in for a Consumer and a Producer at once, recording the calls in order; every call succeeds."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []

    def names(self) -> list[str]:
        return [name for name, _ in self.log]

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> list[TopicPartition] | None:
        self.log.append(("commit_async" if asynchronous else "commit", offsets))
        return None if asynchronous else offsets

    def consumer_group_metadata(self) -> str:
        return "group-metadata"

    def produce(self, topic: str, value: bytes, key: bytes, headers: Any, on_delivery: Any) -> None:
        self.log.append(("produce", topic))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        self.log.append(("flush", None))
        return 0

    def begin_transaction(self) -> None:
        self.log.append(("begin_transaction", None))

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: str, timeout: float) -> None:
        self.log.append(("send_offsets_to_transaction", offsets))

    def commit_transaction(self, timeout: float) -> None:
        self.log.append(("commit_transaction", None))

    def abort_transaction(self, timeout: float) -> None:
        self.log.append(("abort_transaction", None))


class Durable:
    """A ``before_commit`` that logs itself into ``calls`` and raises what it is told to, once each."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        self.errors: list[BaseException] = []

    def __call__(self) -> None:
        self.calls.log.append(("before_commit", None))
        if self.errors:
            raise self.errors.pop(0)


def alo(calls: Calls, durable: Durable) -> AtLeastOnce:
    return AtLeastOnce(calls, calls, commit_every=1, commit_interval_s=3600, deadline_s=0.5, before_commit=durable)  # type: ignore[arg-type]


def eos(calls: Calls, durable: Durable) -> ExactlyOnce:
    return ExactlyOnce(calls, calls, commit_every=1, commit_interval_s=3600, deadline_s=0.5, before_commit=durable)  # type: ignore[arg-type]


@pytest.mark.parametrize("soon", [False, True], ids=["commit", "commit_soon"])
def test_at_least_once_asks_after_the_flush_and_before_the_commit(soon: bool) -> None:
    calls = Calls()
    durable = Durable(calls)
    checkpoint = alo(calls, durable)
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 0): 4}, 1)
    checkpoint.commit_soon() if soon else checkpoint.commit()
    assert calls.names() == ["produce", "flush", "before_commit", "commit_async" if soon else "commit"]


@pytest.mark.parametrize("soon", [False, True], ids=["commit", "commit_soon"])
def test_at_least_once_commits_nothing_the_replicas_did_not_acknowledge(soon: bool) -> None:
    calls = Calls()
    durable = Durable(calls)
    durable.errors.append(Retriable("0 of 1 replicas acknowledged"))
    checkpoint = alo(calls, durable)
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 0): 4}, 1)
    with pytest.raises(NotDurable, match="not committed: 0 of 1 replicas") as raised:
        checkpoint.commit_soon() if soon else checkpoint.commit()
    assert isinstance(raised.value, DeliveryFailed)  # the runner backs off and rewinds to the committed offsets
    assert "commit" not in calls.names() and "commit_async" not in calls.names()
    assert checkpoint.pending == {}


def test_exactly_once_asks_before_the_offsets_join_the_transaction() -> None:
    calls = Calls()
    durable = Durable(calls)
    checkpoint = eos(calls, durable)
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 0): 4}, 1)
    checkpoint.commit()
    assert calls.names() == [
        "begin_transaction",
        "produce",
        "before_commit",
        "send_offsets_to_transaction",
        "commit_transaction",
    ]


def test_exactly_once_aborts_the_transaction_the_replicas_did_not_acknowledge() -> None:
    calls = Calls()
    durable = Durable(calls)
    durable.errors.append(Retriable("0 of 1 replicas acknowledged"))
    checkpoint = eos(calls, durable)
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 0): 4}, 1)
    with pytest.raises(AbortTransaction):
        checkpoint.commit()
    assert calls.names()[-1] == "abort_transaction" and "commit_transaction" not in calls.names()
    assert checkpoint.pending == {} and not checkpoint.in_transaction


@pytest.mark.parametrize("mode", [alo, eos], ids=["at-least-once", "exactly-once"])
def test_a_lost_redis_stops_the_role_with_nothing_committed(mode: object) -> None:
    calls = Calls()
    durable = Durable(calls)
    durable.errors.append(Fatal("redis lost its data"))
    checkpoint = mode(calls, durable)  # type: ignore[operator]
    checkpoint.produce([RECORD])
    checkpoint.advance({("in", 0): 4}, 1)
    with pytest.raises(Fatal, match="lost its data"):
        checkpoint.commit()
    assert not {"commit", "commit_transaction", "send_offsets_to_transaction"} & set(calls.names())
