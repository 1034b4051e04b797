"""An output over the producer's limit is poison of its input (issue 34): the input is dead-lettered with the reason,
truncated as every dead letter is, and the role goes on. Before, a run event whose ``runId`` is 2 MB made a signal
the producer refused (``MSG_SIZE_TOO_LARGE``, Fatal): the assertions role restarted on it for ever.

Through the assertions role's real pipeline over the in-memory broker, which refuses a record over librdkafka's
``message.max.bytes`` as the real producer does."""

from __future__ import annotations

import pytest

from pareis.compose.ports import Ports
from pareis.compose.roles import embedded_runner
from pareis.config import Settings
from pareis.contracts.records import header
from pareis.kafka.dlq import (
    DEFAULT_MAX_BYTES,
    ERROR_CLASS,
    ERROR_REASON,
    MESSAGE_MAX_BYTES,
    ORIGINAL_SIZE,
    SOURCE_OFFSET,
    TRUNCATED,
)
from pareis.kafka.memory import MemoryBroker, RecordTooLarge
from pareis.roles.messages import decode_signal
from tests.support.frames import run_event

DATASET = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.orders,PROD)"
ASSERTION = "urn:li:assertion:not_null_order_id"
HUGE_RUN_ID = "r" * 2_000_000


def test_the_memory_broker_refuses_an_output_over_the_producers_limit_not_the_change_log() -> None:
    broker = MemoryBroker()
    broker.append("t", b"k", b"x" * (MESSAGE_MAX_BYTES - 1024))
    with pytest.raises(RecordTooLarge, match="over the producer's limit"):
        broker.append("t", b"k", b"x" * MESSAGE_MAX_BYTES)
    broker.publish("t", b"k", b"x" * 2 * MESSAGE_MAX_BYTES)  # GMS's writes: DataHub's topics take several MB
    assert broker.size("t") == 2


@pytest.mark.parametrize("batch_size", [1, 3], ids=["one-at-a-time", "in-a-batch"])
def test_a_run_whose_signal_is_too_large_is_dead_lettered_and_the_role_goes_on(batch_size: int) -> None:
    settings = Settings()
    topics = settings.kafka.topics
    broker = MemoryBroker()
    for offset, run_id in enumerate(["r-1", HUGE_RUN_ID, "r-3"]):
        event = run_event(topics.mcl_timeseries, ASSERTION, DATASET, 1_000 * (offset + 1), run_id)
        broker.publish(topics.mcl_timeseries, ASSERTION.encode(), event)
    with embedded_runner(settings, broker, Ports.in_memory(), names=["assertions"], batch_size=batch_size) as runner:
        report = runner.run()["assertions"]

    assert report.consumed == 3 and report.dead == 1
    signals = [decode_signal(r.value or b"") for r in report.produced_to(topics.signals)]
    assert [s.run.run_id for s in signals] == ["r-1", "r-3"], "the runs before and after it are signalled"
    (letter,) = broker.records(topics.dlq)
    assert header(letter.headers, SOURCE_OFFSET) == b"1"
    assert header(letter.headers, ERROR_CLASS) == b"OutputTooLarge"
    assert header(letter.headers, ERROR_REASON) == b"output-too-large"
    original = next(r for r in broker.records(topics.mcl_timeseries) if r.offset == 1).value or b""
    assert header(letter.headers, ORIGINAL_SIZE) == str(len(original)).encode()
    assert header(letter.headers, TRUNCATED) == b"true", "the 2 MB input is cut to fit the dead-letter bound"
    assert letter.value is not None and original.startswith(letter.value)
    assert len(letter.value) < DEFAULT_MAX_BYTES
