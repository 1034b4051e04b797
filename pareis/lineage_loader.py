"""Loading DataHub file-format metadata into a lineage index, offline, exactly as the lineage role would.

Each proposal goes through :class:`~pareis.datahub.gms.emulator.ChangeLogEmulator` (PATCHes applied to the last value,
versions counted, no-op writes dropped, ``created`` stamped with the change's time, the siblings GMS's sibling hook
would write added) and the resulting change-log
entry through :func:`pareis.roles.lineage.foreign_update_of` — the lineage role's own translation — into
:meth:`LineageStore.apply`. So an index loaded from a file equals the one the role builds from the same file
replayed onto Kafka (``pareis replay``). Assertion runs (timeseries ``assertionRunEvent``) come back as
:class:`~pareis.core.runs.AssertionRun` values for the incident core, and dataset changes (timeseries ``operation``)
as (dataset, time) pairs for the gate's freshness check.

Errors: an unreadable file, a patch or aspect GMS would refuse, an aspect the translation rejects or an invalid run
event raise
:class:`~pareis.datahub.files.metadata_file.MetadataFileError` (Poison) naming the file and element; store errors
propagate as the store raises them (Redis: Retriable / Fatal).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from pareis.config import DatahubSettings
from pareis.core.runs import OPERATION_ASPECT, AssertionRun, InvalidRun, operation_time, run_from_event
from pareis.datahub.files.metadata_file import MetadataFileError, Proposal, read_proposals
from pareis.datahub.gms.emulator import ChangeLogEmulator, LoggedChange
from pareis.datahub.gms.patch import PatchError
from pareis.datahub.wire.aspects import is_timeseries
from pareis.datahub.wire.changelog import ChangeLog
from pareis.errors import DecodeError
from pareis.replay import proposal_clock
from pareis.roles.lineage import changes_exposure, foreign_update_of
from pareis.store.lineage import LineageStore, LineageUpdate, Outcome

RUN_ASPECT = "assertionRunEvent"
PROFILE_ASPECT = "datasetProfile"
"""The one timeseries aspect the index keeps (its latest value, as dataset attributes: DESIGN §2.5's test
suggestions and the evidence pack's row counts). The live lineage role reads the versioned log only, so there a
profile is known after a ``pareis bootstrap``."""
DEFAULT_BATCH = 1000


@dataclass
class Loaded:
    """What a load did: proposals read, change-log entries they made, store outcomes, and the assertion runs."""

    proposals: int = 0
    changes: int = 0
    outcomes: Counter[Outcome] = field(default_factory=Counter)
    runs: list[AssertionRun] = field(default_factory=list)
    operations: list[tuple[str, int]] = field(default_factory=list)
    """(dataset, change time) of every ``operation`` aspect (:func:`pareis.core.runs.operation_time`)."""
    exposure_changed: bool = False
    """Whether the load changed what the exposure index follows (:func:`pareis.roles.lineage.changes_exposure`):
    then its generation must advance once the load is done."""

    @property
    def updates(self) -> int:
        return sum(self.outcomes.values())


def to_changelog(change: LoggedChange) -> ChangeLog:
    """The decoded form of an emulated change-log record (what the role's decoder would hand its handler)."""
    record = change.record
    aspect = record.get("aspect")
    previous = record.get("previousAspectValue")
    return ChangeLog(
        entity_type=record["entityType"],
        entity_urn=record.get("entityUrn"),
        change_type=record["changeType"],
        aspect_name=record.get("aspectName"),
        aspect=None if aspect is None else aspect["value"],
        previous_aspect=None if previous is None else previous["value"],
        system_metadata=record.get("systemMetadata"),
        created=record.get("created"),
        headers=None,
        schema_id=0,
        content_type=None if aspect is None else aspect.get("contentType"),
    )


def load(
    store: LineageStore,
    proposals: Iterable[Proposal],
    *,
    default_ms: int = 0,
    datahub: DatahubSettings | None = None,
    batch: int = DEFAULT_BATCH,
    hooks: bool = True,
    open_on_low_severity: bool = False,
) -> Loaded:
    """Apply ``proposals`` to ``store`` in order, ``batch`` updates per :meth:`LineageStore.apply` call.

    A change's time is its ``systemMetadata.lastObserved``, else ``default_ms``. ``datahub`` names Pareis's own
    marks (default settings): its own writes are skipped, as the role skips them. ``hooks``: whether GMS's
    sibling hook runs (:meth:`~pareis.datahub.gms.emulator.ChangeLogEmulator.log`); off only to read files that already
    hold what GMS wrote. ``open_on_low_severity``: the setting ``incidents.open_on_low_severity``, for the runs
    (:func:`~pareis.core.runs.run_from_event`).
    """
    own = datahub or DatahubSettings()
    emulator = ChangeLogEmulator(is_timeseries, hooks=hooks)
    clock = proposal_clock(default_ms)
    loaded = Loaded()

    def updates() -> Iterator[LineageUpdate | None]:
        for proposal in proposals:
            loaded.proposals += 1
            try:
                logged_changes = emulator.log(proposal, clock(proposal))
            except (PatchError, DecodeError) as exc:  # what GMS would refuse: a bad patch, a malformed aspect
                raise MetadataFileError(f"{proposal.source}: {exc}") from exc
            for logged in logged_changes:
                loaded.changes += 1
                change = to_changelog(logged)
                try:
                    if logged.log == "timeseries" and change.aspect_name != PROFILE_ASPECT:
                        if change.aspect_name == RUN_ASPECT and change.aspect is not None:
                            event = orjson.loads(change.aspect)
                            loaded.runs.append(run_from_event(event, open_on_low_severity=open_on_low_severity))
                        elif change.aspect_name == OPERATION_ASPECT and change.aspect and change.entity_urn:
                            changed = operation_time(orjson.loads(change.aspect))
                            if changed is not None:
                                loaded.operations.append((change.entity_urn, changed))
                        continue
                    update = foreign_update_of(change, own)
                except (DecodeError, InvalidRun, orjson.JSONDecodeError) as exc:
                    raise MetadataFileError(f"{proposal.source}: {exc}") from exc
                yield update

    _apply_in_batches(store, updates(), batch, loaded)
    return loaded


def load_changes(
    store: LineageStore,
    changes: Iterable[ChangeLog],
    *,
    datahub: DatahubSettings | None = None,
    batch: int = DEFAULT_BATCH,
) -> Loaded:
    """Apply decoded versioned change-log entries (the lineage role's input, e.g. a
    :class:`~pareis.datahub.gms.snapshot.GmsSnapshot`) to ``store``, ``batch`` updates per call.

    Pareis's own writes are skipped, as the role skips them. A value the translation rejects raises
    :class:`~pareis.errors.DecodeError` (Poison) naming the entity and aspect.
    """
    own = datahub or DatahubSettings()
    loaded = Loaded()

    def updates() -> Iterator[LineageUpdate | None]:
        for change in changes:
            loaded.changes += 1
            yield foreign_update_of(change, own)

    _apply_in_batches(store, updates(), batch, loaded)
    return loaded


def _apply_in_batches(store: LineageStore, updates: Iterable[LineageUpdate | None], batch: int, loaded: Loaded) -> None:
    """Apply the updates that are not None to ``store`` in order, ``batch`` per call, counting into ``loaded``.

    Each full batch is applied before the next update is drawn, so a lazy ``updates`` interleaves with the store.
    """
    pending: list[LineageUpdate] = []

    def apply() -> None:
        outcomes = store.apply(pending)
        loaded.outcomes.update(outcomes)
        loaded.exposure_changed = loaded.exposure_changed or changes_exposure(pending, outcomes)

    for update in updates:
        if update is not None:
            pending.append(update)
        if len(pending) >= batch:
            apply()
            pending = []
    if pending:
        apply()


def load_files(
    store: LineageStore,
    paths: Iterable[str | Path],
    *,
    default_ms: int = 0,
    datahub: DatahubSettings | None = None,
    batch: int = DEFAULT_BATCH,
    hooks: bool = True,
    open_on_low_severity: bool = False,
) -> Loaded:
    """:func:`load` of every proposal of every file (:func:`~pareis.datahub.files.metadata_file.read_proposals`)."""
    return load(
        store,
        read_proposals(paths),
        default_ms=default_ms,
        datahub=datahub,
        batch=batch,
        hooks=hooks,
        open_on_low_severity=open_on_low_severity,
    )


def check(proposals: Iterable[Proposal]) -> None:
    """Read ``proposals`` as the lineage and assertions roles will (PATCHes applied, every lineage aspect
    translated, every run event parsed), into a scratch index, keeping nothing. Raises
    :class:`~pareis.datahub.files.metadata_file.MetadataFileError` naming the element the live path would
    dead-letter."""
    from pareis.store.lineage_memory import MemoryLineageStore

    load(MemoryLineageStore(), proposals)
