"""Dead letters: a poison message, as it was on the wire, plus headers that say where it came from and why.

The record keeps the original key, value and headers byte for byte, so it can be inspected and replayed onto its
source topic; the ``pareis.dlq.*`` headers are appended after the original ones. Every dead letter also carries
the original value's size and SHA-256, and is bounded by ``max_bytes`` (key, value and headers together): a poison
message larger than that (DataHub allows change-log messages of ~5 MB, a DLQ topic typically 1 MB) keeps as much
of its value as fits, from the start, marked ``pareis.dlq.truncated: true``. A DLQ's size limit must never stop
a role (restarting at the same offset would fail the same way forever); nor must an output over the producer's
limit (:class:`OutputTooLarge`: its input is dead-lettered).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pareis.contracts.records import OutRecord, RawMessage
from pareis.errors import DecodeError, Poison

SOURCE_TOPIC = "pareis.dlq.source.topic"
SOURCE_PARTITION = "pareis.dlq.source.partition"
SOURCE_OFFSET = "pareis.dlq.source.offset"
ROLE = "pareis.dlq.role"
ERROR_CLASS = "pareis.dlq.error.class"
ERROR_REASON = "pareis.dlq.error.reason"
ERROR_MESSAGE = "pareis.dlq.error.message"
ORIGINAL_SIZE = "pareis.dlq.original.size"
ORIGINAL_SHA256 = "pareis.dlq.original.sha256"
TRUNCATED = "pareis.dlq.truncated"

MESSAGE_MAX_BYTES = 1_000_000
"""librdkafka's ``message.max.bytes`` default: the producer refuses a larger record (key, value, headers and
framing) before it is sent."""
DEFAULT_MAX_BYTES = 900_000
"""Below librdkafka's ``message.max.bytes`` and the broker's ``max.message.bytes`` defaults (1 MB), with room
for the record's framing."""
_OVERHEAD = 512  # record framing, header lengths and attributes, generously
_MAX_MESSAGE = 4096


class OutputTooLarge(Poison):
    """An input whose output is larger than the producer may send (``message.max.bytes``): it can never be
    produced, so the input is dead-lettered (reason ``output-too-large``) instead of stopping the role."""

    reason = "output-too-large"


def dead_letter(
    dlq_topic: str, message: RawMessage, role: str, error: BaseException, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> OutRecord:
    """The DLQ record for ``message``, which ``role`` could not process because of ``error``, at most
    ``max_bytes`` of key, value and headers."""
    value = message.value
    headers = [
        *message.headers,
        (SOURCE_TOPIC, message.topic.encode()),
        (SOURCE_PARTITION, str(message.partition).encode()),
        (SOURCE_OFFSET, str(message.offset).encode()),
        (ROLE, role.encode()),
        (ERROR_CLASS, type(error).__name__.encode()),
        (ERROR_MESSAGE, str(error)[:_MAX_MESSAGE].encode("utf-8", "replace")),
    ]
    if isinstance(error, DecodeError | OutputTooLarge):
        headers.append((ERROR_REASON, error.reason.encode()))
    if value is not None:
        headers.append((ORIGINAL_SIZE, str(len(value)).encode()))
        headers.append((ORIGINAL_SHA256, hashlib.sha256(value).hexdigest().encode()))
    return bounded(OutRecord(dlq_topic, message.key, value, tuple(headers)), max_bytes)


def size(record: OutRecord) -> int:
    """The bytes of ``record``'s key, value and headers."""
    headers = sum(len(name) + len(value or b"") for name, value in record.headers)
    return len(record.key or b"") + len(record.value or b"") + headers


def fits(record: OutRecord, max_bytes: int) -> bool:
    """Whether ``record`` with its framing takes at most ``max_bytes`` (a producer's ``message.max.bytes``)."""
    return size(record) + _OVERHEAD <= max_bytes


def bounded(record: OutRecord, max_bytes: int) -> OutRecord:
    """``record`` itself when it fits in ``max_bytes``; else with its value cut to what fits (possibly nothing)
    and ``pareis.dlq.truncated: true`` added."""
    if fits(record, max_bytes):
        return record
    headers = (*record.headers, (TRUNCATED, b"true"))
    room = max_bytes - _OVERHEAD - size(OutRecord(record.topic, record.key, None, headers))
    value = (record.value or b"")[: max(room, 0)]
    return OutRecord(record.topic, record.key, value, headers)


def is_dead_letter(headers: Sequence[tuple[str, bytes]] | None) -> bool:
    """Whether a record with these headers is a dead letter (it carries :data:`ROLE`)."""
    return any(name == ROLE for name, _ in headers or ())
