"""At-least-once delivery (:mod:`pareis.kafka.checkpoint` states the protocol): outputs flushed and their delivery
reports checked, then the input offsets committed; on the hot path asynchronously, one commit in flight at a time."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from pareis.errors import Fatal, Retriable
from pareis.kafka.checkpoint import Checkpoint, DeliveryFailed, PartitionKey, log
from pareis.kafka.classify import CommitLost, Disposition, classify, from_kafka_error, from_kafka_exception
from pareis.kafka.watchdog import limit


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
        self._durable()
        try:
            offsets = self._offsets()
            # librdkafka bounds a synchronous commit by socket.timeout.ms (60 s by default) itself.
            done = self._retrying(
                lambda _: self.consumer.commit(offsets=offsets, asynchronous=False), "commit", bound_s=self.deadline_s
            )
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
        self._durable()
        offsets = self._offsets()
        job = _Commit(dict(self.pending), [(tp.topic, tp.partition, tp.offset) for tp in offsets])
        try:
            self.consumer.commit(offsets=offsets, asynchronous=True)
        except KafkaException as exc:
            error = from_kafka_exception(exc, "commit")
            if not isinstance(error, Retriable | CommitLost):
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
        with self.heartbeat.calling("flush", limit(self.deadline_s)):
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
        if isinstance(error, Retriable):
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
