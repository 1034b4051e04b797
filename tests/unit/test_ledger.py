"""The effect ledger contract, for the in-memory ledger and (integration) the Redis one; Redis error mapping."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pareis.errors import Fatal, Retriable
from pareis.store.ledger import EffectLedger, LedgerValues, MemoryLedger
from pareis.store.ledger_redis import RedisLedger
from tests.support.backends import Backend
from tests.support.stack import wait_until

LedgerFactory = Callable[[], EffectLedger]


@pytest.fixture
def new_ledger(backend: Backend) -> LedgerFactory:
    """Builds ledgers on one store: each call is another process's view of the same ledger."""
    if backend.client is None:
        shared = MemoryLedger()
        return lambda: shared
    prefix = f"test:pareis:ledger:{uuid.uuid4().hex}:"
    return lambda: RedisLedger(backend.client, prefix=prefix, ttl_s=3600)


def test_of_two_concurrent_claims_exactly_one_wins_and_a_release_frees_it(new_ledger: LedgerFactory) -> None:
    first, second = new_ledger(), new_ledger()
    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(lambda i: (first if i % 2 else second).claim("e/jira", f"owner-{i}", 30), range(16)))
    assert won.count(True) == 1, "exactly one consumer delivers the effect"
    holder = f"owner-{won.index(True)}"
    assert first.claim("e/jira", holder, 30), "the holder may claim again (a retry)"
    second.release("e/jira", "someone-else")
    assert not second.claim("e/jira", "owner-x", 30), "only the holder releases"
    first.release("e/jira", holder)
    assert second.claim("e/jira", "owner-x", 30)


def test_a_claim_lapses_by_itself(new_ledger: LedgerFactory) -> None:
    ledger = new_ledger()
    assert ledger.claim("e/slack", "crashed", 0.05)
    wait_until(lambda: ledger.claim("e/slack", "next", 30), 5, "the crashed holder's claim to lapse")


def test_an_unrecorded_effect_is_not_seen(new_ledger: LedgerFactory) -> None:
    assert new_ledger().seen("effect-1/jira") is False


def test_a_recorded_effect_is_seen_by_every_view(new_ledger: LedgerFactory) -> None:
    new_ledger().record("effect-1/jira")

    assert new_ledger().seen("effect-1/jira") is True
    assert new_ledger().seen("effect-1/slack") is False
    assert new_ledger().seen("effect-2/jira") is False


def test_recording_twice_is_harmless(new_ledger: LedgerFactory) -> None:
    ledger = new_ledger()
    ledger.record("effect-1/linear")
    ledger.record("effect-1/linear")

    assert ledger.seen("effect-1/linear") is True


def test_ids_with_any_characters_are_kept_apart(new_ledger: LedgerFactory) -> None:
    ledger = new_ledger()
    ledger.record("urn:li:incident:pareis-(a,b)/open *")

    assert ledger.seen("urn:li:incident:pareis-(a,b)/open *") is True
    assert ledger.seen("urn:li:incident:pareis-(a,b)/open") is False


def test_an_empty_id_is_refused(new_ledger: LedgerFactory) -> None:
    with pytest.raises(ValueError):
        new_ledger().record("")


def test_a_stored_value_is_read_back_by_every_view_and_replaced_by_the_next(new_ledger: LedgerFactory) -> None:
    writer, reader = new_ledger(), new_ledger()
    assert reader.get("ticket/slack/urn:li:incident:x") is None
    writer.put("ticket/slack/urn:li:incident:x", '{"id": "C1/1.000001"}')
    assert reader.get("ticket/slack/urn:li:incident:x") == '{"id": "C1/1.000001"}'
    writer.put("ticket/slack/urn:li:incident:x", "")
    assert reader.get("ticket/slack/urn:li:incident:x") == "", "an empty value is a value, not nothing"
    assert reader.seen("ticket/slack/urn:li:incident:x") is False, "values and delivered ids are apart"


def test_implementations_satisfy_the_protocol(new_ledger: LedgerFactory) -> None:
    assert isinstance(new_ledger(), EffectLedger)


@pytest.mark.integration
def test_redis_entries_never_expire_by_default(redis_client: redis.Redis) -> None:
    RedisLedger(redis_client, prefix="test:ledger:forever:").record("effect-1/jira")
    assert redis_client.ttl("test:ledger:forever:effect-1/jira") == -1


@pytest.mark.integration
def test_redis_entries_expire_after_the_ttl(redis_client: redis.Redis) -> None:
    prefix = f"test:pareis:ledger:{uuid.uuid4().hex}:"
    RedisLedger(redis_client, prefix=prefix, ttl_s=600).record("effect-1/jira")
    try:
        ttl = redis_client.ttl(prefix + "effect-1/jira")
        assert 0 < int(ttl) <= 600  # type: ignore[arg-type]
    finally:
        redis_client.delete(prefix + "effect-1/jira")


def test_redis_unreachable_is_retriable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=2, retry=Retry(NoBackoff(), 0))

    with pytest.raises(Retriable):
        RedisLedger(client).seen("effect-1/jira")
    with pytest.raises(Retriable):
        RedisLedger(client).record("effect-1/jira")


class Refusing:
    """A Redis client whose every command fails with ``error``."""

    def __init__(self, error: redis.RedisError) -> None:
        self.error = error

    def exists(self, *names: Any) -> int:
        raise self.error

    def set(self, *args: Any, **kwargs: Any) -> bool:
        raise self.error


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (redis.ConnectionError("reset by peer"), Retriable),
        (redis.TimeoutError("timed out"), Retriable),
        (redis.BusyLoadingError("loading the dataset"), Retriable),
        (redis.ReadOnlyError("You can't write against a read only replica."), Retriable),
        (redis.AuthenticationError("invalid password"), Fatal),
        (redis.ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value"), Fatal),
    ],
)
def test_redis_errors_map_to_retriable_or_fatal(error: redis.RedisError, kind: type[Exception]) -> None:
    ledger = RedisLedger(Refusing(error))  # type: ignore[arg-type]

    with pytest.raises(kind) as caught:
        ledger.record("effect-1/jira")

    assert caught.value.__cause__ is error


def test_get_many_reads_every_value_in_order(new_ledger: LedgerFactory) -> None:
    writer, reader = new_ledger(), new_ledger()
    writer.put("ticket/jira/urn:li:incident:a", "A")
    writer.put("ticket/slack/urn:li:incident:b", "B")
    assert isinstance(reader, LedgerValues)
    keys = ["ticket/slack/urn:li:incident:b", "missing", "ticket/jira/urn:li:incident:a"]
    assert reader.get_many(keys) == ["B", None, "A"]
    assert reader.get_many([]) == []
    many = [f"k{i}" for i in range(2_500)]  # past one MGET chunk
    for key in many[::7]:
        writer.put(key, key.upper())
    assert reader.get_many(many) == [key.upper() if i % 7 == 0 else None for i, key in enumerate(many)]
