"""A role: one consumer group on its input topics, with a decoder, a handler and a delivery mode.

Contracts the runtime relies on:

* **decoder** ``(RawMessage) -> T | None``: bytes to a value, or None to filter the message out (counted, not
  handled). Raises :class:`pareis.errors.Poison` (e.g. ``DecodeError``) for input that can never be decoded.
* **handler** ``(Sequence[Message[T]]) -> Iterable[OutRecord]``: one batch of decoded messages in offset order per
  partition, the records to produce out. Pure with respect to Kafka: it never produces or commits itself. It may
  write elsewhere (Redis, APIs) but must then be idempotent, since a batch is redone after a crash, a retry or an
  aborted transaction. Raises :class:`~pareis.errors.Retriable` when a dependency is down (the runtime backs off
  and redoes the same batch), :class:`~pareis.errors.Poison` when some input can never succeed (the runtime
  redoes the batch one message at a time to find and dead-letter the culprits), :class:`~pareis.errors.Fatal`
  to stop the process.
* **checks**: readiness probes, each ``() -> None`` raising when its dependency is unreachable.
* **start**: called once before the role joins its group; raises :class:`~pareis.errors.Fatal` to refuse to
  start (an unsafe dependency, e.g. an evicting Redis) or Retriable when a dependency is unreachable.
* **committed** ``(Mapping[(topic, partition), next offset]) -> None``: called after offsets were committed (the
  input before them will not be redone), e.g. to release what was kept for a redo. Its errors are logged, not
  raised: the next commit's call covers the same offsets again.
* **before_commit**: called before offsets (or a transaction) are committed, once the handler's writes elsewhere
  that the commit depends on are made, e.g. to wait until Redis replicas acknowledged them. Retriable: the commit is
  not made, and the uncommitted input is redone from the committed offsets; Fatal stops the process.

Declarations (:class:`RoleSpec`) name topics by their settings field and hold the function that builds the role's
pipeline in its own process; nothing connects until the runtime calls it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pareis.config import Settings
from pareis.contracts.records import Message, OutRecord, RawMessage

T = TypeVar("T")

Decoder = Callable[[RawMessage], T | None]
Handler = Callable[[Sequence[Message[T]]], Iterable[OutRecord]]
Check = Callable[[], None]


class Delivery(enum.StrEnum):
    AT_LEAST_ONCE = "at-least-once"
    """Effects first (outputs flushed and delivered), then a commit of the batch's next offsets (asynchronous on the
    hot path, see :mod:`pareis.kafka.checkpoint`); effects must be idempotent."""
    EXACTLY_ONCE = "exactly-once"
    """Outputs, dead letters and input offsets in one Kafka transaction (exactly-once to Kafka)."""


def _nothing() -> None:
    return None


def _ignore(_: Mapping[tuple[str, int], int]) -> None:
    return None


@dataclass(frozen=True)
class Pipeline(Generic[T]):
    """A role's behaviour, built at start-up: it may hold connections, released by ``close``."""

    decode: Decoder[T]
    handle: Handler[T]
    checks: Mapping[str, Check] = field(default_factory=dict)
    close: Callable[[], None] = _nothing
    start: Callable[[], None] = _nothing
    committed: Callable[[Mapping[tuple[str, int], int]], None] = _ignore
    before_commit: Callable[[], None] = _nothing


@dataclass(frozen=True)
class Role:
    """A role resolved against settings: concrete topics and group, and a pipeline factory not yet called."""

    name: str
    inputs: tuple[str, ...]
    group: str
    delivery: Delivery
    build: Callable[[], Pipeline[Any]]
    outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoleSpec:
    """A role as the role registry (:mod:`pareis.compose.roles`) declares it.

    ``inputs``/``outputs`` are field names of :class:`pareis.config.Topics` (e.g. ``"mcl_versioned"``);
    ``process`` builds the role's pipeline in a process of its own (``pareis run``), called only when the role
    starts. The group id is ``<kafka.group_prefix>-<name>``.
    """

    name: str
    inputs: tuple[str, ...]
    delivery: Delivery
    process: Callable[[Settings], Pipeline[Any]]
    outputs: tuple[str, ...] = ()
    description: str = ""

    def resolve(self, settings: Settings) -> Role:
        topics = settings.kafka.topics
        return Role(
            name=self.name,
            inputs=tuple(getattr(topics, t) for t in self.inputs),
            group=f"{settings.kafka.group_prefix}-{self.name}",
            delivery=self.delivery,
            build=lambda: self.process(settings),
            outputs=tuple(getattr(topics, t) for t in (*self.outputs, "dlq")),
        )
