"""What flows through a role: the messages a handler receives and the records it asks to produce.

Plain data, no confluent_kafka: handlers, the in-memory transport and tests build and read these freely.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pareis.errors import Origin

T = TypeVar("T")

Headers = tuple[tuple[str, bytes], ...]
"""Kafka headers in wire order; a name may repeat."""


@dataclass(frozen=True, slots=True)
class Message(Generic[T]):
    """One consumed message after decoding: where it came from, its key, its decoded value and headers."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: T
    headers: Headers = ()
    timestamp_ms: int | None = None

    @property
    def origin(self) -> Origin:
        return Origin(self.topic, self.partition, self.offset)


@dataclass(frozen=True, slots=True)
class RawMessage:
    """One consumed message before decoding (the bytes as they were on the wire)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    timestamp_ms: int | None = None

    @property
    def origin(self) -> Origin:
        return Origin(self.topic, self.partition, self.offset)

    def decoded(self, value: T) -> Message[T]:
        return Message(self.topic, self.partition, self.offset, self.key, value, self.headers, self.timestamp_ms)


@dataclass(frozen=True, slots=True)
class OutRecord:
    """A record a handler asks the runtime to produce; the partition follows from the key."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: Headers = ()


def header(headers: Headers, name: str) -> bytes | None:
    """The last value of header ``name``, or None."""
    found = None
    for key, value in headers:
        if key == name:
            found = value
    return found
