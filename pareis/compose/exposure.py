"""The exposure maintainer (:mod:`pareis.roles.exposure`) in a process of its own, beside a lineage role on Redis.

A recomputation of the exposure index is a pass over the lineage upstream of every feature and model: at full scale
tens of seconds of pure Python. On a thread of the role's process it held the interpreter lock for most of that time,
so the lineage role and any role sharing the process (``pareis run all``) stalled behind it: while model versions
were registered during an incident, a new version's at-risk tag took 6–15 s instead of half a second
(``bench/live_reevaluation.py``). In a child process the recomputation only competes for a core.

Contract, the same as :class:`~pareis.roles.exposure.MaintainerThread`'s (which runs in the child):

* :meth:`MaintainerProcess.start` spawns the child (``spawn``: nothing of the parent's threads or connections is
  inherited); it builds its own Redis client and stores from the role's settings, and steps the maintainer every
  ``tick_s``. A Retriable step (Redis down) is logged and tried again; anything else ends the child with its reason.
* :meth:`MaintainerProcess.check` (the lineage handler, before each batch) raises Fatal once the child has ended
  without being asked to — its reason, or its exit code when it died without one (killed, out of memory) — so the
  role stops and its orchestrator restarts it, rather than serving an index that silently stopped.
* :meth:`MaintainerProcess.stop` asks the child to stop and waits ``grace_s``, then terminates it: a recomputation
  cut short publishes nothing (a version is published whole or not at all), so the next one starts over.
* The child runs at a lower CPU priority than the roles (:data:`NICENESS`).
* A child whose parent is gone (SIGKILL) exits within a second of noticing, at the latest after the recomputation
  it is in.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from multiprocessing.queues import SimpleQueue
from multiprocessing.synchronize import Event

from pareis.compose.heap import settle
from pareis.compose.ports import redis_client
from pareis.config import Settings
from pareis.errors import Fatal
from pareis.roles.exposure import ExposureMaintainer, MaintainerThread
from pareis.store.exposure_redis import RedisExposureIndex
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.runs_redis import RedisRunHistory
from pareis.telemetry.logging import configure_logging

log = logging.getLogger(__name__)
NAME = "exposure-maintainer"
NICENESS = 10
"""Added to the child's nice value: a recomputation is background work, and where the roles and the child share
too few cores (a pod's CPU limit) the roles' batches, whose latency is the product, get the CPU first."""


@dataclass
class MaintainerProcess:
    """See the module docstring."""

    settings: Settings
    tick_s: float = 1.0
    grace_s: float = 5.0
    _process: BaseProcess | None = None
    _stop: Event | None = None
    _reasons: SimpleQueue[str] | None = None
    _reason: str | None = field(default=None, repr=False)

    def start(self) -> None:
        if self._process is not None:
            return
        ctx = multiprocessing.get_context("spawn")
        self._stop = ctx.Event()
        self._reasons = ctx.SimpleQueue()
        self._process = ctx.Process(
            target=_child,
            args=(self.settings, self._stop, self._reasons, os.getpid(), self.tick_s),
            name=NAME,
            daemon=True,  # terminated by multiprocessing when this process exits normally
        )
        self._process.start()
        log.info("exposure index: maintainer started in process %s", self._process.pid)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def stop(self) -> None:
        if self._process is None or self._stop is None:
            return
        self._stop.set()
        self._process.join(self.grace_s)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(self.grace_s)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()

    def check(self) -> None:
        """Raise Fatal when the child ended without being asked to (see the module docstring)."""
        process = self._process
        if process is None or (self._stop is not None and self._stop.is_set()):
            return
        if self._reason is None:
            reasons = self._reasons
            if reasons is not None and not reasons.empty():
                self._reason = reasons.get()  # the child's own account: it is ending, whatever waitpid says yet
            elif self._ended(process):
                self._reason = f"exited with code {process.exitcode}"
        if self._reason is not None:
            raise Fatal(f"exposure index maintainer stopped: {self._reason}")

    @staticmethod
    def _ended(process: BaseProcess) -> bool:
        """Whether the child is gone. ``is_alive`` asks ``waitpid``, which cannot tell once something else in
        this process reaped the child (a ``waitpid(-1)`` elsewhere; multiprocessing then reports it alive): the
        pid is then gone too."""
        if not process.is_alive():
            return True
        assert process.pid is not None
        try:
            os.kill(process.pid, 0)
        except ProcessLookupError:
            return True
        return False


def _child(settings: Settings, stop: Event, reasons: SimpleQueue[str], parent: int, tick_s: float) -> None:
    """The child's body: the stores on a client of its own, the maintainer's loop, its reason when it fails."""
    configure_logging(settings.log_level, settings.log_json)
    os.nice(NICENESS)
    threading.Thread(target=_orphaned, args=(parent,), name="parent-watch", daemon=True).start()
    client = redis_client(settings.redis_url)
    try:
        maintainer = ExposureMaintainer(RedisLineageStore(client), RedisExposureIndex(client), RedisRunHistory(client))
        settle()
        loop = MaintainerThread(maintainer, tick_s=tick_s)
        loop.run_until(stop)
    finally:
        client.close()
    if loop.failed is not None:
        reasons.put(f"{type(loop.failed).__name__}: {loop.failed}")
        raise SystemExit(1)


def _orphaned(parent: int) -> None:
    """Exit when the parent is gone (its children are reparented: ``getppid`` changes)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)  # no clean-up to wait for: the index only ever sees whole versions
