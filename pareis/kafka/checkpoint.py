"""The commit protocol: the one object that makes a role's outputs and input offsets durable, per delivery mode.

The runner calls, per batch: :meth:`Checkpoint.produce` with the batch's records, :meth:`Checkpoint.advance`
with the batch's next offsets, then :meth:`Checkpoint.commit` when :meth:`Checkpoint.due`. Offsets are never
committed before the outputs of the same input are durable.

* :class:`AtLeastOnce`: produce, flush and check every delivery report, then a commit of the offsets.
  A failed delivery report (of this batch or of an earlier one not committed yet) drops every pending offset and
  raises :class:`DeliveryFailed`: the runner rewinds to the committed offsets and redoes from there, so the
  failed record is produced again before anything past its input is committed. On the hot path
  (:meth:`Checkpoint.commit_soon`) the flush and the delivery check are the same, but the offsets are committed
  asynchronously, one commit in flight at a time: the loop consumes on instead of waiting out the broker round
  trip (~10 ms), and acts on the reply (offsets refused kept for the next commit, ``on_committed`` told, errors
  raised, retriable ones up to ``deadline_s``) at a later call, when a poll has delivered it. Every other commit
  (idle, before a back-off, on revocation, on shutdown) is synchronous and supersedes one still in flight (it
  commits the same or later offsets, and the superseded reply is ignored), so what is committed last is never
  older than what was committed before.
* :class:`ExactlyOnce`: outputs, dead letters and offsets (``send_offsets_to_transaction`` with the consumer's group
  metadata, which fences zombies of an older generation) in one transaction. An abortable error raises
  :class:`~pareis.kafka.classify.AbortTransaction` after aborting: the runner rewinds to the committed offsets and
  redoes.

Both are due every ``commit_every`` messages or ``commit_interval_s`` (whichever first), and the runner also
commits before backing off, on revocation and on shutdown. A commit costs a broker round trip (milliseconds), so
committing per batch would cap throughput (and at-least-once takes even that wait off the hot path, above);
what a crash redoes is bounded by ``commit_every`` either way.

Retriable errors of a commit or transaction call are retried here with a capped back-off (it is safe to call
them again), up to ``deadline_s``; then, or on a fatal error, :class:`~pareis.errors.Fatal` is raised.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from pareis.errors import Fatal, PareisError, Retriable
from pareis.kafka import dlq
from pareis.kafka.classify import (
    AbortTransaction,
    CommitLost,
    Disposition,
    classify,
    error_of,
    from_kafka_error,
    from_kafka_exception,
)
from pareis.model.records import OutRecord

log = structlog.get_logger(__name__)

R = TypeVar("R")
PartitionKey = tuple[str, int]
Observer = Callable[[float], None]


def _ignore(_: float) -> None:
    return None


class DeliveryFailed(AbortTransaction):
    """An output of uncommitted input was not delivered: the pending offsets are dropped, and the runner must
    rewind to the committed offsets (after a back-off) so that the input is redone and its outputs produced
    again. Redoing only the current batch would commit the earlier batches' offsets past the lost record."""


