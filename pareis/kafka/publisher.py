"""A plain (idempotent, non-transactional) Kafka producer for tools that publish: replay, benchmarks, backfills.

Roles that produce use the runtime's transactional producer instead. Delivery failures are classified once by
:mod:`pareis.kafka.classify` and raised from :meth:`KafkaPublisher.flush`.
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from pareis.errors import Retriable
from pareis.kafka.classify import from_kafka_error, from_kafka_exception
from pareis.kafka.clients import library_logger, wait_for_brokers


class KafkaPublisher:
    """Publishes to the broker at ``bootstrap_servers`` with ``enable.idempotence`` and ``acks=all``."""

    def __init__(self, bootstrap_servers: str, properties: Mapping[str, str] | None = None) -> None:
        config: dict[str, object] = {
            "bootstrap.servers": bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 20,
            "compression.type": "lz4",
            **(properties or {}),
            "logger": library_logger(),  # librdkafka's lines through our logging, never raw on stderr
        }
        self._bootstrap_servers = bootstrap_servers
        self._producer = Producer(config)
        self._failures: list[KafkaError] = []

    def wait_for_brokers(self, timeout_s: float) -> None:
        """Return once the brokers answer; Fatal naming them after ``timeout_s``
        (:func:`pareis.kafka.clients.wait_for_brokers`)."""
        wait_for_brokers(self._producer, self._bootstrap_servers, timeout_s)

    def _delivered(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            self._failures.append(error)

    def publish(self, topic: str, key: bytes | None, value: bytes, headers: Mapping[str, bytes] | None = None) -> None:
        """Queue one record; a full local queue is drained by serving delivery reports, then retried."""
        while True:
            try:
                self._producer.produce(
                    topic, value=value, key=key, headers=list((headers or {}).items()), on_delivery=self._delivered
                )
                return
            except BufferError:
                self._producer.poll(0.1)
            except KafkaException as exc:
                raise from_kafka_exception(exc, "produce") from exc

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait for every queued record; raise the first delivery failure (Retriable or Fatal)."""
        remaining = self._producer.flush(timeout_s)
        if self._failures:
            error = self._failures[0]
            self._failures.clear()
            raise from_kafka_error(error, "delivery")
        if remaining:
            raise Retriable(f"{remaining} records not delivered within {timeout_s}s")

    def close(self) -> None:
        self.flush()
