"""The three error classes every boundary translates into, and the Kafka runtime's own fourth kind.

Adapters (Kafka, Redis, DataHub, ticket APIs, decoders) catch their library's exceptions and raise one of the
three, so the runtime decides once what to do with a failure:

* :class:`Retriable` — the input is fine, a dependency is not (timeout, connection refused, 5xx, 429). Pause,
  back off, redo the same input. Never commit past it.
* :class:`Poison` — this one input can never succeed (undecodable bytes, malformed aspect, 4xx on a payload).
  Dead-letter it with the reason and go on with the next input.
* :class:`Fatal` — the process can't go on safely (fenced producer, bad configuration, auth revoked). Stop, so
  that the orchestrator restarts it from the last committed offsets.

:class:`Abort` is none of them: not a failure of an input or of a dependency, but the Kafka runtime's word that the
work since its last commit is void (a transaction aborted, an output not delivered, a commit refused because the
group moved on). Redoing the same input (a retry) would not do: the runtime rewinds to the committed offsets.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class PareisError(Exception):
    """Base of every error Pareis raises on purpose."""


class Retriable(PareisError):
    """A transient failure of a dependency; the same input may succeed later.

    ``retry_after`` (seconds) carries a server's hint such as HTTP ``Retry-After``, when one was given.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Poison(PareisError):
    """This input can never be processed; dead-letter it and continue."""


class Fatal(PareisError):
    """The process must stop; it will be restarted from committed state."""


class Abort(PareisError):
    """The work since the last commit is void: drop it and redo it from the committed offsets (raised only by the
    Kafka runtime's commit protocol, :mod:`pareis.kafka.checkpoint`; never by a handler)."""


@dataclass(frozen=True)
class Origin:
    """Where an input came from, for error messages and dead-letter headers."""

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"


@dataclass
class DecodeError(Poison):
    """A change-log message that can't be decoded; names where it came from and why.

    ``reason`` is a short machine-friendly class (``framing``, ``unknown-schema``, ``avro``, ``aspect-json``,
    ``unknown-aspect``); ``detail`` is the human sentence.
    """

    reason: str
    detail: str
    origin: Origin | None = field(default=None)

    def __post_init__(self) -> None:
        Poison.__init__(self, str(self))

    def __str__(self) -> str:
        where = f" at {self.origin}" if self.origin else ""
        return f"cannot decode message{where}: {self.reason}: {self.detail}"

    def at(self, origin: Origin) -> DecodeError:
        """The same error, located at ``origin``."""
        return DecodeError(self.reason, self.detail, origin)
