"""The assertions role's behaviour: record every assertion run, forward a signal keyed by its incident key.

Input: ``assertionRunEvent`` change-log entries (reference §7.2: keyed by the *assertion* URN; the dataset is only
in ``asserteeUrn``, and for dbt it is the ``dataPlatform:dbt`` sibling of the warehouse table).

* Every run is recorded in the run history, idempotent by (assertion, timestamp), so a redone batch is harmless.
* Every ``operation`` (a change of a dataset's data) is recorded in the run history too, for the retrain gate's
  freshness check (DESIGN §2.4 check 4); it produces no signal.
* Each SUCCESS or FAILURE run becomes a signal on ``pareis.signals.v1`` keyed by the run's **incident key**;
  ERROR and INIT runs are recorded but not forwarded, since they say nothing about the data (DESIGN §2.3). A run
  already in the history is forwarded again: the role is at-least-once, and a crash between recording and
  producing must not lose the signal. The incidents role ignores a run it has already applied.

**Incident key.** Siblings are the same data (DESIGN §2.1), so one incident must cover a dbt node and its
warehouse table, and one consumer must own it (Kafka partitions by key). The key is one member of the assertee's
sibling class (the transitive closure of ``siblings``, either side declaring): the lexicographically smallest
member *not* on the dbt platform, else the smallest member. A warehouse table is what people and models look at;
a pure-dbt class (an ephemeral model) still gets a stable key. Caveat: the class is read from the lineage index
when the run is processed, so a run processed before its ``siblings`` aspect is indexed is keyed by the assertee
alone (the incidents role still reads the runs of the whole class once the siblings are known).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.core.graph import LineageView
from pareis.core.keys import incident_keys
from pareis.core.runs import OPERATION_ASPECT, AssertionRun, InvalidRun, operation_time, run_from_event
from pareis.datahub.wire.changelog import ChangeLog
from pareis.errors import DecodeError
from pareis.kafka.role import Decoder
from pareis.roles.messages import RunSignal, encode
from pareis.store.runs import RunHistory

ASPECT = "assertionRunEvent"


@dataclass(frozen=True)
class ObservedRun:
    """An assertion run as read from the change log, with the log's time of it (``created.time``, else the Kafka
    timestamp, else the run's own timestamp)."""

    run: AssertionRun
    logged_ms: int


def observed_run(
    change: ChangeLog, kafka_ms: int | None = None, *, open_on_low_severity: bool = False
) -> ObservedRun | None:
    """The run an ``assertionRunEvent`` change carries; None for other aspects and for DELETE (nothing to
    record). DecodeError (Poison, reason ``aspect-shape``) when the event is not a valid run. A FAILURE of severity
    LOW is a warning unless ``open_on_low_severity`` (:func:`pareis.core.runs.run_from_event`)."""
    if change.aspect_name != ASPECT or change.change_type == "DELETE":
        return None
    event = change.aspect_json()
    try:
        run = run_from_event(event, open_on_low_severity=open_on_low_severity)
    except InvalidRun as exc:
        raise DecodeError("aspect-shape", f"{ASPECT} of {change.entity_urn}: {exc}", change.origin) from exc
    created = (change.created or {}).get("time")
    if isinstance(created, int) and not isinstance(created, bool) and created > 0:
        logged = created
    else:
        logged = kafka_ms if kafka_ms is not None and kafka_ms > 0 else run.timestamp_ms
    return ObservedRun(run, logged)


@dataclass(frozen=True)
class ObservedOperation:
    """A change of a dataset's data (an ``operation`` aspect), at :func:`~pareis.core.runs.operation_time`."""

    dataset: str
    time_ms: int


Observed = ObservedRun | ObservedOperation


def observed_operation(change: ChangeLog) -> ObservedOperation | None:
    """The dataset change an ``operation`` aspect records; None for other aspects, DELETE, or no usable time.
    DecodeError (Poison) when the aspect is not an object."""
    if change.aspect_name != OPERATION_ASPECT or change.change_type == "DELETE" or not change.entity_urn:
        return None
    try:
        changed = operation_time(change.aspect_json())
    except InvalidRun as exc:
        raise DecodeError("aspect-shape", f"{OPERATION_ASPECT} of {change.entity_urn}: {exc}", change.origin) from exc
    return None if changed is None else ObservedOperation(change.entity_urn, changed)


def run_decoder(changes: Decoder[ChangeLog], *, open_on_low_severity: bool = False) -> Decoder[Observed]:
    """The role's decoder: ``changes`` (the change-log decoder, filtering on the aspects) then
    :func:`observed_run` (with the setting ``incidents.open_on_low_severity``) or, for an ``operation``,
    :func:`observed_operation`."""

    def decode(raw: RawMessage) -> Observed | None:
        change = changes(raw)
        if change is None:
            return None
        if change.aspect_name == OPERATION_ASPECT:
            return observed_operation(change)
        return observed_run(change, raw.timestamp_ms, open_on_low_severity=open_on_low_severity)

    return decode


class AssertionsHandler:
    """The role's handler over its ports: the run history (written) and the lineage index (read)."""

    def __init__(self, runs: RunHistory, lineage: LineageView, signals_topic: str) -> None:
        self._runs = runs
        self._lineage = lineage
        self._topic = signals_topic

    def __call__(self, batch: Sequence[Message[Observed]]) -> list[OutRecord]:
        observed = [m.value for m in batch]
        operations = [(o.dataset, o.time_ms) for o in observed if isinstance(o, ObservedOperation)]
        if operations:
            # Recorded for the gate's freshness check (DESIGN §2.4 check 4); they say nothing to the incidents.
            self._runs.record_operations(operations)
        seen = [o for o in observed if isinstance(o, ObservedRun)]
        # One round trip for the batch's runs. A run with an identity stored already is forwarded as stored, so
        # signals agree with the history whatever a re-sent event says.
        stored = self._runs.record_many([o.run for o in seen])
        recorded = [o if s is None else ObservedRun(s, o.logged_ms) for o, s in zip(seen, stored, strict=True)]
        counting = [o for o in recorded if o.run.counts]
        keys = incident_keys(self._lineage, {o.run.dataset for o in counting})
        topic = self._topic
        return [
            OutRecord(topic, key.encode("utf-8"), encode(RunSignal(key, o.run, o.logged_ms)))
            for o in counting
            for key in (keys[o.run.dataset],)
        ]
