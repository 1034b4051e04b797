"""The step journal: incident states as they were before each signal the incidents role applied, by input offset.

Why: the incidents role writes incident state to its store while its Kafka transaction is still open (Redis can't
join the transaction). If the transaction then aborts (a crash, a fenced producer, a rebalance), the signals are
redone from the committed offset, but the store already holds their outcome: starting from it would emit nothing
and lose the aborted outputs. So before saving a dataset's new state the role journals the state it started
from, keyed by the signal's (topic, partition, offset). A signal at offset *o* whose dataset has journal entries
at offsets ≥ *o* is being redone (a partition is processed in offset order), and the right starting point is the
state before the earliest of them: :meth:`StepJournal.before`.

Rules, identical in every implementation (``tests/unit/test_roles_incidents.py`` runs both):

* :meth:`StepJournal.record` of an entry at offset *o* first drops the dataset's entries at offsets ≥ *o* (they
  belong to an attempt that was aborted, since the role has come back to *o*), then adds it;
* it also drops entries older than ``o - keep``: a transaction never spans more than ``keep`` offsets of one
  partition (commit_every plus a batch, with margin), so nothing older can be redone;
* entries of different partitions never mix (offsets are only comparable within one partition).

Implementations: :class:`MemoryStepJournal` (here) and :class:`pareis.store.journal_redis.RedisStepJournal`.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pareis.core.lifecycle import IncidentState
from pareis.store.incidents import decode, encode

DEFAULT_KEEP = 10_000


@dataclass(frozen=True)
class Position:
    """Where a signal was read: topic, partition, offset."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class JournalEntry:
    """``before``: the state of ``before.dataset`` before the signal at ``position`` was applied."""

    position: Position
    before: IncidentState


@runtime_checkable
class StepJournal(Protocol):
    """States before applied signals. Errors are :class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`."""

    def before(self, dataset: str, position: Position) -> IncidentState | None:
        """The state before the earliest journaled step of ``dataset`` at or after ``position`` (same partition);
        None when there is none, i.e. the signal at ``position`` is not a redo."""
        ...

    def record(self, entries: Sequence[JournalEntry]) -> None:
        """Journal ``entries`` in order (see the module rules); one round trip for the batch."""
        ...


class MemoryStepJournal:
    """An in-process journal (tests, ``pareis demo``); thread-safe. Keeps the encoded state as Redis does."""

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        if keep <= 0:
            raise ValueError("keep must be positive")
        self._keep = keep
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, int, str], list[tuple[int, str]]] = {}

    def before(self, dataset: str, position: Position) -> IncidentState | None:
        with self._lock:
            entries = self._entries.get((position.topic, position.partition, dataset), [])
            at = bisect_left(entries, position.offset, key=lambda e: e[0])
            text = entries[at][1] if at < len(entries) else None
        return None if text is None else decode(dataset, text)

    def record(self, entries: Sequence[JournalEntry]) -> None:
        with self._lock:
            for entry in entries:
                p = entry.position
                key = (p.topic, p.partition, entry.before.dataset)
                kept = [e for e in self._entries.get(key, []) if p.offset - self._keep <= e[0] < p.offset]
                kept.append((p.offset, encode(entry.before)))
                self._entries[key] = kept

    def size(self, dataset: str, topic: str, partition: int) -> int:
        """How many entries ``dataset`` has on that partition (for tests)."""
        with self._lock:
            return len(self._entries.get((topic, partition, dataset), []))
