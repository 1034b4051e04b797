"""The runner's state machine against a scripted in-process consumer and producer (no broker): batch → durable →
commit; a failed delivery of an earlier batch's dead letter → back off, rewind to the committed offsets, redo; and
never a commit past an input whose outputs were not delivered (issue 11, points 1 and 16)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from pareis.config import KafkaSettings, RuntimeSettings, Settings, Topics
from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.errors import DecodeError
from pareis.kafka import runner as runner_module
from pareis.kafka import watchdog as watchdog_module
from pareis.kafka.role import Delivery, Pipeline, Role
from pareis.kafka.runner import RoleRunner
from pareis.telemetry.health import Health
from pareis.telemetry.metrics import RuntimeMetrics
from tests.support.stack import wait_until

TOPIC, OUT, DLQ = "in", "out", "dlq"


@dataclass
class Record:
    at: int
    data: bytes

    def offset(self) -> int:
        return self.at

    def value(self) -> bytes:
        return self.data

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return TOPIC

    def partition(self) -> int:
        return 0

    def key(self) -> bytes:
        return b"k"

    def headers(self) -> None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return (1, 0)


class Log:
    """One partition, its committed offset, and the producer's deliveries, shared by the two stand-ins."""

    def __init__(self, values: Sequence[bytes], failing_dlq_deliveries: int) -> None:
        self.records = [Record(i, v) for i, v in enumerate(values)]
        self.position = 0
        self.committed = -1001
        self.commits: list[tuple[int, list[tuple[str, bytes]]]] = []
        self.delivered: list[tuple[str, bytes]] = []
        self.seeks: list[int] = []
        self.failing = failing_dlq_deliveries
        self.lock = threading.Lock()


class Consumer:
    """Replies to asynchronous commits through ``on_commit`` during the next poll, as librdkafka does."""

    def __init__(self, log: Log, on_commit: Callable[..., None] | None = None) -> None:
        self.log = log
        self.assigned = False
        self.callbacks: dict[str, Callable[..., None]] = {}
        self.on_commit = on_commit
        self.replies: list[list[TopicPartition]] = []

    def subscribe(self, topics: list[str], **callbacks: Callable[..., None]) -> None:
        self.callbacks = callbacks

    def consume(self, n: int, timeout: float) -> list[Record]:
        replies, self.replies = self.replies, []
        for reply in replies:
            assert self.on_commit is not None
            self.on_commit(None, reply)
        if not self.assigned:
            self.assigned = True
            self.callbacks["on_assign"](self, [TopicPartition(TOPIC, 0)])
            return []
        with self.log.lock:
            batch = self.log.records[self.log.position : self.log.position + n]
            self.log.position += len(batch)
        if not batch:
            threading.Event().wait(min(timeout, 0.01))
        return batch

    def poll(self, timeout: float) -> None:
        threading.Event().wait(min(timeout, 0.01))

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> list[TopicPartition]:
        with self.log.lock:
            self.log.committed = offsets[0].offset
            self.log.commits.append((offsets[0].offset, list(self.log.delivered)))
        if asynchronous:
            self.replies.append(offsets)
        return offsets

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [TopicPartition(TOPIC, 0, self.log.committed)]

    def seek(self, tp: TopicPartition) -> None:
        with self.log.lock:
            self.log.position = max(tp.offset, 0)
            self.log.seeks.append(self.log.position)

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(TOPIC, 0)] if self.assigned else []

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        return None

    def pause(self, partitions: list[TopicPartition]) -> None:
        return None

    def resume(self, partitions: list[TopicPartition]) -> None:
        return None

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(TOPIC, 0, self.log.position)]

    def get_watermark_offsets(self, tp: TopicPartition, cached: bool = False) -> tuple[int, int]:
        return 0, len(self.log.records)

    def close(self) -> None:
        return None

    def list_topics(self, timeout: float) -> Any:
        return SimpleNamespace(topics={TOPIC: None})


