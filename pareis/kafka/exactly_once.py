"""Exactly-once delivery (:mod:`pareis.kafka.checkpoint` states the protocol): outputs, dead letters and input
offsets in one Kafka transaction."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from pareis.contracts.records import OutRecord
from pareis.errors import PareisError
from pareis.kafka.checkpoint import Checkpoint, PartitionKey, log
from pareis.kafka.classify import AbortTransaction, CommitLost, error_of, from_kafka_exception


class ExactlyOnce(Checkpoint):
    """One producer transaction per commit interval, carrying outputs and input offsets."""

    def __init__(self, consumer: Consumer, producer: Producer, **kwargs: Any) -> None:
        super().__init__(consumer, producer, **kwargs)
        self.in_transaction = False

    def init(self) -> None:
        """Register the transactional id, fencing any older instance with the same id."""
        self._retrying(self.producer.init_transactions, "init_transactions")

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
            self._durable()
            if self.pending:
                offsets = self._offsets()
                group = self.consumer.consumer_group_metadata()
                self._retrying(
                    lambda timeout_s: self.producer.send_offsets_to_transaction(offsets, group, timeout_s),
                    "send_offsets_to_transaction",
                )
            self._retrying(self.producer.commit_transaction, "commit_transaction")
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
        """Forget what is not committed and abort the open transaction, if any; logs ``transaction aborted`` once
        the broker agreed (also when the coordinator had aborted it already: librdkafka bumps the epoch, KIP-588)."""
        dropped = self.uncommitted
        super().abort()
        self._delivery_errors.clear()
        if self.in_transaction:
            self.in_transaction = False
            self._retrying(self.producer.abort_transaction, "abort_transaction")
            log.info("transaction aborted", uncommitted=dropped)

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
        if err is not None and err.code() == KafkaError._STATE:  # librdkafka's local code (public API)
            return AbortTransaction(f"kafka producing to {topic}: the transaction failed: {err.str()}")
        return super()._produce_failed(exc, topic)

    def _call(self, call: Callable[[], None], doing: str) -> None:
        try:
            call()
        except KafkaException as exc:
            raise from_kafka_exception(exc, doing) from exc