class Checkpoint:
    """Shared state and helpers; see the module docstring for the protocol."""

    def __init__(
        self,
        consumer: Consumer,
        producer: Producer,
        *,
        commit_every: int = 1,
        commit_interval_s: float = 0.0,
        deadline_s: float = 60.0,
        stop: threading.Event | None = None,
        on_commit: Observer = _ignore,
        on_committed: Callable[[Mapping[PartitionKey, int]], None] = lambda _: None,
    ) -> None:
        self.consumer = consumer
        self.producer = producer
        self.commit_every = commit_every
        self.commit_interval_s = commit_interval_s
        self.since = time.monotonic()
        self.deadline_s = deadline_s
        self.stop = stop or threading.Event()
        self.on_commit = on_commit
        self.on_committed = on_committed
        """Told the offsets each commit made durable."""
        self.pending: dict[PartitionKey, int] = {}
        self.uncommitted = 0
        self._delivery_errors: list[KafkaError] = []
        self._shrink: set[tuple[bytes, bytes, bytes]] = set()
        """Sources of dead letters the broker refused as too large (its topic's ``max.message.bytes`` is below
        ``kafka.dlq_max_bytes``): produced again with headers only."""

    # --- per batch -------------------------------------------------------------------------------------------
    def produce(self, records: Sequence[OutRecord]) -> None:
        for record in records:
            if self._shrink and _source(record.headers) in self._shrink:
                record = dlq.bounded(record, 0)
            while True:
                try:
                    self.producer.produce(
                        record.topic,
                        record.value,
                        record.key,
                        headers=list(record.headers) if record.headers else None,
                        on_delivery=self._delivered,
                    )
                    break
                except BufferError:  # local queue full: serve delivery reports to make room
                    self.producer.poll(0.05)
                except KafkaException as exc:
                    err = error_of(exc)
                    too_large = err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE
                    if too_large and dlq.is_dead_letter(record.headers) and record.value:
                        record = dlq.bounded(record, 0)  # the producer's limit is below dlq_max_bytes
                        continue
                    raise self._produce_failed(exc, record.topic) from exc
        self.producer.poll(0)

    def advance(self, offsets: Mapping[PartitionKey, int], messages: int) -> None:
        """Record the next offsets of a processed batch of ``messages`` messages."""
        self.pending.update(offsets)
        self.uncommitted += messages

    def due(self) -> bool:
        """Whether uncommitted work has reached ``commit_every`` messages or ``commit_interval_s``."""
        return self.uncommitted >= self.commit_every or time.monotonic() - self.since >= self.commit_interval_s

    def commit(self) -> None:
        raise NotImplementedError

    def commit_soon(self) -> None:
        """Commit on the hot path (when :meth:`due`); a mode may leave the broker's reply to come later, acting
        on it at a later call (the default: :meth:`commit`)."""
        self.commit()

    def commit_result(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """The consumer's ``on_commit`` callback (replies to asynchronous commits); ignored by default."""
        return None

    def abort(self) -> None:
        """Forget what is not committed (and abort the open transaction, if any)."""
        self.pending.clear()
        self.uncommitted = 0

    def forget(self, partitions: Iterable[PartitionKey]) -> None:
        """Drop the pending offsets of partitions no longer owned."""
        for key in partitions:
            self.pending.pop(key, None)

    def close(self) -> None:
        self.producer.flush(10)

    # --- helpers ---------------------------------------------------------------------------------------------
    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            return
        raw = msg.headers() if msg is not None else None
        headers = (
            [(str(k), v if isinstance(v, bytes) else b"") for k, v in (raw or [])] if isinstance(raw, list) else []
        )
        if err.code() == KafkaError.MSG_SIZE_TOO_LARGE and dlq.is_dead_letter(headers):
            # Not fatal: redone, the dead letter is produced with its headers only.
            self._shrink.add(_source(headers))
            err = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, f"dead letter too large: {err.str()}", retriable=True)
        self._delivery_errors.append(err)

    def _produce_failed(self, exc: KafkaException, topic: str) -> PareisError:
        return from_kafka_exception(exc, f"producing to {topic}")

    def _offsets(self) -> list[TopicPartition]:
        return [TopicPartition(t, p, o) for (t, p), o in sorted(self.pending.items())]

    def _retrying(self, call: Callable[[], R], doing: str) -> R:
        """``call()``, retried while its errors are retriable, up to the deadline."""
        deadline = time.monotonic() + self.deadline_s
        delay = 0.05
        while True:
            try:
                return call()
            except KafkaException as exc:
                error = from_kafka_exception(exc, doing)
                if type(error) is not Retriable or time.monotonic() + delay > deadline:
                    if type(error) is Retriable:
                        raise Fatal(f"gave up after {self.deadline_s:.0f}s: {error}") from exc
                    raise error from exc
                log.warning("kafka call failed; retrying", doing=doing, error=str(error), delay_s=delay)
                self.stop.wait(delay)
                delay = min(delay * 2, 2.0)


def _source(headers: Sequence[tuple[str, bytes]] | None) -> tuple[bytes, bytes, bytes]:
    found = dict(headers or ())
    return (found.get(dlq.SOURCE_TOPIC, b""), found.get(dlq.SOURCE_PARTITION, b""), found.get(dlq.SOURCE_OFFSET, b""))


@dataclass
class _Commit:
    """An asynchronous offset commit in flight; its outcome arrives through :meth:`Checkpoint.commit_result`."""

    offsets: dict[PartitionKey, int]
    """What is being committed; partitions forgotten meanwhile are removed (their outcome is ignored)."""
    wire: list[tuple[str, int, int]]
    """The same as the broker's reply lists it, to tell this commit's reply from a superseded one's."""
    started: float = field(default_factory=time.perf_counter)
    finished: bool = False
    error: KafkaError | None = None
    partitions: list[TopicPartition] | None = None


