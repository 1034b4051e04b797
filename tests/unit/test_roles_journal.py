"""The incidents role's step journal: one contract, in memory and in Redis."""

from __future__ import annotations

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pareis.contracts.records import OutRecord
from pareis.core.lifecycle import IncidentState, Published, Status, Tracked
from pareis.errors import Fatal, Retriable
from pareis.store.journal import JournalEntry, MemoryStepJournal, Position, StepJournal
from pareis.store.journal_redis import RedisStepJournal
from tests.support.backends import Backend

DS = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.orders,PROD)"
OTHER = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.customers,PROD)"
TOPIC = "pareis.signals.v1"
KEEP = 100


def state(revision: int, dataset: str = DS) -> IncidentState:
    if revision == 0:
        return IncidentState(dataset)
    tracked = Tracked(
        f"urn:li:incident:pareis-{revision}", 10, 20, revision, Published(assertions=("urn:li:assertion:a",))
    )
    return IncidentState(dataset, Status.ACTIVE, 5, tracked)


def at(offset: int, partition: int = 0) -> Position:
    return Position(TOPIC, partition, offset)


@pytest.fixture
def journal(backend: Backend) -> StepJournal:
    if backend.client is None:
        return MemoryStepJournal(keep=KEEP)
    return RedisStepJournal(backend.client, prefix="test:journal:", keep=KEEP)


def step(offset: int, before: int, after: int, partition: int = 0, dataset: str = DS) -> JournalEntry:
    outputs = (
        OutRecord("MetadataChangeProposal_v1", b"urn:li:incident:x", b"\x00\x00\x00\x00\x10avro\xff"),
        OutRecord("pareis.effects.v1", None, b"{}", (("h", b"\x01"), ("h", b""))),
    )
    return JournalEntry(at(offset, partition), state(before, dataset), state(after, dataset), outputs)


def offsets(entries: list[JournalEntry]) -> list[int]:
    return [e.position.offset for e in entries]


def test_implementations_satisfy_the_port(journal: StepJournal) -> None:
    assert isinstance(journal, StepJournal)


def test_entries_read_back_equal_to_what_was_written(journal: StepJournal) -> None:
    entry = step(10, 0, 1)
    journal.record([entry])
    assert journal.entries(DS, at(10)) == [entry]


def test_a_signal_past_every_entry_is_no_redo(journal: StepJournal) -> None:
    assert journal.entries(DS, at(0)) == []
    journal.record([step(10, 0, 1), step(12, 1, 2)])
    assert journal.entries(DS, at(13)) == []


def test_a_redo_finds_the_steps_at_or_after_it_oldest_first(journal: StepJournal) -> None:
    journal.record([step(10, 0, 1), step(12, 1, 2), step(15, 2, 3)])
    assert offsets(journal.entries(DS, at(10))) == [10, 12, 15]
    assert offsets(journal.entries(DS, at(11))) == [12, 15]
    assert offsets(journal.entries(DS, at(15))) == [15]
    assert journal.entries(DS, at(3))[0].before == state(0)


def test_recording_at_an_offset_drops_the_aborted_attempts_later_entries(journal: StepJournal) -> None:
    journal.record([step(10, 0, 1), step(12, 1, 2), step(15, 2, 3)])
    journal.record([step(12, 1, 5)])
    assert offsets(journal.entries(DS, at(0))) == [10, 12]
    assert journal.entries(DS, at(11))[0].after == state(5)


def test_entries_older_than_the_horizon_are_dropped(journal: StepJournal) -> None:
    journal.record([step(10, 0, 1), step(50, 1, 2)])
    journal.record([step(10 + KEEP + 1, 2, 3)])
    assert offsets(journal.entries(DS, at(0))) == [50, 10 + KEEP + 1]


def test_partitions_and_datasets_never_mix(journal: StepJournal) -> None:
    journal.record([step(10, 0, 1, partition=1), step(10, 0, 2, dataset=OTHER)])
    assert journal.entries(DS, at(0)) == []
    assert offsets(journal.entries(DS, at(0, partition=1))) == [10]
    assert journal.entries(OTHER, at(0))[0].after == state(2, OTHER)


def test_release_drops_a_partitions_entries_below_the_committed_offset_only(journal: StepJournal) -> None:
    journal.record([step(10, 0, 1), step(20, 1, 2), step(12, 0, 1, dataset=OTHER), step(11, 0, 1, partition=1)])
    journal.release(TOPIC, 0, 20)
    assert offsets(journal.entries(DS, at(0))) == [20]
    assert journal.entries(OTHER, at(0)) == []
    assert offsets(journal.entries(DS, at(0, partition=1))) == [11], "another partition is not released"
    journal.release(TOPIC, 0, 21)
    assert journal.entries(DS, at(0)) == []
    journal.record([step(30, 2, 3)])  # a dataset released to nothing is journaled (and released) again
    journal.release(TOPIC, 0, 31)
    assert journal.entries(DS, at(0)) == []


@pytest.mark.integration
def test_redis_entries_have_no_ttl_and_nothing_is_left_once_released(redis_client: redis.Redis) -> None:
    journal = RedisStepJournal(redis_client, prefix="test:journal:", keep=KEEP)
    journal.record([step(10, 0, 1), step(11, 0, 1, dataset=OTHER)])
    keys = redis_client.keys("test:journal:*")
    assert len(keys) == 3 and all(redis_client.ttl(key) == -1 for key in keys), "no key may expire on a timer"
    journal.release(TOPIC, 0, 12)
    assert redis_client.keys("test:journal:*") == []


def test_an_entry_cannot_change_the_dataset() -> None:
    with pytest.raises(ValueError, match="cannot end"):
        JournalEntry(at(0), state(0), state(1, OTHER))


def test_redis_errors_are_retriable_when_redis_is_unreachable() -> None:
    client = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    with pytest.raises(Retriable):
        RedisStepJournal(client).entries(DS, at(0))
    with pytest.raises(Retriable):
        RedisStepJournal(client).record([step(0, 0, 1)])


@pytest.mark.integration
def test_a_corrupt_redis_entry_is_fatal(redis_client: redis.Redis) -> None:
    redis_client.zadd(f"test:journal:{{{TOPIC}:0}}:{DS}", {"3:{not json": 3})
    with pytest.raises(Fatal, match="corrupt journal entry"):
        RedisStepJournal(redis_client, prefix="test:journal:").entries(DS, at(0))


def test_entries_of_many_datasets_equal_entries_of_each(journal: StepJournal) -> None:
    journal.record([step(10, 0, 1), step(12, 1, 2), step(11, 0, 1, dataset=OTHER), step(13, 0, 1, partition=1)])
    positions = {DS: at(11), OTHER: at(11), "urn:li:dataset:(urn:li:dataPlatform:postgres,none,PROD)": at(0)}
    got = journal.entries_of(positions)
    assert list(got) == list(positions)
    assert got == {d: journal.entries(d, p) for d, p in positions.items()}
    assert offsets(got[DS]) == [12] and offsets(got[OTHER]) == [11]
    assert journal.entries_of({}) == {}
