"""How a coalescing role's batch is gathered (``runtime.batch_quiet_s``): from the first message to come, until the
input goes quiet, the batch is full or its time is up.

librdkafka's ``consume(n, timeout)`` returns once ``n`` messages are there or ``timeout`` has passed, so one wait of a
second brings a second's messages: right for a steady trickle, but a burst that arrived in a fraction of that second
still waits it out, and the second counts from when the wait began — a burst whose first signals land near its end
is split in two batches, each paying what a batch costs whatever its size (the scores role's survey and gates).
:func:`gather` starts the batch's time at its first message and closes it as soon as no message came for ``quiet_s``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def gather(
    consume: Callable[[int, float], list[T]],
    size: int,
    timeout_s: float,
    quiet_s: float,
    *,
    steady: Callable[[], bool] = lambda: True,
    clock: Callable[[], float] = time.monotonic,
) -> list[T]:
    """A batch of up to ``size`` messages from ``consume(n, timeout_s)``: the first to come within ``timeout_s`` (none:
    an empty batch), then what follows it within ``timeout_s`` of it, each wait at most ``quiet_s``; a wait that
    brings nothing closes the batch, and so does ``steady()`` turning false (asked before each wait after the first:
    the runner's assignment changed, or a client error is kept)."""
    messages = consume(1, timeout_s)
    deadline = clock() + timeout_s
    while messages and len(messages) < size and steady():
        left = deadline - clock()
        if left <= 0:
            break
        more = consume(size - len(messages), min(quiet_s, left))
        if not more:
            break
        messages += more
    return messages