class AtLeastOnce(Checkpoint):
    """Outputs flushed, then offsets committed; synchronously by :meth:`commit`, asynchronously (one commit in
    flight at a time, its outcome acted upon at a later call) by :meth:`commit_soon` on the hot path."""

    def __init__(self, consumer: Consumer, producer: Producer, **kwargs: Any) -> None:
        super().__init__(consumer, producer, **kwargs)
        self._inflight: _Commit | None = None
        self._failing_since: float | None = None
        """When asynchronous commits started failing with retriable errors (the deadline counts from there)."""

    def due(self) -> bool:
        answered = self._inflight is not None and self._inflight.finished
        return answered or (bool(self.pending) and super().due())

    def commit(self) -> None:
        """Flush, then commit what is pending synchronously; an asynchronous commit still in flight is superseded:
        its offsets are committed again by this one (unless later ones are pending), and its reply ignored."""
        self._settle()
        if self._inflight is not None:
            for key, offset in self._inflight.offsets.items():
                self.pending.setdefault(key, offset)
            self._inflight = None
        started = time.perf_counter()
        self._flush()
        if not self.pending:
            return
        try:
            done = self._retrying(lambda: self.consumer.commit(offsets=self._offsets(), asynchronous=False), "commit")
        except CommitLost as lost:
            # The group is rebalancing: keep the offsets and commit them after the next poll; the ones of
            # partitions that get revoked are dropped by forget(), and their new owner redoes that input.
            log.warning("commit refused during a rebalance; will retry", error=str(lost))
            return
        committed = dict(self.pending)
        self._reset()
        self._failing_since = None
        self._committed(committed, done, started)

    def commit_soon(self) -> None:
        """The hot path's commit: act on the reply of the commit in flight if it has come (raising its error, if
        any); unless one is still in flight, flush outputs and check their deliveries here, exactly as
        :meth:`commit` does, then commit the pending offsets asynchronously (the loop does not wait for the
        broker's reply; it comes through :meth:`commit_result` during a later poll)."""
        self._settle()
        if self._inflight is not None or not (self.pending and Checkpoint.due(self)):
            return
        self._flush()
        if not self.pending:
            return
        offsets = self._offsets()
        job = _Commit(dict(self.pending), [(tp.topic, tp.partition, tp.offset) for tp in offsets])
        try:
            self.consumer.commit(offsets=offsets, asynchronous=True)
        except KafkaException as exc:
            error = from_kafka_exception(exc, "commit")
            if type(error) is not Retriable and not isinstance(error, CommitLost):
                raise error from exc
            log.warning("commit not sent; will retry", error=str(error))
            return
        self._reset()
        self._inflight = job

    def commit_result(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """The consumer's reply to an asynchronous commit (its ``on_commit`` callback, served during a poll on the
        loop's thread). Only recorded here; :meth:`commit_soon` or :meth:`commit` acts on it."""
        job = self._inflight
        if job is None or job.finished:
            return
        if sorted((tp.topic, tp.partition, tp.offset) for tp in partitions or []) != sorted(job.wire):
            return  # the reply of a commit superseded by a synchronous one
        job.finished, job.error, job.partitions = True, err, list(partitions or [])

    def abort(self) -> None:
        self._inflight = None
        super().abort()

    def forget(self, partitions: Iterable[PartitionKey]) -> None:
        keys = set(partitions)
        super().forget(keys)
        if self._inflight is not None:
            for key in keys:
                self._inflight.offsets.pop(key, None)

    def close(self) -> None:
        self._inflight = None
        super().close()

    # --- helpers ---------------------------------------------------------------------------------------------
    def _flush(self) -> None:
        remaining = self.producer.flush(self.deadline_s)
        if remaining:
            raise Retriable(f"{remaining} output records not delivered within {self.deadline_s:.0f}s")
        if self._delivery_errors:
            errors, self._delivery_errors = self._delivery_errors, []
            error = from_kafka_error(errors[0], f"delivering output ({len(errors)} failed)")
            if isinstance(error, Fatal):
                raise error
            self.abort()
            raise DeliveryFailed(str(error)) from error

    def _reset(self) -> None:
        self.pending.clear()
        self.uncommitted = 0
        self.since = time.monotonic()

    def _settle(self) -> None:
        """Act on the reply of the asynchronous commit in flight, if it has come."""
        job = self._inflight
        if job is None or not job.finished:
            return
        self._inflight = None
        if job.error is None:
            self._failing_since = None
            self._committed(job.offsets, job.partitions, job.started)
            return
        error = from_kafka_error(job.error, "commit")
        if type(error) is Retriable:
            now = time.monotonic()
            self._failing_since = self._failing_since or now
            if now - self._failing_since > self.deadline_s:
                raise Fatal(f"gave up after {self.deadline_s:.0f}s: {error}")
        elif not isinstance(error, CommitLost):
            raise error
        log.warning("commit failed; will retry", error=str(error))
        for key, offset in job.offsets.items():  # a later offset of the same partition supersedes it
            self.pending.setdefault(key, offset)
        self.uncommitted = max(self.uncommitted, self.commit_every)  # due again at once, as a refused sync one is

    def _committed(self, committed: dict[PartitionKey, int], done: Any, started: float) -> None:
        for tp in done or []:
            err = tp.error
            key = (tp.topic, tp.partition)
            if err is None or key not in committed:
                continue
            if classify(err) is Disposition.FATAL:
                raise from_kafka_error(err, f"committing {tp.topic}[{tp.partition}]")
            # Keep it for the next commit; a later offset of the same partition supersedes it.
            self.pending.setdefault(key, committed.pop(key))
            log.warning("offset commit failed", topic=tp.topic, partition=tp.partition, error=err.str())
        self.on_commit(time.perf_counter() - started)
        if committed:
            self.on_committed(committed)


class ExactlyOnce(Checkpoint):
    """One producer transaction per commit interval, carrying outputs and input offsets."""

    def __init__(self, consumer: Consumer, producer: Producer, **kwargs: Any) -> None:
        super().__init__(consumer, producer, **kwargs)
        self.in_transaction = False

    def init(self, timeout_s: float = 30.0) -> None:
        """Register the transactional id, fencing any older instance with the same id."""
        self._retrying(lambda: self.producer.init_transactions(timeout_s), "init_transactions")

    def begin(self) -> None:
        if not self.in_transaction:
            self._call(self.producer.begin_transaction, "begin_transaction")
            self.in_transaction = True
            self.since = time.monotonic()

    def produce(self, records: Sequence[OutRecord]) -> None:
        self.begin()
        super().produce(records)

    def advance(self, offsets: Mapping[PartitionKey, int], messages: int) -> None:
        self.begin()
        super().advance(offsets, messages)

    def due(self) -> bool:
        return self.in_transaction and super().due()

    def commit(self) -> None:
        if not self.in_transaction:
            return
        started = time.perf_counter()
        try:
            if self.pending:
                offsets = self._offsets()
                self._retrying(
                    lambda: self.producer.send_offsets_to_transaction(
                        offsets, self.consumer.consumer_group_metadata(), self.deadline_s
                    ),
                    "send_offsets_to_transaction",
                )
            self._retrying(lambda: self.producer.commit_transaction(self.deadline_s), "commit_transaction")
        except (AbortTransaction, CommitLost) as exc:
            log.warning("transaction must be aborted", error=str(exc))
            self.abort()
            raise AbortTransaction(str(exc)) from exc
        self.in_transaction = False
        committed = dict(self.pending)
        self.pending.clear()
        self.uncommitted = 0
        self._delivery_errors.clear()
        self.on_commit(time.perf_counter() - started)
        if committed:
            self.on_committed(committed)

    def abort(self) -> None:
        super().abort()
        self._delivery_errors.clear()
        if self.in_transaction:
            self.in_transaction = False
            self._retrying(lambda: self.producer.abort_transaction(self.deadline_s), "abort_transaction")

    def renew(self, producer: Producer) -> None:
        """Go on with ``producer`` instead of a fenced one (:class:`~pareis.kafka.classify.ProducerFenced`): what
        was not committed is forgotten (the coordinator aborted it, or will), the new producer registered."""
        self.pending.clear()
        self.uncommitted = 0
        self._delivery_errors.clear()
        self.in_transaction = False
        self.producer = producer
        self.init()

    def close(self) -> None:
        if self.in_transaction:
            self.abort()
        super().close()

    def _produce_failed(self, exc: KafkaException, topic: str) -> PareisError:
        """A produce refused because the open transaction failed (``_STATE``: e.g. its records timed out while
        the process was paused past ``transaction.timeout.ms``, or the coordinator aborted it) is abortable: the
        runner aborts it and redoes from the committed offsets. If the producer itself is unusable, the abort
        says so (Fatal)."""
        err = error_of(exc)
        if err is not None and err.code() == KafkaError._STATE:
            return AbortTransaction(f"kafka producing to {topic}: the transaction failed: {err.str()}")
        return super()._produce_failed(exc, topic)

    def _call(self, call: Callable[[], None], doing: str) -> None:
        try:
            call()
        except KafkaException as exc:
            raise from_kafka_exception(exc, doing) from exc
