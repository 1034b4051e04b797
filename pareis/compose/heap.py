"""The garbage collector's settings for Pareis's long-running processes (``pareis run``, ``serve``, ``mcp``).

A blast radius allocates hundreds of thousands of containers (the memo's sets and frozensets, the walk's frontiers,
the answer's tuples) that all live until the answer is built. CPython's default thresholds, ``(700, 10, 10)``, run a
young collection every 700 net allocations and a full one every 70,000, and a full collection scans every container
alive: what the process keeps (an in-memory index, the server's cached answers) and the computation's own memo, over
and over, finding nothing to free. Measured on Mission Control's cold large incident page (``bench/web.py``, a
10,000-column blast, in one run, load ~3): p99 1,816 ms with the defaults, 792 ms with :data:`THRESHOLDS`; h15b
measured the incidents role's large blast at 2.0–3.0 s of CPU with the collector on, 1.4–1.5 s with it off.

:func:`settle` is called once a process has built what it keeps: everything alive then is moved to the permanent
generation (:func:`gc.freeze`, never scanned again) and the thresholds are raised. The cost is that garbage held in
reference cycles lives longer (up to :data:`THRESHOLDS`'s first number of allocations); Pareis's hot paths make
few cycles, and a full collection still runs, a hundredth as often.

A process whose work comes in batches (``pareis run``) goes further with a :class:`Collector`: no collection runs
*during* a batch, where every one scans the batch's whole working set (its memo, its walks, the scores role's survey:
millions of containers alive until the batch ends) and frees nothing; the young generations are collected *between*
batches, once that working set is garbage freed by reference counting, and the whole heap on a timer (what that saves
the scores role's burst batch: bench/RESULTS.md, issue 35, fourth session).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable

THRESHOLDS = (50_000, 20, 100)
FULL_EVERY_S = 60.0
"""How often a :class:`Collector` collects the whole heap (what reference cycles among long-lived objects hold)."""


def settle() -> None:
    """Collect, freeze what is alive, raise the thresholds (see the module docstring). Idempotent."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


class Collector:
    """The collector of a process whose work comes in batches (see the module docstring): :meth:`start` once the
    process has built what it keeps (:func:`settle`, then automatic collection off); each role's loop calls
    :meth:`between` between batches (after a batch, and after a poll that brought none). :meth:`between` collects the
    young generations once ``young`` containers were allocated since the last collection (the first threshold of
    :data:`THRESHOLDS`: an idle loop collects rarely, a batch's end always), and the whole heap every
    ``full_every_s`` seconds of ``clock``. Garbage in reference cycles lives until the next of them: a batch's at most
    (a batch is bounded), or ``full_every_s`` for a cycle among objects that outlived a batch. Thread-safe: several
    roles' loops share one collector."""

    def __init__(
        self,
        *,
        young: int = THRESHOLDS[0],
        full_every_s: float = FULL_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._young = young
        self._full_every_s = full_every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._next_full = clock() + full_every_s

    def start(self) -> None:
        """:func:`settle`, then no automatic collection (:meth:`between` collects)."""
        settle()
        gc.disable()
        with self._lock:
            self._next_full = self._clock() + self._full_every_s

    def between(self) -> None:
        """Collect what the work since the last call left in reference cycles (see the class docstring)."""
        with self._lock:
            now = self._clock()
            full = now >= self._next_full
            if full:
                self._next_full = now + self._full_every_s
        if full:
            gc.collect()
        elif gc.get_count()[0] >= self._young:
            # Generations 0 and 1 together: what survives goes to the old generation at once, where only the full
            # collections look (a batch's survivors are mostly what the process keeps: its caches).
            gc.collect(1)
