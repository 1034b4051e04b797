"""Dead letters: a poison message, as it was on the wire, plus headers that say where it came from and why.

The record keeps the original key, value and headers byte for byte, so it can be inspected and replayed onto its
source topic; the ``pareis.dlq.*`` headers are appended after the original ones.
"""

from __future__ import annotations

from pareis.errors import DecodeError
from pareis.model.records import OutRecord, RawMessage

SOURCE_TOPIC = "pareis.dlq.source.topic"
SOURCE_PARTITION = "pareis.dlq.source.partition"
SOURCE_OFFSET = "pareis.dlq.source.offset"
ROLE = "pareis.dlq.role"
ERROR_CLASS = "pareis.dlq.error.class"
ERROR_REASON = "pareis.dlq.error.reason"
ERROR_MESSAGE = "pareis.dlq.error.message"

_MAX_MESSAGE = 4096


def dead_letter(dlq_topic: str, message: RawMessage, role: str, error: BaseException) -> OutRecord:
    """The DLQ record for ``message``, which ``role`` could not process because of ``error``."""
    headers = [
        *message.headers,
        (SOURCE_TOPIC, message.topic.encode()),
        (SOURCE_PARTITION, str(message.partition).encode()),
        (SOURCE_OFFSET, str(message.offset).encode()),
        (ROLE, role.encode()),
        (ERROR_CLASS, type(error).__name__.encode()),
        (ERROR_MESSAGE, str(error)[:_MAX_MESSAGE].encode("utf-8", "replace")),
    ]
    if isinstance(error, DecodeError):
        headers.append((ERROR_REASON, error.reason.encode()))
    return OutRecord(dlq_topic, message.key, message.value, tuple(headers))
