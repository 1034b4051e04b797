"""The retry policy and the HTTP-status translation, without any server."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from pareis.errors import Fatal, PareisError, Poison, Retriable
from pareis.tickets.failures import Rejected, Unauthorized, for_status, retry_after_seconds
from pareis.tickets.retry import RetryPolicy


def failing(*errors: PareisError, then: str = "done") -> tuple[Callable[[], str], list[int]]:
    """An action raising ``errors`` one per call, then returning ``then``; and its call counter."""
    calls = [0]

    def action() -> str:
        calls[0] += 1
        if calls[0] <= len(errors):
            raise errors[calls[0] - 1]
        return then

    return action, calls


def policy(**options: object) -> tuple[RetryPolicy, list[float]]:
    slept: list[float] = []
    return RetryPolicy(sleep=slept.append, jitter=0.0, **options), slept  # type: ignore[arg-type]


def test_backoff_doubles_and_is_capped() -> None:
    retry, slept = policy(attempts=8, initial_s=0.5, max_s=4.0)
    action, calls = failing(*(Retriable("blip") for _ in range(7)))

    assert retry.call(action) == "done"

    assert slept == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0]
    assert calls == [8]


def test_a_server_hint_replaces_the_computed_delay() -> None:
    retry, slept = policy(initial_s=0.2)
    action, _ = failing(Retriable("429", retry_after=3.0), Retriable("503"))

    retry.call(action)

    assert slept == [3.0, 0.4]


def test_a_hint_longer_than_the_cap_is_left_to_the_runtime() -> None:
    retry, slept = policy(max_s=10.0)
    hint = Retriable("429", retry_after=120.0)
    action, calls = failing(hint)

    with pytest.raises(Retriable) as caught:
        retry.call(action)

    assert caught.value is hint
    assert slept == []
    assert calls == [1]


def test_attempts_are_bounded_and_the_last_retriable_is_reraised() -> None:
    retry, slept = policy(attempts=3)
    last = Retriable("third")
    action, calls = failing(Retriable("first"), Retriable("second"), last)

    with pytest.raises(Retriable) as caught:
        retry.call(action)

    assert caught.value is last
    assert calls == [3]
    assert len(slept) == 2


@pytest.mark.parametrize("error", [Poison("bad payload"), Fatal("revoked")])
def test_poison_and_fatal_pass_through_at_once(error: PareisError) -> None:
    retry, slept = policy()
    action, calls = failing(error)

    with pytest.raises(type(error)) as caught:
        retry.call(action)

    assert caught.value is error
    assert calls == [1]
    assert slept == []


def test_jitter_shortens_delays_by_at_most_its_fraction() -> None:
    retry = RetryPolicy(initial_s=1.0, multiplier=1.0, jitter=0.5, rng=random.Random(7))

    delays = [retry.backoff(1) for _ in range(200)]

    assert all(0.5 <= d <= 1.0 for d in delays)
    assert len(set(delays)) > 1


@pytest.mark.parametrize("options", [{"attempts": 0}, {"multiplier": 0.5}, {"jitter": 2.0}, {"initial_s": -1.0}])
def test_nonsense_policies_are_refused(options: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**options)  # type: ignore[arg-type]


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=90), usegmt=True)

    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds(" 1.5 ") == 1.5
    assert retry_after_seconds(later, now=now.timestamp()) == pytest.approx(90.0)
    assert retry_after_seconds("-4") == 0.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None


@pytest.mark.parametrize(
    ("status", "kind"),
    [(429, Retriable), (500, Retriable), (503, Retriable), (401, Unauthorized), (403, Rejected), (400, Rejected)],
)
def test_statuses_map_to_the_three_error_classes(status: int, kind: type[PareisError]) -> None:
    error = for_status("jira", status, {"retry-after": "4"}, '{"errorMessages": ["why"]}')

    assert isinstance(error, kind)
    if isinstance(error, Retriable):
        assert error.retry_after == 4.0
    else:
        assert error.status == status  # type: ignore[attr-defined]
        assert error.body == '{"errorMessages": ["why"]}'  # type: ignore[attr-defined]
