"""The commit protocol: the one object that makes a role's outputs and input offsets durable, per delivery mode.

The runner calls, per batch: :meth:`Checkpoint.produce` with the batch's records, :meth:`Checkpoint.advance`
with the batch's next offsets, then :meth:`Checkpoint.commit` when :meth:`Checkpoint.due`. Offsets are never
committed before the outputs of the same input are durable.

* :class:`~pareis.kafka.at_least_once.AtLeastOnce`: produce, flush and check every delivery report, then a commit of
  the offsets. A failed delivery report (of this batch or of an earlier one not committed yet) drops every pending
  offset and raises :class:`DeliveryFailed`: the runner rewinds to the committed offsets and redoes from there, so
  the failed record is produced again before anything past its input is committed. On the hot path
  (:meth:`Checkpoint.commit_soon`) the flush and the delivery check are the same, but the offsets are committed
  asynchronously, one commit in flight at a time: the loop consumes on instead of waiting out the broker round
  trip (bench/RESULTS.md, Runtime), and acts on the reply (offsets refused kept for the next commit,
  ``on_committed`` told, errors raised, retriable ones up to ``deadline_s``) at a later call, when a poll has
  delivered it. Every other commit
  (idle, before a back-off, on revocation, on shutdown) is synchronous and supersedes one still in flight (it
  commits the same or later offsets, and the superseded reply is ignored), so what is committed last is never
  older than what was committed before.
* :class:`~pareis.kafka.exactly_once.ExactlyOnce`: outputs, dead letters and offsets (``send_offsets_to_transaction``
  with the consumer's group metadata, which fences zombies of an older generation) in one transaction. An abortable
  error raises :class:`~pareis.kafka.classify.AbortTransaction` after aborting: the runner rewinds to the committed
  offsets and redoes.

Both are due every ``commit_every`` messages or ``commit_interval_s`` (whichever first), and the runner also
commits before backing off, on revocation and on shutdown. A commit costs a broker round trip (milliseconds), so
committing per batch would cap throughput (and at-least-once takes even that wait off the hot path, above);
what a crash redoes is bounded by ``commit_every`` either way.

Retriable errors of a commit or transaction call are retried here with a capped back-off (it is safe to call
them again), up to ``deadline_s``; then, or on a fatal error, :class:`~pareis.errors.Fatal` is raised. Each attempt
is given ``call_timeout_s`` at most, and runs inside the loop's heartbeat with that limit
(:mod:`pareis.kafka.watchdog`): a call that does not return by then is a wedged client, not a slow broker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

import structlog
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from pareis.contracts.records import OutRecord
from pareis.errors import Fatal, PareisError, Retriable
from pareis.kafka import dlq
from pareis.kafka.classify import (
    AbortTransaction,
    error_of,
    from_kafka_exception,
)
from pareis.kafka.watchdog import limit
from pareis.telemetry.health import Heartbeat

log = structlog.get_logger(__name__)

R = TypeVar("R")
_CLOSE_FLUSH_S = 10.0
PartitionKey = tuple[str, int]
Observer = Callable[[float], None]


def _ignore(_: float) -> None:
    return None


class DeliveryFailed(AbortTransaction):
    """An output of uncommitted input was not delivered: the pending offsets are dropped, and the runner must
    rewind to the committed offsets (after a back-off) so that the input is redone and its outputs produced
    again. Redoing only the current batch would commit the earlier batches' offsets past the lost record."""


class NotDurable(DeliveryFailed):
    """What the handlers wrote outside Kafka was not made durable before the commit (``before_commit`` refused, e.g.
    Redis replicas did not acknowledge in time): nothing is committed, and the input is redone."""


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
        call_timeout_s: float = 10.0,
        heartbeat: Heartbeat | None = None,
        stop: threading.Event | None = None,
        on_commit: Observer = _ignore,
        on_committed: Callable[[Mapping[PartitionKey, int]], None] = lambda _: None,
        before_commit: Callable[[], None] = lambda: None,
    ) -> None:
        self.consumer = consumer
        self.producer = producer
        self.commit_every = commit_every
        self.commit_interval_s = commit_interval_s
        self.since = time.monotonic()
        self.deadline_s = deadline_s
        self.call_timeout_s = call_timeout_s
        self.heartbeat = heartbeat or Heartbeat(float("inf"))
        """The loop's heartbeat: every blocking call runs inside it with its limit (:mod:`pareis.kafka.watchdog`)."""
        self.stop = stop or threading.Event()
        self.on_commit = on_commit
        self.on_committed = on_committed
        """Told the offsets each commit made durable."""
        self.before_commit = before_commit
        """Asked before offsets are committed (the pipeline's :attr:`~pareis.kafka.role.Pipeline.before_commit`)."""
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
        with self.heartbeat.calling("flush", limit(_CLOSE_FLUSH_S)):
            self.producer.flush(_CLOSE_FLUSH_S)

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

    def _durable(self) -> None:
        """``before_commit``; its Retriable drops what is pending and raises :class:`NotDurable`."""
        try:
            self.before_commit()
        except Retriable as exc:
            self.abort()
            raise NotDurable(f"not committed: {exc}") from exc

    def _produce_failed(self, exc: KafkaException, topic: str) -> PareisError:
        return from_kafka_exception(exc, f"producing to {topic}")

    def _offsets(self) -> list[TopicPartition]:
        return [TopicPartition(t, p, o) for (t, p), o in sorted(self.pending.items())]

    def _retrying(self, call: Callable[[float], R], doing: str, *, bound_s: float | None = None) -> R:
        """``call(timeout_s)``, retried while its errors are retriable, up to the deadline; each attempt is given
        ``call_timeout_s`` (less when the deadline is nearer) and must return within its limit. ``bound_s``: the
        call takes no timeout, librdkafka bounds it by that much itself."""
        deadline = time.monotonic() + self.deadline_s
        delay = 0.05
        while True:
            timeout_s = max(0.1, min(self.call_timeout_s, deadline - time.monotonic()))
            try:
                with self.heartbeat.calling(doing, limit(bound_s if bound_s is not None else timeout_s)):
                    return call(timeout_s)
            except KafkaException as exc:
                error = from_kafka_exception(exc, doing)
                if not isinstance(error, Retriable) or time.monotonic() + delay > deadline:
                    if isinstance(error, Retriable):
                        raise Fatal(f"gave up after {self.deadline_s:.0f}s: {error}") from exc
                    raise error from exc
                log.warning("kafka call failed; retrying", doing=doing, error=str(error), delay_s=delay)
                self.stop.wait(delay)
                delay = min(delay * 2, 2.0)


def _source(headers: Sequence[tuple[str, bytes]] | None) -> tuple[bytes, bytes, bytes]:
    found = dict(headers or ())
    return (found.get(dlq.SOURCE_TOPIC, b""), found.get(dlq.SOURCE_PARTITION, b""), found.get(dlq.SOURCE_OFFSET, b""))
