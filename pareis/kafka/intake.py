"""The consuming side of one role instance: which partitions it owns, whether it is paused, what it admits.

:class:`Intake` wraps the role's :class:`~confluent_kafka.Consumer` for :class:`~pareis.kafka.runner.RoleRunner`:

* a polled batch is admitted as :class:`~pareis.contracts.records.RawMessage` s of owned partitions only (a message of a
  partition revoked since it was fetched is not handed to the handler); a consume error is counted, and raised as
  :class:`~pareis.errors.Fatal` when librdkafka calls it fatal;
* pausing covers every assigned partition, and partitions assigned while paused are paused at once;
* a rewind seeks every assigned partition back to its committed offset (the beginning when none is);
* the assignment, the pause and the lag are kept in the role's metrics.

Kafka failures are translated here (:mod:`pareis.kafka.classify`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from pareis.contracts.records import RawMessage
from pareis.kafka.batch import PartitionKey
from pareis.kafka.classify import from_kafka_error, from_kafka_exception
from pareis.telemetry.metrics import RuntimeMetrics

COMMITTED_TIMEOUT_S = 30.0
"""How long reading the committed offsets (a rewind) may take."""


def to_raw(message: Any) -> RawMessage:
    """A confluent_kafka message as a :class:`RawMessage`."""
    headers = message.headers()
    return RawMessage(
        message.topic(),
        message.partition(),
        message.offset(),
        message.key(),
        message.value(),
        tuple(headers) if headers else (),
        message.timestamp()[1],
    )


class Intake:
    """The partitions ``consumer`` owns for the role ``name``, and what it reads from them."""

    def __init__(self, consumer: Consumer, name: str, metrics: RuntimeMetrics, log: Any) -> None:
        self.consumer = consumer
        self.name = name
        self.metrics = metrics
        self.log = log
        self.assigned: set[PartitionKey] = set()
        self.paused = False

    # --- reading -----------------------------------------------------------------------------------------------
    def admit(self, messages: Sequence[Any]) -> list[RawMessage]:
        """The messages of owned partitions, in order; errors counted (Fatal ones raised), end-of-partition
        events ignored."""
        batch: list[RawMessage] = []
        assigned = self.assigned
        for message in messages:
            err = message.error()
            if err is not None:
                self._consume_error(err)
                continue
            if (message.topic(), message.partition()) in assigned:
                batch.append(to_raw(message))
        return batch

    def put_back(self, message: Any) -> None:
        """A message fetched despite the pause (a race with an assignment): seek back to it, so it is read again
        after the resume. Errors and messages of partitions not owned are left alone."""
        if message is None or message.error() is not None:
            return
        raw = to_raw(message)
        if (raw.topic, raw.partition) in self.assigned:
            self.seek(TopicPartition(raw.topic, raw.partition, raw.offset))

    def _consume_error(self, err: KafkaError) -> None:
        if err.code() == KafkaError._PARTITION_EOF:  # librdkafka's local code (public API)
            return
        self.metrics.errors.labels(self.name, f"kafka:{err.name()}").inc()
        if err.fatal():
            raise from_kafka_error(err, "consume")
        self.log.warning("consume error", error=err.str(), code=err.name())

    # --- pausing -----------------------------------------------------------------------------------------------
    def pause(self) -> None:
        """Pause every assigned partition (once; partitions assigned later are paused on assignment)."""
        if not self.paused:
            self.consumer.pause(self.consumer.assignment())
            self.paused = True
            self.metrics.paused.labels(self.name).set(1)

    def resume(self) -> None:
        self.consumer.resume(self.consumer.assignment())
        self.paused = False
        self.metrics.paused.labels(self.name).set(0)
        self.log.info("resumed")

    # --- the assignment ----------------------------------------------------------------------------------------
    def assign(self, partitions: list[TopicPartition]) -> None:
        """Take ``partitions`` on (incrementally), paused if the intake is."""
        self.consumer.incremental_assign(partitions)
        if self.paused and partitions:
            self.consumer.pause(partitions)
        self.assigned.update((tp.topic, tp.partition) for tp in partitions)
        self._changed("assigned", partitions)

    def release(self, what: str, partitions: list[TopicPartition]) -> None:
        """Forget ``partitions`` (``what``: revoked, lost) and their metrics."""
        gone = keys(partitions)
        self.assigned -= gone
        self.metrics.drop_partitions(self.name, gone)
        self._changed(what, partitions)

    def release_all(self) -> None:
        """Forget every partition's metrics (the consumer closed)."""
        self.metrics.assigned.labels(self.name).set(0)
        self.metrics.drop_partitions(self.name, self.assigned)

    def _changed(self, what: str, partitions: list[TopicPartition]) -> None:
        self.metrics.assigned.labels(self.name).set(len(self.assigned))
        if partitions:
            self.log.info(what, partitions=[f"{tp.topic}[{tp.partition}]" for tp in partitions])

    # --- positions ---------------------------------------------------------------------------------------------
    def rewind(self) -> None:
        """Seek every assigned partition back to its committed offset (after an abort)."""
        assignment = self.consumer.assignment()
        if not assignment:
            return
        try:
            committed = self.consumer.committed(assignment, timeout=COMMITTED_TIMEOUT_S)
        except KafkaException as exc:
            raise from_kafka_exception(exc, "reading committed offsets") from exc
        for tp in committed:
            offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            self.seek(TopicPartition(tp.topic, tp.partition, offset))
        self.log.info("rewound to committed offsets", partitions=len(committed))

    def seek(self, tp: TopicPartition) -> None:
        try:
            self.consumer.seek(tp)
        except KafkaException as exc:
            raise from_kafka_exception(exc, f"seeking {tp.topic}[{tp.partition}]") from exc

    def report_lag(self) -> None:
        """Each assigned partition's lag (high watermark minus position, from the client's cache) into the
        metrics; a partition whose watermark the client does not know yet is left out of this report."""
        lags: dict[PartitionKey, int] = {}
        assignment = self.consumer.assignment()
        if not assignment:
            return
        for tp in self.consumer.position(assignment):
            try:
                _, high = self.consumer.get_watermark_offsets(tp, cached=True)
            except KafkaException:  # not fetched yet: the next report has it
                continue
            if high >= 0 and tp.offset >= 0:
                lags[(tp.topic, tp.partition)] = max(0, high - tp.offset)
        self.metrics.set_lag(self.name, lags)


def keys(partitions: Iterable[TopicPartition]) -> set[PartitionKey]:
    """The (topic, partition) of each of ``partitions``."""
    return {(tp.topic, tp.partition) for tp in partitions}
