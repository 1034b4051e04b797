"""Bounded retries of :class:`~pareis.errors.Retriable` failures with capped exponential backoff.

The policy retries in place a few times (a ticket API's blip should not pause a whole partition), then
re-raises the last :class:`~pareis.errors.Retriable` so that the runtime decides: pause, back off longer, redo
the same input. :class:`~pareis.errors.Poison` and :class:`~pareis.errors.Fatal` pass through at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from pareis.errors import Retriable

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Up to ``attempts`` calls; before call *n* + 1 wait ``min(max_s, initial_s * multiplier**(n-1))``.

    A server's ``retry_after`` replaces the computed delay (a server that asks for 5 s and gets asked again
    after 0.2 s only answers 429 again). When it asks for more than ``max_s`` the policy does not wait at all
    and re-raises at once: a long pause is the runtime's job, not a blocked thread's. ``jitter`` spreads the
    computed delays by up to that fraction (never a server's hint), so that consumers that failed together do
    not retry together. ``sleep`` and ``rng`` are injectable so that tests observe the delays without waiting.
    """

    attempts: int = 5
    initial_s: float = 0.2
    max_s: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.1
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.initial_s < 0 or self.max_s < 0 or self.multiplier < 1 or not 0 <= self.jitter <= 1:
            raise ValueError("delays must be non-negative, multiplier ≥ 1 and jitter within [0, 1]")

    def backoff(self, retry: int) -> float:
        """The computed delay before retry number ``retry`` (1-based), jitter applied, capped at ``max_s``."""
        base = min(self.max_s, self.initial_s * self.multiplier ** (retry - 1))
        if self.jitter:
            base *= 1 - self.jitter * self.rng.random()
        return base

    def call(self, action: Callable[[], T], *, deadline: float | None = None) -> T:
        """Run ``action``, retrying :class:`~pareis.errors.Retriable` as described; re-raise the last one.

        ``deadline`` (a ``clock`` reading): never wait past it — re-raise instead, so that a batch of effects stays
        within its delivery budget (and the role within ``max.poll.interval.ms``)."""
        retry = 0
        while True:
            try:
                return action()
            except Retriable as error:
                retry += 1
                if retry >= self.attempts:
                    raise
                if error.retry_after is not None:
                    if error.retry_after > self.max_s:
                        raise
                    delay = error.retry_after
                else:
                    delay = self.backoff(retry)
                if deadline is not None and self.clock() + delay > deadline:
                    raise
                self.sleep(delay)
