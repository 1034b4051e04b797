"""The lineage role's handler: a batch of versioned change-log entries → lineage index updates (DESIGN §1, §2.1).

For each entry :func:`update_of` calls :func:`pareis.datahub.translate.translate` (the one translation of aspects
into :class:`~pareis.store.lineage.LineageUpdate`, shared with the offline loader
:mod:`pareis.lineage_loader`), then the whole batch goes to :meth:`LineageStore.apply` in one call.

Contract (the role runs at-least-once, :mod:`pareis.kafka.role`):

* **Idempotent.** The store applies an update per (entity, aspect) by replacement, and ignores one older than
  what it holds, so a redone batch, a redelivery or an overlapping replay changes nothing.
* **Own writes ignored.** An entry :func:`pareis.datahub.marks.is_own_write` recognises (pipeline name, writer
  property, or Pareis's actor) contributes nothing, even if it carries a lineage aspect.
* **Poison before writes.** The whole batch is translated before anything is written; a malformed aspect raises
  :class:`~pareis.errors.DecodeError` (Poison) located at its message, so the runtime isolates and dead-letters
  it and redoes the rest.
* **Dependencies.** Store errors propagate as the store raises them (Redis: :class:`~pareis.errors.Retriable`
  when unreachable, :class:`~pareis.errors.Fatal` otherwise). The handler produces no records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pareis.config import DatahubSettings
from pareis.datahub.changelog import ChangeLog
from pareis.datahub.marks import is_own_write
from pareis.datahub.translate import stamp_of, translate
from pareis.errors import DecodeError
from pareis.model.records import Message, OutRecord
from pareis.store.lineage import LineageStore, LineageUpdate, Outcome


def update_of(change: ChangeLog) -> LineageUpdate | None:
    """The lineage update one change-log entry makes; None when it contributes nothing to the index.

    Raises :class:`~pareis.errors.DecodeError` (Poison) for an entry without an entity URN, aspect JSON that does
    not parse, or an aspect value :func:`~pareis.datahub.translate.translate` rejects; the error names the
    entry's origin when it has one.
    """
    if change.aspect_name is None:
        return None
    try:
        if change.entity_urn is None:
            raise DecodeError("aspect-shape", f"{change.aspect_name} change without an entityUrn")
        aspect = None if change.change_type == "DELETE" else change.aspect_json()
        stamp = stamp_of(change.system_metadata, change.created)
        return translate(change.entity_urn, change.aspect_name, change.change_type, aspect, stamp)
    except DecodeError as exc:
        if exc.origin is None and change.origin is not None:
            raise exc.at(change.origin) from exc
        raise


def foreign_update_of(change: ChangeLog, datahub: DatahubSettings) -> LineageUpdate | None:
    """:func:`update_of`, except None for Pareis's own writes (:func:`~pareis.datahub.marks.is_own_write`)."""
    if is_own_write(change.system_metadata, change.created, datahub):
        return None
    return update_of(change)


@dataclass
class LineageHandler:
    """The role's handler over ``store``; ``datahub`` names Pareis's own marks (actor, pipeline name).

    ``outcomes`` counts what the store did with the updates, for logs and tests.
    """

    store: LineageStore
    datahub: DatahubSettings
    outcomes: dict[Outcome, int] = field(default_factory=dict)

    def __call__(self, batch: Sequence[Message[ChangeLog]]) -> Iterable[OutRecord]:
        updates: list[LineageUpdate] = []
        for message in batch:
            update = foreign_update_of(message.value, self.datahub)
            if update is not None:
                updates.append(update)
        for outcome in self.store.apply(updates):
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        return ()