class Producer:
    def __init__(self, log: Log) -> None:
        self.log = log
        self.queued: list[tuple[str, bytes, Callable[..., None]]] = []

    def produce(self, topic: str, value: bytes, key: bytes, headers: Any, on_delivery: Callable[..., None]) -> None:
        self.queued.append((topic, value, on_delivery))

    def poll(self, timeout: float) -> int:
        return 0  # reports are served by flush, as a broker that answers slowly would

    def flush(self, timeout: float) -> int:
        queued, self.queued = self.queued, []
        for topic, value, report in queued:
            if topic == DLQ and self.log.failing > 0:
                self.log.failing -= 1
                report(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "no such topic", retriable=True), None)
                continue
            self.log.delivered.append((topic, value))
            report(None, None)
        return 0


def stand_in(monkeypatch: pytest.MonkeyPatch, log: Log, consumer: type[Consumer] = Consumer) -> None:
    """The runner's Kafka clients replaced by the stand-ins over ``log`` (no broker, no topics to prepare)."""
    monkeypatch.setattr(
        runner_module.clients, "new_consumer", lambda config, on_error, on_commit: consumer(log, on_commit)
    )
    monkeypatch.setattr(runner_module.clients, "new_producer", lambda config, on_error: Producer(log))
    monkeypatch.setattr(runner_module.clients, "wait_for_brokers", lambda *args, **kwargs: None)
    monkeypatch.setattr(runner_module.topics, "prepare", lambda *args, **kwargs: set())


def decode(raw: RawMessage) -> bytes:
    assert raw.value is not None
    if raw.value.startswith(b"poison"):
        raise DecodeError("framing", "not a change log")
    return raw.value


def handle(batch: Sequence[Message[bytes]]) -> list[OutRecord]:
    return [OutRecord(OUT, m.key, m.value) for m in batch]


def run_until(settings: Settings, handler: Callable[..., list[OutRecord]], done: Callable[[], bool], what: str) -> None:
    """Run a role of ``handler`` over the stand-ins until ``done()``, then stop it (it must stop)."""
    role = Role("test", (TOPIC,), "g", Delivery.AT_LEAST_ONCE, lambda: Pipeline(decode, handler), (OUT, DLQ))
    stop = threading.Event()
    runner = RoleRunner(role, settings, metrics=RuntimeMetrics(), health=Health(), stop=stop)
    thread = threading.Thread(target=runner.run)
    thread.start()
    try:
        wait_until(done, 30, what)
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()


@pytest.mark.parametrize("commit_async", [False, True])
@pytest.mark.parametrize("failing", [0, 2])
@pytest.mark.parametrize(
    "cadence",
    [(4, 600_000), (100, 200)],
    ids=["commit-after-a-batch", "commit-when-idle"],  # the second: the commit is due with no batch in hand
)
def test_nothing_is_committed_past_a_dead_letter_until_it_is_delivered(
    monkeypatch: pytest.MonkeyPatch, failing: int, commit_async: bool, cadence: tuple[int, int]
) -> None:
    log = Log([b"poison-0", b"good-1", b"good-2", b"good-3"], failing_dlq_deliveries=failing)
    stand_in(monkeypatch, log)
    settings = Settings(
        kafka=KafkaSettings(topics=Topics(dlq=DLQ)),
        runtime=RuntimeSettings(batch_size=2, batch_timeout_s=0.01, commit_every=cadence[0],
                                commit_interval_ms=cadence[1], backoff_initial_s=0.01, backoff_max_s=0.02, roles={},
                                commit_async=commit_async),
    )  # fmt: skip
    run_until(settings, handle, lambda: log.committed == 4, "every offset committed")
    letter = (DLQ, b"poison-0")
    for offset, delivered in log.commits:
        assert offset <= 0 or letter in delivered, f"offset {offset} committed before the dead letter was delivered"
    assert log.delivered.count(letter) >= 1
    assert {(t, v) for t, v in log.delivered if t == OUT} == {(OUT, b"good-1"), (OUT, b"good-2"), (OUT, b"good-3")}
    if failing:
        assert log.seeks.count(0) >= failing, "each failed delivery rewound to the committed offset"
    else:
        assert log.seeks == [] and [offset for offset, _ in log.commits][-1] == 4


