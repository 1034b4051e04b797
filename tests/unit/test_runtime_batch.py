"""BatchProcessor: decode, filter, handle, and the dead-letter rules — no Kafka involved."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

from pareis.contracts.records import Message, OutRecord, RawMessage, header
from pareis.errors import DecodeError, Fatal, Poison, Retriable
from pareis.kafka import dlq
from pareis.kafka.batch import BatchProcessor
from pareis.kafka.role import Pipeline


def raw(offset: int, value: bytes | None, partition: int = 0, key: bytes | None = b"k") -> RawMessage:
    return RawMessage("in", partition, offset, key, value, (("trace", b"t1"),))


def decode_ints(message: RawMessage) -> int | None:
    assert message.value is not None
    if message.value == b"skip":
        return None
    if message.value == b"bad":
        raise DecodeError("framing", "not a number")
    if message.value == b"crash":
        raise IndexError("decoder bug on odd bytes")
    return int(message.value)


def echo(batch: Sequence[Message[int]]) -> Iterable[OutRecord]:
    for m in batch:
        if m.value == 13:
            raise Poison("13 is unlucky")
        if m.value == 66:
            raise KeyError("handler bug")
    return [OutRecord("out", m.key, str(m.value * 2).encode()) for m in batch]


def processor(handle=echo) -> BatchProcessor:  # type: ignore[no-untyped-def]
    return BatchProcessor("test-role", Pipeline(decode=decode_ints, handle=handle), "dlq")


def test_good_messages_are_handled_and_counted_per_partition() -> None:
    result = processor().process([raw(0, b"1"), raw(1, b"2"), raw(0, b"3", partition=1)])
    assert [r.value for r in result.outputs] == [b"2", b"4", b"6"]
    assert result.tally.consumed == {("in", 0): 2, ("in", 1): 1}
    assert result.tally.handled == {("in", 0): 2, ("in", 1): 1}
    assert result.tally.dead == {}


def test_filtered_and_tombstones_are_counted_not_handled() -> None:
    seen: list[int] = []

    def record(batch: Sequence[Message[int]]) -> Iterable[OutRecord]:
        seen.extend(m.value for m in batch)
        return ()

    result = processor(record).process([raw(0, b"skip"), raw(1, None), raw(2, b"5")])
    assert seen == [5]
    assert result.tally.filtered == {("in", 0): 2}
    assert result.outputs == []


def test_undecodable_message_is_dead_lettered_with_original_bytes_and_headers() -> None:
    result = processor().process([raw(0, b"1"), raw(7, b"bad", key=b"the-key"), raw(9, b"2")])
    assert [r.value for r in result.outputs if r.topic == "out"] == [b"2", b"4"]
    dead = [r for r in result.outputs if r.topic == "dlq"]
    assert [d.value for d in dead] == [b"bad"]
    first = dead[0]
    assert first.key == b"the-key"
    assert first.headers[0] == ("trace", b"t1")  # original headers first, untouched
    assert header(first.headers, dlq.SOURCE_TOPIC) == b"in"
    assert header(first.headers, dlq.SOURCE_PARTITION) == b"0"
    assert header(first.headers, dlq.SOURCE_OFFSET) == b"7"
    assert header(first.headers, dlq.ROLE) == b"test-role"
    assert header(first.headers, dlq.ERROR_CLASS) == b"DecodeError"
    assert header(first.headers, dlq.ERROR_REASON) == b"framing"
    assert b"not a number" in (header(first.headers, dlq.ERROR_MESSAGE) or b"")
    assert result.tally.dead == {("in", 0): 1}
    assert result.tally.errors == {"DecodeError": 1}


def test_a_decoder_crash_is_fatal_not_dead_lettered() -> None:
    """An unclassified decoder error is our bug (or an untranslated library error), not the input's fault."""
    with pytest.raises(Fatal, match=r"the decoder raised IndexError on in\[0\]@8") as caught:
        processor().process([raw(0, b"1"), raw(8, b"crash"), raw(9, b"2")])
    assert isinstance(caught.value.__cause__, IndexError)


def test_handler_poison_is_isolated_to_the_guilty_messages() -> None:
    calls: list[list[int]] = []

    def handle(batch: Sequence[Message[int]]) -> Iterable[OutRecord]:
        calls.append([m.value for m in batch])
        return echo(batch)

    result = processor(handle).process([raw(0, b"1"), raw(1, b"13"), raw(2, b"5"), raw(3, b"4")])
    assert calls == [[1, 13, 5, 4], [1], [13], [5], [4]]
    assert [r.value for r in result.outputs if r.topic == "out"] == [b"2", b"10", b"8"]
    dead = [r for r in result.outputs if r.topic == "dlq"]
    assert [header(d.headers, dlq.SOURCE_OFFSET) for d in dead] == [b"1"]
    assert [header(d.headers, dlq.ERROR_CLASS) for d in dead] == [b"Poison"]
    assert result.tally.handled == {("in", 0): 3}


@pytest.mark.parametrize("values", [[b"1", b"66", b"4"], [b"13", b"66"]], ids=["in-the-batch", "while-isolating"])
def test_a_handler_bug_is_fatal_not_dead_lettered(values: list[bytes]) -> None:
    """A KeyError in a handler stops the role: nothing is dead-lettered or produced, so nothing commits past it."""
    with pytest.raises(Fatal, match="the handler raised KeyError") as caught:
        processor().process([raw(i, v) for i, v in enumerate(values)])
    assert isinstance(caught.value.__cause__, KeyError)


@pytest.mark.parametrize("error", [Retriable("redis down"), Fatal("fenced")])
def test_retriable_and_fatal_propagate_from_the_handler(error: Exception) -> None:
    def handle(batch: Sequence[Message[int]]) -> Iterable[OutRecord]:
        raise error

    with pytest.raises(type(error)):
        processor(handle).process([raw(0, b"1")])


def test_retriable_from_the_decoder_propagates() -> None:
    def decode(message: RawMessage) -> int:
        raise Retriable("schema registry down")

    with pytest.raises(Retriable):
        BatchProcessor("r", Pipeline(decode=decode, handle=echo), "dlq").process([raw(0, b"1")])


def test_retriable_while_isolating_poison_propagates() -> None:
    def handle(batch: Sequence[Message[int]]) -> Iterable[OutRecord]:
        if len(batch) > 1:
            raise Poison("one of you")
        raise Retriable("now the store is down")

    with pytest.raises(Retriable):
        processor(handle).process([raw(0, b"1"), raw(1, b"2")])
