"""One batch through a role's pipeline: decode, filter, handle, dead-letter. No Kafka I/O here.

Failure rules (the runtime's half of the handler contract in :mod:`pareis.kafka.role`):

* decoder raises Poison (e.g. DecodeError) → that message is dead-lettered;
* handler raises Poison for the batch → the batch is handled again one message at a time, and each message that
  still raises Poison is dead-lettered;
* handler returns an output over the producer's limit (``max_output_bytes``, the producer's ``message.max.bytes``:
  it could never be produced) → the batch is handled again one message at a time, and each message with such an
  output is dead-lettered (:class:`~pareis.kafka.dlq.OutputTooLarge`, none of its outputs produced);
* Retriable and Fatal propagate unchanged: the caller backs off and redoes the whole batch, or stops;
* anything else, from the decoder or the handler, is a bug or an untranslated library error, not bad input: it
  becomes :class:`~pareis.errors.Fatal` (logged with its traceback), so the role stops and restarts from its
  committed offsets instead of dead-lettering valid input and committing past it. Decoders therefore translate
  every failure they know into Poison or Retriable (the codec and the topic readers do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import structlog

from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.errors import Fatal, Poison, Retriable
from pareis.kafka.dlq import DEFAULT_MAX_BYTES, MESSAGE_MAX_BYTES, OutputTooLarge, dead_letter, fits, size
from pareis.kafka.role import Pipeline

log = structlog.get_logger(__name__)

PartitionKey = tuple[str, int]
T = TypeVar("T")


@dataclass
class Tally:
    """Per-partition counts of one batch, and errors by class."""

    consumed: dict[PartitionKey, int] = field(default_factory=dict)
    filtered: dict[PartitionKey, int] = field(default_factory=dict)
    handled: dict[PartitionKey, int] = field(default_factory=dict)
    dead: dict[PartitionKey, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, exc: BaseException) -> None:
        name = type(exc).__name__
        self.errors[name] = self.errors.get(name, 0) + 1


@dataclass
class BatchResult:
    outputs: list[OutRecord]
    """The handler's records in the order it returned them, then the dead letters."""
    tally: Tally


def _bump(counts: dict[PartitionKey, int], key: PartitionKey) -> None:
    counts[key] = counts.get(key, 0) + 1


class BatchProcessor(Generic[T]):
    """Runs batches through ``pipeline`` (decoding to ``T``) for role ``role``; poison goes to ``dlq_topic``."""

    def __init__(
        self,
        role: str,
        pipeline: Pipeline[T],
        dlq_topic: str,
        *,
        dlq_max_bytes: int = DEFAULT_MAX_BYTES,
        max_output_bytes: int = MESSAGE_MAX_BYTES,
    ) -> None:
        self.role = role
        self.pipeline = pipeline
        self.dlq_topic = dlq_topic
        self.dlq_max_bytes = dlq_max_bytes
        self.max_output_bytes = max_output_bytes

    def process(self, batch: Sequence[RawMessage]) -> BatchResult:
        """Decode, filter and handle ``batch``; raises only Retriable or Fatal (nothing has been produced)."""
        tally = Tally()
        decoded: list[Message[T]] = []
        sources: list[RawMessage] = []
        dead: list[OutRecord] = []
        decode = self.pipeline.decode
        for raw in batch:
            key = (raw.topic, raw.partition)
            _bump(tally.consumed, key)
            if raw.value is None:
                _bump(tally.filtered, key)
                continue
            try:
                value = decode(raw)
            except Poison as exc:
                dead.append(self._dead(raw, exc, tally))
                continue
            except (Retriable, Fatal):
                raise
            except Exception as exc:  # the boundary: unclassified becomes Fatal (module docstring)
                raise self._unclassified("the decoder", exc, str(raw.origin)) from exc
            if value is None:
                _bump(tally.filtered, key)
                continue
            decoded.append(raw.decoded(value))
            sources.append(raw)
        outputs = self._handle(decoded, sources, dead, tally) if decoded else []
        outputs.extend(dead)
        return BatchResult(outputs, tally)

    def _handle(
        self, decoded: list[Message[T]], sources: list[RawMessage], dead: list[OutRecord], tally: Tally
    ) -> list[OutRecord]:
        try:
            outputs = list(self.pipeline.handle(decoded))
        except Poison as exc:
            tally.error(exc)
            log.warning("batch failed; isolating poison", role=self.role, size=len(decoded), error=str(exc))
            return self._handle_singly(decoded, sources, dead, tally)
        except (Retriable, Fatal):
            raise
        except Exception as exc:  # the boundary: unclassified becomes Fatal (module docstring)
            at = f"a batch of {len(decoded)} from {sources[0].origin}"
            raise self._unclassified("the handler", exc, at) from exc
        if self._too_large(outputs) is not None:
            log.warning(
                "an output is over the producer's limit; isolating its input", role=self.role, size=len(decoded)
            )
            return self._handle_singly(decoded, sources, dead, tally)
        for message in decoded:
            _bump(tally.handled, (message.topic, message.partition))
        return outputs

    def _handle_singly(
        self, decoded: list[Message[T]], sources: list[RawMessage], dead: list[OutRecord], tally: Tally
    ) -> list[OutRecord]:
        outputs: list[OutRecord] = []
        for message, raw in zip(decoded, sources, strict=True):
            try:
                produced = list(self.pipeline.handle([message]))
                too_large = self._too_large(produced)
                if too_large is not None:
                    raise OutputTooLarge(
                        f"an output to {too_large.topic} of {size(too_large)} bytes is over the producer's limit "
                        f"(message.max.bytes {self.max_output_bytes})"
                    )
            except Poison as exc:
                dead.append(self._dead(raw, exc, tally))
                continue
            except (Retriable, Fatal):
                raise
            except Exception as exc:  # the boundary: unclassified becomes Fatal (module docstring)
                raise self._unclassified("the handler", exc, str(raw.origin)) from exc
            outputs.extend(produced)
            _bump(tally.handled, (message.topic, message.partition))
        return outputs

    def _too_large(self, outputs: Sequence[OutRecord]) -> OutRecord | None:
        """The first of ``outputs`` the producer would refuse as too large, if any."""
        limit = self.max_output_bytes
        return next((record for record in outputs if not fits(record, limit)), None)

    def _dead(self, raw: RawMessage, exc: Poison, tally: Tally) -> OutRecord:
        tally.error(exc)
        _bump(tally.dead, (raw.topic, raw.partition))
        log.warning(
            "dead-lettered",
            role=self.role,
            topic=raw.topic,
            partition=raw.partition,
            offset=raw.offset,
            error_class=type(exc).__name__,
            error=str(exc),
        )
        return dead_letter(self.dlq_topic, raw, self.role, exc, max_bytes=self.dlq_max_bytes)

    def _unclassified(self, where: str, exc: Exception, at: str) -> Fatal:
        """The Fatal an unclassified error becomes, logged with its traceback."""
        log.error(
            "unclassified error; stopping the role",
            role=self.role,
            where=where,
            at=at,
            error_class=type(exc).__name__,
            exc_info=exc,
        )
        return Fatal(f"role {self.role}: {where} raised {type(exc).__name__} on {at}: {exc}")