def test_the_loop_calls_between_after_each_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the process's collector runs (pareis.compose.heap.Collector.between) runs after every batch, before the
    next one is handled: never inside one."""
    log = Log([b"good-0", b"good-1", b"good-2", b"good-3", b"good-4", b"good-5"], failing_dlq_deliveries=0)
    stand_in(monkeypatch, log)
    handled: list[int] = []
    seen: list[int] = []  # how many batches were handled at each call of between

    def counted(batch: Sequence[Message[bytes]]) -> list[OutRecord]:
        handled.append(len(batch))
        return handle(batch)

    settings = Settings(
        kafka=KafkaSettings(topics=Topics(dlq=DLQ)),
        runtime=RuntimeSettings(batch_size=2, batch_timeout_s=0.01, commit_every=1, roles={}),
    )
    role = Role("test", (TOPIC,), "g", Delivery.AT_LEAST_ONCE, lambda: Pipeline(decode, counted), (OUT, DLQ))
    stop = threading.Event()
    runner = RoleRunner(
        role, settings, metrics=RuntimeMetrics(), health=Health(), stop=stop, between=lambda: seen.append(len(handled))
    )
    thread = threading.Thread(target=runner.run)
    thread.start()
    try:
        wait_until(lambda: log.committed == 6 and len(seen) > len(handled), 30, "every batch handled, then between")
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert set(range(1, len(handled) + 1)) <= set(seen), (handled, seen)


class TransactionalProducer(Producer):
    """A transactional producer whose records become visible only when their transaction commits; its first
    ``failing`` produce calls are refused with ``_STATE``, as librdkafka refuses them once the open transaction
    failed (its records timed out while the process was paused past ``transaction.timeout.ms``) until it is
    aborted."""

    def __init__(self, log: Log, failing: int) -> None:
        super().__init__(log)
        self.failing = failing
        self.open: list[tuple[str, bytes]] | None = None
        self.broken = False
        self.aborts = 0
        self.offsets: list[TopicPartition] = []

    def init_transactions(self, timeout: float) -> None:
        return None

    def begin_transaction(self) -> None:
        assert self.open is None, "a transaction begun inside another"
        self.open = []

    def produce(self, topic: str, value: bytes, key: bytes, headers: Any, on_delivery: Callable[..., None]) -> None:
        assert self.open is not None, "produce outside a transaction"
        if self.broken or self.failing > 0:
            if not self.broken:
                self.failing -= 1
                self.broken = True
            raise KafkaException(KafkaError(KafkaError._STATE, "Unable to produce message: Local: Erroneous state"))
        self.open.append((topic, value))

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: Any, timeout: float) -> None:
        self.offsets = offsets

    def commit_transaction(self, timeout: float) -> None:
        assert self.open is not None and not self.broken
        with self.log.lock:
            self.log.delivered.extend(self.open)
            self.log.committed = self.offsets[0].offset
            self.log.commits.append((self.log.committed, list(self.log.delivered)))
        self.open = None

    def abort_transaction(self, timeout: float) -> None:
        self.open, self.broken = None, False
        self.aborts += 1

    def flush(self, timeout: float) -> int:
        return 0


class TransactionalConsumer(Consumer):
    def consumer_group_metadata(self) -> object:
        return object()


def run_exactly_once_until_committed(
    monkeypatch: pytest.MonkeyPatch, log: Log, new_producer: Callable[[Any, Any], TransactionalProducer]
) -> None:
    """An exactly-once role over ``log`` with producers from ``new_producer``, run until its 6 inputs are committed;
    it must not have stopped."""
    monkeypatch.setattr(
        runner_module.clients, "new_consumer", lambda config, on_error, on_commit: TransactionalConsumer(log, on_commit)
    )
    monkeypatch.setattr(runner_module.clients, "new_producer", new_producer)
    monkeypatch.setattr(runner_module.clients, "wait_for_brokers", lambda *args, **kwargs: None)
    monkeypatch.setattr(runner_module.topics, "prepare", lambda *args, **kwargs: set())
    settings = Settings(
        kafka=KafkaSettings(topics=Topics(dlq=DLQ)),
        runtime=RuntimeSettings(batch_size=2, batch_timeout_s=0.01, commit_every=2, commit_interval_ms=600_000,
                                backoff_initial_s=0.01, backoff_max_s=0.02, roles={}),
    )  # fmt: skip
    role = Role("test", (TOPIC,), "g", Delivery.EXACTLY_ONCE, lambda: Pipeline(decode, handle), (OUT, DLQ))
    stop = threading.Event()
    runner = RoleRunner(role, settings, metrics=RuntimeMetrics(), health=Health(), stop=stop)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            runner.run()
        except BaseException as exc:  # noqa: BLE001 (the thread's boundary: the test asserts on what it kept)
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_until(lambda: log.committed == 6 or failure, 30, "every offset committed")
    finally:
        stop.set()
        thread.join(30)
    assert not failure, f"the role stopped: {failure[0]!r}"


def test_a_transaction_that_failed_while_paused_is_aborted_and_redone_not_fatal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Point 16, the lost-partition path: after a pause past ``transaction.timeout.ms`` the producer refuses the
    next record (``_STATE``) until the transaction is aborted. That is an abort and a rewind, not a crash."""
    log = Log([f"good-{i}".encode() for i in range(6)], failing_dlq_deliveries=0)
    producer = TransactionalProducer(log, failing=1)
    run_exactly_once_until_committed(monkeypatch, log, lambda config, on_error: producer)
    assert producer.aborts >= 1 and 0 in log.seeks, "the failed transaction was aborted and its input rewound"
    assert sorted(v for t, v in log.delivered if t == OUT) == [f"good-{i}".encode() for i in range(6)]


