"""Live updates: one follower per server polls the incident store's change token
(:func:`pareis.answers.changes.incidents_revision`, every ``interval_s``, 250 ms by default). On a change it first
runs ``on_change`` (the app recomputes its incident list there, so pages keep answering from the previous one while
the new one is computed), then numbers the change (``seq``, from 0 at start) and wakes every ``/events`` stream,
which sends an ``incidents`` event carrying the number; the Incidents page re-fetches its table (htmx
``hx-trigger="sse:incidents"``) and gets the new list. ``on_tick`` runs after every poll (the app refreshes an answer
that got too old there).

Why poll the store rather than consume the MetadataChangeProposal topic: the store is what the pages read, it is
written by the incidents role in the same step as its Kafka transaction, a poll is two Redis commands, and the web
process needs no Kafka client, consumer group or offsets. 250 ms keeps "written → on screen" well under 1 s.
A stream that connects with ``?since=N`` (the number its page was rendered at) gets an event at once when changes
happened in between, so none is lost between rendering and connecting; after a server restart the numbers start
again, and a differing number just costs one re-fetch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from pareis.answers.sources import SourceUnavailable

UNAVAILABLE = "unavailable"


class Follower:
    """Polls ``revision`` (a blocking callable, run in a worker thread) and publishes changes to subscribers."""

    def __init__(
        self,
        revision: Callable[[], str],
        *,
        interval_s: float = 0.25,
        on_change: Callable[[], Awaitable[None]] | None = None,
        on_tick: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._revision = revision
        self.interval_s = interval_s
        self._on_change = on_change
        self._on_tick = on_tick
        self.seq = 0
        self._token = ""
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def close(self) -> None:
        """End every stream within half a second (thread-safe): a server stopping must not wait for its clients."""
        self._closed = True

    async def start(self) -> None:
        self._token = await self._read()
        self._task = asyncio.create_task(self._loop(), name="pareis-web-follower")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _read(self) -> str:
        try:
            return await asyncio.to_thread(self._revision)
        except SourceUnavailable:
            return UNAVAILABLE

    async def poll(self) -> None:
        """Read the token once; on a change, number it and wake every waiting stream."""
        token = await self._read()
        if token != self._token:
            self._token = token
            if self._on_change is not None:
                await self._on_change()
            self.seq += 1
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.poll()
            if self._on_tick is not None:
                await self._on_tick()

    async def changes(self, since: str | None) -> AsyncIterator[str]:
        """Change numbers as they happen, starting with the current one when it differs from ``since``."""
        last = since
        while not self._closed:
            changed = self._changed  # taken before the check: a change after it sets this very event
            if str(self.seq) != last:
                last = str(self.seq)
                yield last
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), timeout=0.5)
