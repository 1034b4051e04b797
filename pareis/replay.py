"""Replay: publish DataHub file-format metadata to the change-log topics as GMS would.

This stands in for GMS on machines without one (local stacks, backfills, tests, the demo); the metadata itself
stays real. Proposals are read with acryl-datahub's reader, turned into change-log records by
:class:`~pareis.datahub.gms.emulator.ChangeLogEmulator` (with the siblings GMS's sibling hook writes), encoded with the
DataHub codec and handed to a :class:`Sink` — the real broker (:class:`pareis.kafka.publisher.KafkaPublisher`) or
the in-process one (:class:`pareis.kafka.memory.MemoryBroker`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pareis.datahub.files.metadata_file import Proposal, read_proposals
from pareis.datahub.gms.emulator import ChangeLogEmulator, LoggedChange


class Sink(Protocol):
    """Where encoded change-log records go."""

    def publish(self, topic: str, key: bytes | None, value: bytes, headers: Mapping[str, bytes] | None = None) -> None:
        """Queue one record; may raise Retriable (broker unreachable) or Fatal."""

    def flush(self) -> None:
        """Return once every queued record is durable; raise if any was not delivered."""


class Encoder(Protocol):
    """Encodes an Avro-shaped MetadataChangeLog record for a topic (Confluent framing)."""

    def encode_mcl(self, record: Mapping[str, object], topic: str) -> bytes: ...


@dataclass
class ReplayReport:
    """What a replay did: records published per topic, proposals GMS would not have logged, and the changes GMS's
    sibling hook wrote on top of the proposals."""

    published: Counter[str] = field(default_factory=Counter)
    unchanged: int = 0
    proposals: int = 0
    hook_writes: int = 0

    def lines(self) -> list[str]:
        out = [f"{topic}: {count}" for topic, count in sorted(self.published.items())]
        return [
            f"proposals read: {self.proposals}",
            *out,
            f"no-op writes (not logged): {self.unchanged}",
            f"siblings written by the sibling hook: {self.hook_writes}",
        ]


@dataclass
class Replayer:
    """Publishes proposals in order through the emulator, pacing them on their own clock.

    ``clock(proposal)`` gives each change's time in ms (its ``systemMetadata.lastObserved`` by default, see
    :func:`proposal_clock`). With ``speed > 0`` the gap between consecutive changes is slept, divided by ``speed``,
    through ``sleep`` (injected so that tests and the demo never wait).
    """

    emulator: ChangeLogEmulator
    encoder: Encoder
    sink: Sink
    topics: Mapping[str, str]
    """Which topic each log goes to: ``{"versioned": ..., "timeseries": ...}``."""
    clock: Callable[[Proposal], int]
    speed: float = 0.0
    sleep: Callable[[float], None] = lambda _s: None
    on_change: Callable[[LoggedChange, str], None] | None = None
    validate: Callable[[Sequence[Proposal]], None] | None = None
    """Checks every proposal of :meth:`run_files` before the first is published (the composition root passes
    :func:`pareis.lineage_loader.check`: what the live path would dead-letter is refused up front)."""

    def run(self, proposals: Iterable[Proposal]) -> ReplayReport:
        report = ReplayReport()
        last_ms: int | None = None
        for proposal in proposals:
            report.proposals += 1
            now_ms = self.clock(proposal)
            if self.speed > 0 and last_ms is not None and now_ms > last_ms:
                self.sleep((now_ms - last_ms) / 1000.0 / self.speed)
            last_ms = now_ms
            changes = self.emulator.log(proposal, now_ms)
            if not changes:
                report.unchanged += 1
            report.hook_writes += max(0, len(changes) - 1)
            for change in changes:
                topic = self.topics[change.log]
                self.sink.publish(topic, change.key.encode(), self.encoder.encode_mcl(change.record, topic))
                report.published[topic] += 1
                if self.on_change is not None:
                    self.on_change(change, topic)
        self.sink.flush()
        return report

    def run_files(self, paths: Iterable[str | Path]) -> ReplayReport:
        """Replay every file, read (and so validated) in full before the first change is published: a bad last
        file must not leave the first ones half-published."""
        proposals = list(read_proposals(paths))
        if self.validate is not None:
            self.validate(proposals)
        return self.run(proposals)


def proposal_clock(default_ms: int) -> Callable[[Proposal], int]:
    """A clock reading each proposal's ``systemMetadata.lastObserved``, else ``default_ms``."""

    def clock(proposal: Proposal) -> int:
        observed = (proposal.system_metadata or {}).get("lastObserved")
        return int(observed) if observed else default_ms

    return clock