class FencedOnce(TransactionalProducer):
    """Its first commit is refused as fenced (the coordinator aborted the transaction: it was open past
    ``transaction.timeout.ms`` while the process was paused); every call after that too, as librdkafka's
    producer is unusable once fenced."""

    def __init__(self, log: Log) -> None:
        super().__init__(log, failing=0)
        self.fenced = False

    def commit_transaction(self, timeout: float) -> None:
        self.fenced = True
        raise KafkaException(KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True))

    def abort_transaction(self, timeout: float) -> None:
        if self.fenced:
            raise KafkaException(KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True))
        super().abort_transaction(timeout)


def test_a_fenced_producer_is_replaced_and_the_uncommitted_input_redone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point 16: a member paused past ``transaction.timeout.ms`` wakes up fenced. An exactly-once role starts a new
    producer (as Kafka Streams does), rewinds to the committed offsets and goes on, instead of stopping."""
    log = Log([f"good-{i}".encode() for i in range(6)], failing_dlq_deliveries=0)
    producers: list[TransactionalProducer] = []

    def new_producer(config: Any, on_error: Any) -> TransactionalProducer:
        producers.append(FencedOnce(log) if not producers else TransactionalProducer(log, failing=0))
        return producers[-1]

    run_exactly_once_until_committed(monkeypatch, log, new_producer)
    assert len(producers) == 2 and 0 in log.seeks, "a new producer, and the input redone from the committed offset"
    assert sorted(v for t, v in log.delivered if t == OUT) == [f"good-{i}".encode() for i in range(6)]


def test_a_transactional_call_blocked_past_its_deadline_fails_health_leaves_the_group_and_exits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 34: after a broker restart librdkafka's ``send_offsets_to_transaction`` blocked for ever, whatever the
    timeout given. The call gets ``kafka.call_timeout_s``; past it and the watchdog's grace the role is neither
    alive nor ready, its consumer leaves the group (so that its restart is assigned at once) and the process exits
    (1)."""
    monkeypatch.setattr(watchdog_module, "GRACE_S", 0.2)
    log = Log([b"good-0", b"good-1"], failing_dlq_deliveries=0)
    release, exited, left = threading.Event(), threading.Event(), threading.Event()
    timeouts: list[float] = []

    class Wedged(TransactionalProducer):
        def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: Any, timeout: float) -> None:
            timeouts.append(timeout)
            release.wait(30)  # as librdkafka after a broker restart: its timeout not honoured
            self.offsets = offsets

    class Leaving(TransactionalConsumer):
        def close(self) -> None:
            left.set()

    monkeypatch.setattr(
        runner_module.clients, "new_consumer", lambda config, on_error, on_commit: Leaving(log, on_commit)
    )
    monkeypatch.setattr(runner_module.clients, "new_producer", lambda config, on_error: Wedged(log, 0))
    monkeypatch.setattr(runner_module.clients, "wait_for_brokers", lambda *args, **kwargs: None)
    monkeypatch.setattr(runner_module.topics, "prepare", lambda *args, **kwargs: set())
    settings = Settings(
        kafka=KafkaSettings(topics=Topics(dlq=DLQ), call_timeout_s=0.3),
        runtime=RuntimeSettings(batch_size=2, batch_timeout_s=0.01, commit_every=2, roles={}),
    )
    role = Role("test", (TOPIC,), "g", Delivery.EXACTLY_ONCE, lambda: Pipeline(decode, handle), (OUT, DLQ))
    health, stop, exits = Health(), threading.Event(), []

    def exit_process(code: int) -> None:
        exits.append(code)
        exited.set()

    runner = RoleRunner(role, settings, metrics=RuntimeMetrics(), health=health, stop=stop, exit_process=exit_process)
    thread = threading.Thread(target=runner.run)
    thread.start()
    try:
        wait_until(lambda: timeouts, 10, "the blocking call")
        blocked_at = time.monotonic()
        wait_until(exited.is_set, 10, "the watchdog's exit")
        assert time.monotonic() - blocked_at < 0.5 + 1.0, "at the deadline (0.3 s + 0.2 s), within the watchdog's tick"
        assert exits == [1] and timeouts == [0.3]
        assert left.is_set(), "the consumer left the group before the exit"
        alive, ready = health.liveness(), health.readiness()
        assert not alive.ok and not ready.ok
        assert alive.details["test"].startswith("blocked in send_offsets_to_transaction")
    finally:
        release.set()
        stop.set()
        thread.join(30)


