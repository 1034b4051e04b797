"""The incidents role's step journal: one contract, in memory and in Redis."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pareis.core.lifecycle import IncidentState, Status, Tracked
from pareis.errors import Retriable
from pareis.store.journal import JournalEntry, MemoryStepJournal, Position, StepJournal
from pareis.store.journal_redis import RedisStepJournal

DS = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.orders,PROD)"
OTHER = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.customers,PROD)"
TOPIC = "pareis.signals.v1"
KEEP = 100


def state(revision: int, dataset: str = DS) -> IncidentState:
    if revision == 0:
        return IncidentState(dataset)
    tracked = Tracked(f"urn:li:incident:pareis-{revision}", 10, 20, revision, {"assertions": ["urn:li:assertion:a"]})
    return IncidentState(dataset, Status.ACTIVE, 5, tracked)


def at(offset: int, partition: int = 0) -> Position:
    return Position(TOPIC, partition, offset)


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def journal(request: pytest.FixtureRequest) -> Iterator[StepJournal]:
    if request.param == "memory":
        yield MemoryStepJournal(keep=KEEP)
    else:
        yield RedisStepJournal(request.getfixturevalue("redis_client"), prefix="test:journal:", keep=KEEP)


def test_implementations_satisfy_the_port(journal: StepJournal) -> None:
    assert isinstance(journal, StepJournal)


def test_a_signal_past_every_entry_is_no_redo(journal: StepJournal) -> None:
    assert journal.before(DS, at(0)) is None
    journal.record([JournalEntry(at(10), state(0)), JournalEntry(at(12), state(1))])
    assert journal.before(DS, at(13)) is None


def test_a_redo_starts_from_the_state_before_the_earliest_step_at_or_after_it(journal: StepJournal) -> None:
    journal.record([JournalEntry(at(10), state(0)), JournalEntry(at(12), state(1)), JournalEntry(at(15), state(2))])
    assert journal.before(DS, at(10)) == state(0)
    assert journal.before(DS, at(11)) == state(1), "the step at 11 changed nothing: the state before 12 holds"
    assert journal.before(DS, at(15)) == state(2)
    assert journal.before(DS, at(3)) == state(0)


def test_recording_at_an_offset_drops_the_aborted_attempts_later_entries(journal: StepJournal) -> None:
    journal.record([JournalEntry(at(10), state(0)), JournalEntry(at(12), state(1)), JournalEntry(at(15), state(2))])
    journal.record([JournalEntry(at(12), state(5))])  # the redo from 12 took another path
    assert journal.before(DS, at(13)) is None, "the entry at 15 belonged to the aborted attempt"
    assert journal.before(DS, at(11)) == state(5)
    assert journal.before(DS, at(10)) == state(0)


def test_entries_older_than_the_horizon_are_dropped(journal: StepJournal) -> None:
    journal.record([JournalEntry(at(10), state(0)), JournalEntry(at(50), state(1))])
    journal.record([JournalEntry(at(10 + KEEP + 1), state(2))])
    assert journal.before(DS, at(0)) == state(1), "the entry at 10 is beyond any open transaction now"


def test_partitions_and_datasets_never_mix(journal: StepJournal) -> None:
    journal.record([JournalEntry(at(10, partition=1), state(1)), JournalEntry(at(10), state(2, OTHER))])
    assert journal.before(DS, at(0)) is None
    assert journal.before(DS, at(0, partition=1)) == state(1)
    assert journal.before(OTHER, at(0)) == state(2, OTHER)


def test_redis_errors_are_retriable_when_redis_is_unreachable() -> None:
    client = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    with pytest.raises(Retriable):
        RedisStepJournal(client).before(DS, at(0))
    with pytest.raises(Retriable):
        RedisStepJournal(client).record([JournalEntry(at(0), state(0))])
