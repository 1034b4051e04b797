"""The step journal: what the incidents role did per signal — the state before and after, and the records it
produced — by input offset, so that a redone signal does exactly the same again.

Why: the incidents role saves incident state in its store while its Kafka transaction is still open (Redis can't
join the transaction). If the transaction then aborts (a crash, a fenced producer, a rebalance), the signals are
redone from the committed offset, but the store already holds their outcome, and the run history may have grown
since. Starting from the store would emit nothing and lose the aborted outputs; recomputing from the state before
would emit outputs that differ from the aborted ones. So before saving a dataset's new state the role journals the
step, keyed by the signal's (topic, partition, offset); a signal of a dataset with journal entries at offsets ≥ its
own is being redone (a partition is processed in offset order), and the role replays those entries instead of
recomputing them.

Rules, identical in every implementation (``tests/unit/test_roles_journal.py`` runs both):

* :meth:`StepJournal.record` of an entry at offset *o* first drops the dataset's entries at offsets ≥ *o* (they
  belong to an attempt that was aborted, since the role computes afresh only past every entry), then adds it;
* it also drops entries older than ``o - keep``: a transaction never spans more than ``keep`` offsets of one
  partition (commit_every plus a batch, with margin), so nothing older can be redone;
* entries of different partitions never mix (offsets are only comparable within one partition);
* :meth:`StepJournal.release` drops a partition's entries below an offset once the transaction that wrote their
  outputs has committed it (the runtime calls it after every commit): nothing below a committed offset can be
  redone. Entries live until then — never on a timer, which would lose a slow transaction's outputs on its redo.

Implementations: :class:`MemoryStepJournal` (here) and :class:`pareis.store.journal_redis.RedisStepJournal`.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import orjson

from pareis.contracts.records import OutRecord
from pareis.core.lifecycle import IncidentState
from pareis.errors import Fatal

DEFAULT_KEEP = 10_000


@dataclass(frozen=True)
class Position:
    """Where a signal was read: topic, partition, offset."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class JournalEntry:
    """One step that changed the state of ``before.dataset``: the signal's position, the states around it and
    the records the step produced, in order."""

    position: Position
    before: IncidentState
    after: IncidentState
    outputs: tuple[OutRecord, ...] = ()

    def __post_init__(self) -> None:
        if self.before.dataset != self.after.dataset:
            raise ValueError(f"a step of {self.before.dataset} cannot end in a state of {self.after.dataset}")

    @property
    def dataset(self) -> str:
        return self.before.dataset


@runtime_checkable
class StepJournal(Protocol):
    """Steps by input offset. Errors are :class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`."""

    def entries(self, dataset: str, position: Position) -> list[JournalEntry]:
        """The journaled steps of ``dataset`` at or after ``position`` (same partition), oldest first; empty when
        the signal at ``position`` is not being redone."""
        ...

    def entries_of(self, positions: Mapping[str, Position]) -> dict[str, list[JournalEntry]]:
        """:meth:`entries` of each dataset at its position, in one round trip (a batch's first signal of each
        dataset); every dataset of ``positions`` is a key."""
        ...

    def record(self, entries: Sequence[JournalEntry]) -> None:
        """Journal ``entries`` in order (see the module rules); one round trip for the batch."""
        ...

    def release(self, topic: str, partition: int, below: int) -> None:
        """Drop every entry of ``topic[partition]`` (any dataset) at an offset below ``below``: the input
        before ``below`` is committed and will not be redone."""
        ...


def encode_entry(entry: JournalEntry) -> str:
    """An entry as text (JSON, keys sorted; bytes in base64), without its position's topic and partition."""
    return orjson.dumps(
        {
            "after": entry.after.to_json(),
            "before": entry.before.to_json(),
            "o": entry.position.offset,
            "out": [_record_json(r) for r in entry.outputs],
        },
        option=orjson.OPT_SORT_KEYS,
    ).decode("utf-8")


def decode_entry(text: str | bytes, topic: str, partition: int, where: str) -> JournalEntry:
    """Inverse of :func:`encode_entry`; Fatal on anything else (corruption of the store, not bad input)."""
    try:
        obj = orjson.loads(text)
        return JournalEntry(
            Position(topic, partition, int(obj["o"])),
            IncidentState.from_json(obj["before"]),
            IncidentState.from_json(obj["after"]),
            tuple(_record(r) for r in obj["out"]),
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise Fatal(f"corrupt journal entry in {where}: {exc!r}") from exc


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


def _unb64(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value, validate=True)


def _record_json(record: OutRecord) -> dict[str, Any]:
    return {
        "h": [[name, _b64(value)] for name, value in record.headers],
        "k": _b64(record.key),
        "t": record.topic,
        "v": _b64(record.value),
    }


def _record(obj: Mapping[str, Any]) -> OutRecord:
    headers = tuple((str(name), _unb64(value) or b"") for name, value in obj["h"])
    return OutRecord(str(obj["t"]), _unb64(obj["k"]), _unb64(obj["v"]), headers)


class MemoryStepJournal:
    """An in-process journal (tests, ``pareis demo``); thread-safe. Keeps entries encoded, as Redis does."""

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        if keep <= 0:
            raise ValueError("keep must be positive")
        self._keep = keep
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, int, str], list[tuple[int, str]]] = {}

    def entries(self, dataset: str, position: Position) -> list[JournalEntry]:
        key = (position.topic, position.partition, dataset)
        with self._lock:
            found = [text for offset, text in self._entries.get(key, []) if offset >= position.offset]
        return [decode_entry(text, position.topic, position.partition, "memory") for text in found]

    def entries_of(self, positions: Mapping[str, Position]) -> dict[str, list[JournalEntry]]:
        return {dataset: self.entries(dataset, position) for dataset, position in positions.items()}

    def record(self, entries: Sequence[JournalEntry]) -> None:
        with self._lock:
            for entry in entries:
                p = entry.position
                key = (p.topic, p.partition, entry.dataset)
                kept = [e for e in self._entries.get(key, []) if p.offset - self._keep <= e[0] < p.offset]
                kept.append((p.offset, encode_entry(entry)))
                self._entries[key] = kept

    def release(self, topic: str, partition: int, below: int) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[:2] == (topic, partition)]:
                kept = [e for e in self._entries[key] if e[0] >= below]
                if kept:
                    self._entries[key] = kept
                else:
                    del self._entries[key]

    def __len__(self) -> int:
        """The number of entries held (for tests)."""
        with self._lock:
            return sum(len(v) for v in self._entries.values())
