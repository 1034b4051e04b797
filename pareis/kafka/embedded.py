"""The embedded runtime: roles' pipelines over a :class:`~pareis.kafka.memory.MemoryBroker`, in one thread, until
no role has unconsumed input (the demo, ``run all`` without servers, tests).

It keeps the Kafka runtime's contract (:mod:`pareis.kafka.role`): the same :class:`~pareis.kafka.batch.BatchProcessor`
decodes, filters, handles and dead-letters each batch (poison goes to the DLQ topic with the same headers), a
role's outputs are appended to the broker before its input offsets advance, and a role only ever sees its own
input topics. Nothing can crash half-way in one thread, so every delivery mode is exactly-once here.

Scheduling stands in for time: a role is *derived* when one of its inputs is another role's output; the others
read external topics (the change log). Each step runs one batch of the most downstream derived role with input,
else of the first role (in the order given) with input. So with ``lineage, assertions, incidents, effects`` the
lineage index is built first, then each assertion-run batch flows all the way to the effects before the next one
is read — as if the runs arrived one by one in a live system (with ``batch_size=1``, the default).

Errors: Fatal propagates; Retriable is retried at once up to ``retries`` times (there is nothing to wait for in
memory, so a persisting one is a bug and propagates).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from pareis.contracts.records import RawMessage
from pareis.errors import Retriable
from pareis.kafka.batch import BatchProcessor, BatchResult
from pareis.kafka.memory import MemoryBroker, Record
from pareis.kafka.role import Pipeline, Role


@dataclass
class RoleReport:
    """What one role did: messages consumed / filtered / handled / dead-lettered, and the records it appended."""

    name: str
    batches: int = 0
    consumed: int = 0
    filtered: int = 0
    handled: int = 0
    dead: int = 0
    produced: list[Record] = field(default_factory=list)

    def produced_to(self, topic: str) -> list[Record]:
        """The records this role appended to ``topic``, in order."""
        return [r for r in self.produced if r.topic == topic]

    @property
    def per_topic(self) -> Counter[str]:
        return Counter(r.topic for r in self.produced)


@dataclass
class _Running:
    role: Role
    pipeline: Pipeline[Any]
    processor: BatchProcessor
    report: RoleReport
    positions: dict[tuple[str, int], int] = field(default_factory=dict)
    cursor: int = 0


class EmbeddedRunner:
    """Runs ``roles`` (each with its built pipeline) over ``broker``; see the module docstring.

    Positions start at the beginning of every input partition and persist across :meth:`run` calls, so more
    input can be appended and run again. Use as a context manager (or call :meth:`close`) to close the pipelines.
    """

    def __init__(
        self,
        broker: MemoryBroker,
        roles: Sequence[tuple[Role, Pipeline[Any]]],
        *,
        dlq_topic: str,
        batch_size: int = 1,
        retries: int = 3,
    ) -> None:
        if batch_size < 1 or retries < 0:
            raise ValueError("batch_size must be at least 1 and retries non-negative")
        self.broker = broker
        self.batch_size = batch_size
        self.retries = retries
        self._dlq = dlq_topic
        self._roles = [
            _Running(role, pipeline, BatchProcessor(role.name, pipeline, dlq_topic), RoleReport(role.name))
            for role, pipeline in roles
        ]
        names = [r.role.name for r in self._roles]
        if len(set(names)) != len(names):
            raise ValueError(f"each role once, got {names}")
        fed = {t for r in self._roles for t in r.role.outputs if t != dlq_topic}
        self._derived = [r for r in self._roles if fed.intersection(r.role.inputs)]
        self._sources = [r for r in self._roles if r not in self._derived]

    @property
    def reports(self) -> dict[str, RoleReport]:
        return {r.role.name: r.report for r in self._roles}

    def pending(self, name: str) -> int:
        """Unconsumed input records of role ``name``."""
        running = next(r for r in self._roles if r.role.name == name)
        return sum((self.broker.end(t, p) - o) for (t, p), o in self._partitions(running))

    def run(self, max_batches: int | None = None) -> dict[str, RoleReport]:
        """Run batches until no role has unconsumed input (or ``max_batches`` were run); the reports so far."""
        done = 0
        while max_batches is None or done < max_batches:
            running = self._next()
            if running is None:
                break
            self._step(running)
            done += 1
        return self.reports

    def close(self) -> None:
        for running in self._roles:
            running.pipeline.close()

    def __enter__(self) -> EmbeddedRunner:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    # --- scheduling ----------------------------------------------------------------------------------------------
    def _partitions(self, running: _Running) -> list[tuple[tuple[str, int], int]]:
        out = []
        for topic in running.role.inputs:
            for partition in range(self.broker.partition_count(topic)):
                out.append(((topic, partition), running.positions.get((topic, partition), 0)))
        return out

    def _has_input(self, running: _Running) -> bool:
        return any((self.broker.end(t, p) - o) > 0 for (t, p), o in self._partitions(running))

    def _next(self) -> _Running | None:
        for running in reversed(self._derived):
            if self._has_input(running):
                return running
        return next((r for r in self._sources if self._has_input(r)), None)

    def _batch(self, running: _Running) -> list[Record]:
        """Up to ``batch_size`` records of one partition with input, taking partitions in turn."""
        partitions = self._partitions(running)
        for i in range(len(partitions)):
            (topic, partition), offset = partitions[(running.cursor + i) % len(partitions)]
            records = self.broker.read(topic, partition, offset)[: self.batch_size]
            if records:
                running.cursor = (running.cursor + i + 1) % len(partitions)
                return records
        return []

    # --- one batch -----------------------------------------------------------------------------------------------
    def _step(self, running: _Running) -> None:
        records = self._batch(running)
        batch = [RawMessage(r.topic, r.partition, r.offset, r.key, r.value, r.headers) for r in records]
        result = self._process(running, batch)
        report = running.report
        for out in result.outputs:
            appended = self.broker.append(out.topic, out.key, out.value, dict(out.headers))
            report.produced.append(appended)
        last = records[-1]
        running.positions[(last.topic, last.partition)] = last.offset + 1
        running.processor.pipeline.committed({(last.topic, last.partition): last.offset + 1})
        tally = result.tally
        report.batches += 1
        report.consumed += sum(tally.consumed.values())
        report.filtered += sum(tally.filtered.values())
        report.handled += sum(tally.handled.values())
        report.dead += sum(tally.dead.values())

    def _process(self, running: _Running, batch: list[RawMessage]) -> BatchResult:
        attempt = 0
        while True:
            try:
                return running.processor.process(batch)
            except Retriable:
                attempt += 1
                if attempt > self.retries:
                    raise
