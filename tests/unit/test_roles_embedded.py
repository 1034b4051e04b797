"""The embedded runtime's own rules: scheduling, positions, retries, dead letters (toy roles over a MemoryBroker)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pareis.contracts.records import Message, OutRecord, RawMessage, header
from pareis.errors import Fatal, Poison, Retriable
from pareis.kafka.dlq import ROLE
from pareis.kafka.embedded import EmbeddedRunner
from pareis.kafka.memory import MemoryBroker
from pareis.kafka.role import Delivery, Pipeline, Role

DLQ = "dlq"


def role(name: str, inputs: tuple[str, ...], outputs: tuple[str, ...] = ()) -> Role:
    return Role(name, inputs, f"g-{name}", Delivery.AT_LEAST_ONCE, lambda: Pipeline(_raw, _nothing), (*outputs, DLQ))


def _raw(raw: RawMessage) -> bytes | None:
    return raw.value


def _nothing(batch: Sequence[Message[bytes]]) -> list[OutRecord]:
    return []


def test_derived_roles_run_downstream_first_and_sources_in_order() -> None:
    broker = MemoryBroker()
    order: list[str] = []

    def forward(name: str, to: str | None) -> Pipeline[bytes]:
        def handle(batch: Sequence[Message[bytes]]) -> list[OutRecord]:
            order.extend(f"{name}:{m.value.decode()}" for m in batch)
            return [OutRecord(to, m.key, m.value) for m in batch] if to else []

        return Pipeline(_raw, handle)

    for i in range(2):
        broker.append("index", None, f"i{i}".encode())
        broker.append("runs", None, f"r{i}".encode())
    roles = [
        (role("index", ("index",)), forward("index", None)),
        (role("runs", ("runs",), ("mid",)), forward("runs", "mid")),
        (role("mid", ("mid",), ("out",)), forward("mid", "out")),
        (role("out", ("out",)), forward("out", None)),
    ]
    with EmbeddedRunner(broker, roles, dlq_topic=DLQ) as runner:
        reports = runner.run()
        assert order == ["index:i0", "index:i1", "runs:r0", "mid:r0", "out:r0", "runs:r1", "mid:r1", "out:r1"]
        assert [r.value for r in reports["runs"].produced_to("mid")] == [b"r0", b"r1"]
        broker.append("runs", None, b"r2")
        assert runner.pending("runs") == 1
        runner.run()
        assert order[-3:] == ["runs:r2", "mid:r2", "out:r2"], "positions persist across runs"
        assert runner.pending("runs") == 0


def test_a_retriable_failure_is_retried_and_a_persisting_one_raised() -> None:
    broker = MemoryBroker()
    broker.append("in", None, b"x")
    failures = [Retriable("blip"), Retriable("blip")]
    handled: list[bytes] = []

    def handle(batch: Sequence[Message[bytes]]) -> list[OutRecord]:
        if failures:
            raise failures.pop()
        handled.extend(m.value for m in batch)
        return []

    runner = EmbeddedRunner(broker, [(role("r", ("in",)), Pipeline(_raw, handle))], dlq_topic=DLQ, retries=2)
    runner.run()
    assert handled == [b"x"]

    def down(batch: Sequence[Message[bytes]]) -> list[OutRecord]:
        raise Retriable("down")

    broker.append("in2", None, b"y")
    stuck = EmbeddedRunner(broker, [(role("s", ("in2",)), Pipeline(_raw, down))], dlq_topic=DLQ, retries=1)
    with pytest.raises(Retriable):
        stuck.run()
    assert stuck.pending("s") == 1, "nothing consumed past a failure"


def test_poison_is_dead_lettered_like_the_kafka_runtime_does() -> None:
    broker = MemoryBroker()
    for value in (b"ok", b"bad", b"ok2"):
        broker.append("in", b"k", value, {"trace": b"1"})

    def handle(batch: Sequence[Message[bytes]]) -> list[OutRecord]:
        if any(m.value == b"bad" for m in batch):
            raise Poison("bad input")
        return [OutRecord("out", m.key, m.value) for m in batch]

    runner = EmbeddedRunner(
        broker, [(role("r", ("in",), ("out",)), Pipeline(_raw, handle))], dlq_topic=DLQ, batch_size=3
    )
    report = runner.run()["r"]
    assert [r.value for r in broker.records("out")] == [b"ok", b"ok2"]
    (dead,) = list(broker.records(DLQ))
    assert dead.value == b"bad" and header(dead.headers, ROLE) == b"r" and header(dead.headers, "trace") == b"1"
    assert (report.consumed, report.handled, report.dead, report.batches) == (3, 2, 1, 1)


def test_a_handler_bug_stops_the_role_instead_of_dead_lettering() -> None:
    """A KeyError in a handler (our bug, not bad input) is Fatal: the role stops at the message, nothing goes to
    the DLQ, and the message stays unconsumed, to be redone once the bug is fixed."""
    broker = MemoryBroker()
    seen: list[bytes] = []

    def buggy(batch: Sequence[Message[bytes]]) -> list[OutRecord]:
        for m in batch:
            seen.append(m.value)
            if m.value == b"bug":
                raise KeyError("missing")
        return []

    for value in (b"ok", b"bug", b"after"):
        broker.append("in", None, value)
    runner = EmbeddedRunner(broker, [(role("r", ("in",)), Pipeline(_raw, buggy))], dlq_topic=DLQ)
    with pytest.raises(Fatal, match="KeyError"):
        runner.run()
    assert seen == [b"ok", b"bug"], "the role stopped at the bug"
    assert list(broker.records(DLQ)) == []
    assert runner.pending("r") == 2, "the failing message was not consumed past"
