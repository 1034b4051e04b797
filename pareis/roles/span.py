"""Where a batch of signals lies in its input, for the ledgers of what the scores role published
(:mod:`pareis.store.scores`, :mod:`pareis.store.gates`): one rule for when a publication must be made again.

A ledger entry is recorded with a position: the partition of the signals that caused it and the batch's last
offset on that partition. Signals are keyed by dataset, so a dataset's signals share one partition. The scores role
is at-least-once: a batch's records are delivered, then its offsets committed; after a crash or an undelivered
record the input is redone from the committed offsets, which lie at or before the first offset of any batch not
committed. So an entry recorded on a partition at or after the first offset of the batch now being handled comes
from an attempt whose records may never have been delivered: it is published again. The signal that caused it is
among those redone, so the batch that handles it again meets the entry (unless a later publication replaced it).
In steady state each batch starts past every entry recorded before it: nothing unchanged is published twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pareis.contracts.records import Message
from pareis.roles.messages import RunSignal


@dataclass(frozen=True)
class BatchSpan:
    """Per partition, a batch's first and last offsets; per dataset, the partition of its last signal."""

    first: Mapping[int, int]
    last: Mapping[int, int]
    partition_of: Mapping[str, int]

    @classmethod
    def of(cls, batch: Sequence[Message[RunSignal]]) -> BatchSpan:
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        partition_of: dict[str, int] = {}
        for m in batch:
            first[m.partition] = min(first.get(m.partition, m.offset), m.offset)
            last[m.partition] = max(last.get(m.partition, m.offset), m.offset)
            partition_of[m.value.dataset] = m.partition
        return cls(first, last, partition_of)

    def position(self, cause: str) -> tuple[int, int]:
        """Where to record an entry that ``cause``'s signals (a dataset of the batch) caused: their partition and
        the batch's last offset on it."""
        partition = self.partition_of[cause]
        return partition, self.last[partition]

    def redoes(self, partition: int, offset: int) -> bool:
        """Whether an entry recorded at ``partition``, ``offset`` may be an undelivered publication of an earlier
        attempt at this batch's input (see the module docstring)."""
        first = self.first.get(partition)
        return first is not None and offset >= first
