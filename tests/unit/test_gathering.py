"""A coalescing role's batch (pareis.kafka.gathering): from its first message until the input goes quiet, the batch
is full, its time is up, or the runner's assignment changes."""

from __future__ import annotations

import pytest

from pareis.kafka.gathering import gather

pytestmark = pytest.mark.unit


class Input:
    """``consume`` as librdkafka answers it, scripted: each wait brings the next list of messages (none once the
    script ends); the waits asked are kept, and each advances the clock by the wait's timeout."""

    def __init__(self, *arrivals: list[int]) -> None:
        self.arrivals = list(arrivals)
        self.waits: list[tuple[int, float]] = []
        self.now = 100.0

    def consume(self, n: int, timeout_s: float) -> list[int]:
        self.waits.append((n, timeout_s))
        self.now += timeout_s
        got = self.arrivals.pop(0) if self.arrivals else []
        assert len(got) <= n, "the script brings more than asked"
        return got

    def clock(self) -> float:
        return self.now


def test_a_burst_is_one_batch_as_soon_as_it_stops_coming() -> None:
    feed = Input([1], [2, 3, 4], [5, 6], [])
    assert gather(feed.consume, 100, 1.0, 0.2, clock=feed.clock) == [1, 2, 3, 4, 5, 6]
    # The first message, then waits of at most the quiet time for the rest; the empty one closed the batch.
    assert feed.waits == [(1, 1.0), (99, 0.2), (96, 0.2), (94, 0.2)]


def test_nothing_coming_is_an_empty_batch_after_one_wait() -> None:
    feed = Input()
    assert gather(feed.consume, 100, 1.0, 0.2, clock=feed.clock) == []
    assert feed.waits == [(1, 1.0)]


def test_a_full_batch_closes_without_another_wait() -> None:
    feed = Input([1], [2, 3])
    assert gather(feed.consume, 3, 1.0, 0.2, clock=feed.clock) == [1, 2, 3]
    assert feed.waits == [(1, 1.0), (2, 0.2)]


def test_a_steady_trickle_is_gathered_for_the_batch_time_from_its_first_message() -> None:
    feed = Input(*[[i] for i in range(1, 20)])
    got = gather(feed.consume, 100, 1.0, 0.3, clock=feed.clock)
    # After the first: waits of 0.3, 0.3, 0.3 and the 0.1 left of the second: five messages, then the time is up.
    assert got == [1, 2, 3, 4, 5]
    assert feed.waits[1:] == [(99, 0.3), (98, 0.3), (97, 0.3), (96, pytest.approx(0.1))]


def test_a_change_of_assignment_closes_the_batch_at_once() -> None:
    feed = Input([1], [2], [3], [4])
    asked = iter([True, True, False])
    assert gather(feed.consume, 100, 1.0, 0.2, steady=lambda: next(asked), clock=feed.clock) == [1, 2, 3]
    assert len(feed.waits) == 3