def test_a_role_with_a_quiet_time_gathers_its_batch_from_its_first_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """``batch_quiet_s`` (the scores role's): the batch starts with one message and gathers what follows
    (pareis.kafka.gathering), so what is there is one batch, however it was fetched."""
    log = Log([b"good-0", b"good-1", b"good-2", b"good-3", b"good-4", b"good-5"], failing_dlq_deliveries=0)
    asked: list[int] = []

    class Asked(Consumer):
        def consume(self, n: int, timeout: float) -> list[Record]:
            asked.append(n)
            return super().consume(n, timeout)

    stand_in(monkeypatch, log, Asked)
    handled: list[int] = []

    def counted(batch: Sequence[Message[bytes]]) -> list[OutRecord]:
        handled.append(len(batch))
        return handle(batch)

    settings = Settings(
        kafka=KafkaSettings(topics=Topics(dlq=DLQ)),
        runtime=RuntimeSettings(batch_size=500, batch_timeout_s=5.0, batch_quiet_s=0.01, commit_every=1, roles={}),
    )
    run_until(settings, counted, lambda: log.committed == 6, "every offset committed")
    assert handled == [6]
    first = asked.index(1, 1)  # after the call that joined the group: the batch's first message alone, then the rest
    assert asked[first : first + 2] == [1, 499]
