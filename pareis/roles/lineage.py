"""The lineage role's handler: a batch of versioned change-log entries → lineage index updates (DESIGN §1, §2.1).

For each entry :func:`update_of` calls :func:`pareis.datahub.translate.lineage.lineage_update` (the one translation of
aspects
into :class:`~pareis.store.lineage.LineageUpdate`, shared with the offline loader
:mod:`pareis.lineage_loader`), then the whole batch goes to :meth:`LineageStore.apply` in one call — or, on a store
that streams (:class:`StreamingStore`), to one stream, chunk by chunk as it is translated (see "Poison before
outcomes").

Contract (the role runs at-least-once, :mod:`pareis.kafka.role`):

* **Idempotent.** The store applies an update per (entity, aspect) by replacement, and ignores one older than
  what it holds, so a redone batch, a redelivery or an overlapping replay changes nothing.
* **Own writes ignored.** An entry :func:`pareis.datahub.writes.marks.is_own_write` recognises (pipeline name, writer
  property, or Pareis's actor) contributes nothing, even if it carries a lineage aspect.
* **Poison before outcomes.** A malformed aspect raises :class:`~pareis.errors.DecodeError` (Poison) located at its
  message, so the runtime isolates and dead-letters it and redoes the rest one message at a time. On a store that
  streams (:class:`StreamingStore`, the Redis store) the batch is translated chunk by chunk (:data:`CHUNK`
  messages) and each chunk is sent as soon as it is translated, so the server applies it while the next one is
  translated; the updates before a malformed one are then already written when it raises. Their redo finds
  them ``REPEATED``, whose effects are due as an applied update's are (:attr:`~pareis.store.lineage.Outcome.
  effective`), so the watch and the exposure index see what they would have seen from an all-or-nothing batch.
  On any other store the whole batch is translated before anything is written. Either way the batch is applied
  (or the error raised) before the handler returns, so the runtime commits nothing unapplied.
* **Partly malformed lineage.** A malformed ``fineGrainedLineages`` entry does not drop the aspect: the valid
  entries are indexed, the entity is marked :data:`~pareis.core.graph.Attr.LINEAGE_INCOMPLETE` (incidents whose
  blast radius touches it say "lineage incomplete"), and with ``dlq_topic`` the bad entries are dead-lettered
  (reason ``lineage-incomplete``; the value is ``{"entityUrn", "aspectName", "errors", "entries"}`` JSON, the
  headers locate the original message).
* **Effects again on a redo.** The effects below follow every update the store applied *or found repeated*
  (``Outcome.effective``): an attempt that applied a batch and stopped before its signals and offsets were
  committed (a crash, a lost group membership) left the index changed and its effects undelivered, and its redo
  is told so by the store (the same stamp), not by memory of this process. A redelivery thus repeats its
  signals (harmless: a re-evaluation that finds nothing new changes nothing) and advances the generation.
* **Live re-evaluation.** With ``watch`` (:class:`~pareis.roles.lineage_watch.LineageWatch`), the updates the
  store applied that touch an active incident become lineage signals on ``pareis.signals.v1``, keyed by the
  incident's dataset (DESIGN §3), produced after the index holds the change. On a store that streams, what each
  update touches is folded while the server applies the last chunks (the signals still follow the watch index as
  read after the apply: :mod:`pareis.roles.lineage_watch`).
* **Exposure index.** With ``exposure``, a batch that applied an exposure-bearing aspect
  (:data:`~pareis.core.exposure_index.EXPOSURE_ASPECTS`) advances its lineage generation once, after the index holds
  the change (:mod:`pareis.roles.exposure` recomputes from it).
* **Dependencies.** Store errors propagate as the store raises them (Redis: :class:`~pareis.errors.Retriable`
  when unreachable, :class:`~pareis.errors.Fatal` otherwise). The handler produces only dead letters and the
  watch's signals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson

from pareis.config import DatahubSettings
from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.core.exposure_index import EXPOSURE_ASPECTS
from pareis.core.graph import Attr
from pareis.datahub.translate.lineage import lineage_update, stamp_of
from pareis.datahub.wire.changelog import ChangeLog
from pareis.datahub.writes.marks import is_own_write
from pareis.errors import DecodeError
from pareis.kafka.dlq import dead_letter
from pareis.roles.lineage_watch import LineageWatch
from pareis.store.exposure import ExposureIndex
from pareis.store.lineage import LineageStore, LineageUpdate, Outcome

CHUNK = 50
"""Messages translated per send on a :class:`StreamingStore`."""


class UpdateStream(Protocol):
    """Updates sent as they come, their outcomes read at the end (in the order sent)."""

    def send(self, updates: Sequence[LineageUpdate]) -> None: ...

    def finish(self) -> list[Outcome]: ...


@runtime_checkable
class StreamingStore(Protocol):
    """A lineage store that can apply a batch while it is still being prepared."""

    def stream(self) -> UpdateStream: ...


def update_of(change: ChangeLog) -> LineageUpdate | None:
    """The lineage update one change-log entry makes; None when it contributes nothing to the index.

    Raises :class:`~pareis.errors.DecodeError` (Poison) for an entry without an entity URN, aspect JSON that does
    not parse, or an aspect value :func:`~pareis.datahub.translate.lineage.lineage_update` rejects; the error names the
    entry's origin when it has one.
    """
    if change.aspect_name is None:
        return None
    try:
        if change.entity_urn is None:
            raise DecodeError("aspect-shape", f"{change.aspect_name} change without an entityUrn")
        aspect = None if change.change_type == "DELETE" else change.aspect_json()
        stamp = stamp_of(change.system_metadata, change.created)
        return lineage_update(change.entity_urn, change.aspect_name, change.change_type, aspect, stamp)
    except DecodeError as exc:
        if exc.origin is None and change.origin is not None:
            raise exc.at(change.origin) from exc
        raise


def changes_exposure(updates: Sequence[LineageUpdate], outcomes: Sequence[Outcome]) -> bool:
    """Whether applying ``updates`` (with the store's ``outcomes``) is a lineage change the exposure index must
    follow: an exposure-bearing aspect (:data:`~pareis.core.exposure_index.EXPOSURE_ASPECTS`) applied or repeated
    (:attr:`~pareis.store.lineage.Outcome.effective`). Whoever writes the index advances the generation on it."""
    return any(o.effective and u.aspect in EXPOSURE_ASPECTS for u, o in zip(updates, outcomes, strict=True))


def foreign_update_of(change: ChangeLog, datahub: DatahubSettings) -> LineageUpdate | None:
    """:func:`update_of`, except None for Pareis's own writes (:func:`~pareis.datahub.writes.marks.is_own_write`)."""
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
    dlq_topic: str | None = None
    watch: LineageWatch | None = None
    exposure: ExposureIndex | None = None
    outcomes: dict[Outcome, int] = field(default_factory=dict)
    maintainer_check: Callable[[], None] | None = None
    """Raises Fatal when the exposure index's maintainer (in this process) stopped; asked before each batch."""

    def __call__(self, batch: Sequence[Message[ChangeLog]]) -> Iterable[OutRecord]:
        if self.maintainer_check is not None:
            self.maintainer_check()
        updates: list[LineageUpdate] = []
        letters: list[OutRecord] = []
        check = None
        if isinstance(self.store, StreamingStore):
            check = None if self.watch is None else self.watch.check()
            stream = self.store.stream()
            for start in range(0, len(batch), CHUNK):
                chunk = len(updates)
                try:
                    self._translate(batch[start : start + CHUNK], updates, letters)
                except BaseException:
                    stream.finish()  # the chunks before it are written (their redo finds them REPEATED)
                    raise
                stream.send(updates[chunk:])
            if check is not None:  # folded while the server applies the last chunks, which finish() waits for
                check.see(updates)
            outcomes = stream.finish()
        else:
            self._translate(batch, updates, letters)
            outcomes = self.store.apply(updates)
        for outcome in outcomes:
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if self.exposure is not None and changes_exposure(updates, outcomes):
            self.exposure.touch()
        if check is not None:
            letters.extend(check.signals(outcomes))
        elif self.watch is not None:
            letters.extend(self.watch.signals(updates, outcomes))
        return letters

    def _translate(
        self, messages: Sequence[Message[ChangeLog]], updates: list[LineageUpdate], letters: list[OutRecord]
    ) -> None:
        for message in messages:
            update = foreign_update_of(message.value, self.datahub)
            if update is not None:
                updates.append(update)
                if self.dlq_topic and update.facts and Attr.LINEAGE_INCOMPLETE in update.facts.attrs:
                    letters.append(self._bad_part(message, update.facts.attrs[Attr.LINEAGE_INCOMPLETE]))

    def _bad_part(self, message: Message[ChangeLog], incomplete: str) -> OutRecord:
        assert self.dlq_topic is not None
        change = message.value
        errors = orjson.loads(incomplete)
        aspect = change.aspect_json()
        entries = [_entry(aspect, where) for where, _ in errors]
        value = {"entityUrn": change.entity_urn, "aspectName": change.aspect_name, "errors": errors, "entries": entries}
        raw = RawMessage(
            message.topic, message.partition, message.offset, message.key, orjson.dumps(value), message.headers
        )
        detail = "; ".join(f"{where}: {why}" for where, why in errors)
        error = DecodeError("lineage-incomplete", f"{change.aspect_name} of {change.entity_urn}: {detail}")
        return dead_letter(self.dlq_topic, raw, "lineage", error.at(message.origin))


def _entry(aspect: Any, where: str) -> Any:
    """The entry at ``where`` (``<field>[<index>]``) of ``aspect``, or None."""
    name, _, index = where.partition("[")
    try:
        return aspect[name][int(index.rstrip("]"))]
    except (KeyError, IndexError, TypeError, ValueError):
        return None
