"""An in-process broker: the embedded transport for `pareis demo`, `pareis replay --target memory` and tests.

It keeps Kafka's observable semantics that Pareis relies on: topics with partitions, records partitioned by key
(the same key always lands in the same partition), per-partition order and offsets, and the producer's size
limit (a record a role produces over ``max_message_bytes``, librdkafka's ``message.max.bytes``, is refused:
:class:`RecordTooLarge`).
It does not import confluent_kafka, so it runs where no broker is reachable.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from pareis.contracts.records import OutRecord
from pareis.errors import Fatal
from pareis.kafka.dlq import MESSAGE_MAX_BYTES, fits


class RecordTooLarge(Fatal):
    """A record over the broker's ``max_message_bytes``: refused as a real producer refuses it
    (``MSG_SIZE_TOO_LARGE``, which the runtime classifies Fatal)."""


@dataclass(frozen=True, slots=True)
class Record:
    """One record as stored: where it is, its key, value and headers."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclass
class MemoryBroker:
    """Topics of partitioned, append-only logs.

    ``partitions`` is the partition count given to topics created implicitly on first write; ``max_message_bytes``
    the largest record (key, value, headers and framing) :meth:`append` accepts.
    """

    partitions: int = 1
    max_message_bytes: int = MESSAGE_MAX_BYTES
    _logs: dict[str, list[list[Record]]] = field(default_factory=dict)

    def create_topic(self, topic: str, partitions: int | None = None) -> None:
        """Create ``topic`` if missing; an existing topic keeps its partition count."""
        if topic not in self._logs:
            self._logs[topic] = [[] for _ in range(partitions or self.partitions)]

    def partition_for(self, topic: str, key: bytes | None) -> int:
        """The partition a key maps to: stable for a key (crc32), 0 for a null key."""
        self.create_topic(topic)
        count = len(self._logs[topic])
        return 0 if key is None else zlib.crc32(key) % count

    def append(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: Mapping[str, bytes] | None = None,
    ) -> Record:
        """Append one record as a role's producer does, and return it with its partition and offset;
        :class:`RecordTooLarge` when it is over ``max_message_bytes``."""
        if not fits(OutRecord(topic, key, value, tuple((headers or {}).items())), self.max_message_bytes):
            raise RecordTooLarge(f"a record to {topic} is over the producer's limit ({self.max_message_bytes} bytes)")
        return self._store(topic, key, value, headers)

    def publish(self, topic: str, key: bytes | None, value: bytes, headers: Mapping[str, bytes] | None = None) -> None:
        """The replay sink contract: an append that is durable at once, as GMS writes the change log. Not bound by
        ``max_message_bytes``: DataHub's producer and topics take records of several MB."""
        self._store(topic, key, value, headers)

    def _store(self, topic: str, key: bytes | None, value: bytes | None, headers: Mapping[str, bytes] | None) -> Record:
        partition = self.partition_for(topic, key)
        log = self._logs[topic][partition]
        record = Record(topic, partition, len(log), key, value, tuple(sorted((headers or {}).items())))
        log.append(record)
        return record

    def flush(self) -> None:
        """Nothing is ever pending in memory."""

    def topics(self) -> list[str]:
        return sorted(self._logs)

    def partition_count(self, topic: str) -> int:
        """The partition count of ``topic``; 0 when it does not exist."""
        return len(self._logs.get(topic, ()))

    def end(self, topic: str, partition: int) -> int:
        """The offset the next record of that partition will get (0 for a topic that does not exist)."""
        logs = self._logs.get(topic)
        return len(logs[partition]) if logs is not None else 0

    def read(self, topic: str, partition: int, offset: int = 0) -> list[Record]:
        """Records of one partition from ``offset`` on."""
        return self._logs.get(topic, [[]])[partition][offset:] if topic in self._logs else []

    def records(self, topic: str) -> Iterator[Record]:
        """Every record of ``topic``, partition by partition, each in offset order."""
        for log in self._logs.get(topic, []):
            yield from log

    def size(self, topic: str) -> int:
        return sum(len(log) for log in self._logs.get(topic, []))
