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
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 100)


def settle() -> None:
    """Collect, freeze what is alive, raise the thresholds (see the module docstring). Idempotent."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
