"""The incident state machine of one dataset (DESIGN §3), as a pure function.

``step(state, signal, inputs, now_ms) → (state', intents)``. States: CLEAR → ACTIVE → RESOLVED; a new failure
after RESOLVED opens a new incident. Each step recomputes the dataset's incidents from the runs it is given
(:mod:`pareis.core.window`) and compares them with what the state says was published:

* ACTIVE: the tracked incident is the window containing the run that opened it (``key_ms``; later runs can move
  its start earlier but never drop that run). Still failing → :class:`Update` if any published fact changed;
  healed → :class:`Resolve`, then every later incident is opened (and resolved at once if already healed).
* CLEAR / RESOLVED: every incident newer than the last resolved one is opened (and resolved if healed).

On the first signal of a dataset whose history already holds incidents, each is opened (and resolved) in
turn: a backfill. So the state is only a record of what was told to the world: a duplicate signal, or a
replay of the same signals over the same history, emits nothing new, and a stale state catches up on its
next signal. Identity:
the incident URN is a guid of (dataset, ``first_failure_ms`` when opened); effect ids are (URN, kind,
revision), the revision counting the intents of that incident. ``now_ms`` only stamps ``at_ms`` and the
opened/resolved times; pass the signal's log time (not the wall clock) to keep replays byte-identical.

Which runs to pass: every run of the dataset's assertions at or after :func:`history_floor` (all of them when
it is None), plus each assertion's latest SUCCESS-or-FAILURE run before it. Runs older than the floor count
only through those seeds: a run arriving so late that it is older than the floor cannot change an incident
already resolved, though a late FAILURE can open a new one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pareis.core import incident_text
from pareis.core.analysis import AnalysisInputs, analyse
from pareis.core.impact import Severity
from pareis.core.incident_urn import datahub_guid, effect_id
from pareis.core.intents import IncidentFacts, Intent, Open, PriorFields, Resolve, RetrainStatus, Update
from pareis.core.runs import AssertionRun
from pareis.core.serving import Action
from pareis.core.window import IncidentWindow, counting_runs, incidents


class Status(StrEnum):
    CLEAR = "CLEAR"
    ACTIVE = "ACTIVE"
    RESOLVED = "RESOLVED"


@dataclass(frozen=True)
class Signal:
    """An assertion run was recorded; ``dataset`` is the incident key (the assertee resolved through siblings)."""

    dataset: str
    run: AssertionRun


@dataclass(frozen=True)
class Published:
    """What Pareis last published about an incident: the facts an Update compares the new analysis with.

    Each field is one published fact; :meth:`to_json` is the stored form (JSON values: lists, and ``blast`` as a
    digest of the blast radius without ``failed_rows``, so only the fact of a change is kept). The defaults are
    "nothing published".

    ``decisions``: the recommendation per affected group (DESIGN §2.3) as ``(group, action, target URN or None)``;
    None when the stored form predates the field (it is then not compared: see :meth:`changes`).
    """

    assertions: tuple[str, ...] = ()
    at_risk: tuple[str, ...] = ()
    blast: str = ""
    contamination: tuple[tuple[str, str], ...] = ()
    decisions: tuple[tuple[str, str, str | None], ...] | None = ()
    failed_rows: int | None = None
    first_failure_ms: int | None = None
    healed_ms: int | None = None
    last_success_ms: int | None = None
    owners: tuple[tuple[str, str], ...] = ()
    retrain: tuple[tuple[str, RetrainStatus], ...] = ()
    rollback: tuple[tuple[str, str | None], ...] = ()
    severity: str = ""

    @classmethod
    def of(cls, facts: IncidentFacts) -> Published:
        """The facts an intent about ``facts`` publishes."""
        blast = facts.blast.to_json()
        blast["failed_rows"] = None
        return cls(
            assertions=tuple(facts.window.assertions),
            at_risk=tuple(facts.at_risk),
            blast=datahub_guid(blast),
            contamination=tuple((v.version.urn, v.verdict.value) for g in facts.contamination for v in g.versions),
            decisions=tuple((d.group, d.action.value, d.target.urn if d.target else None) for d in facts.decisions),
            failed_rows=facts.window.failed_rows,
            first_failure_ms=facts.window.first_failure_ms,
            healed_ms=facts.window.healed_ms,
            last_success_ms=facts.window.last_success_ms,
            owners=facts.owners.pairs(facts.dataset),
            retrain=tuple(facts.retrain),
            rollback=tuple(facts.rollbacks),
            severity=facts.severity.value,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "assertions": list(self.assertions),
            "at_risk": list(self.at_risk),
            "blast": self.blast,
            "contamination": [[urn, verdict] for urn, verdict in self.contamination],
            **({} if self.decisions is None else {"decisions": [list(d) for d in self.decisions]}),
            "failed_rows": self.failed_rows,
            "first_failure_ms": self.first_failure_ms,
            "healed_ms": self.healed_ms,
            "last_success_ms": self.last_success_ms,
            "owners": [[entity, owner] for entity, owner in self.owners],
            "retrain": [[urn, status.value] for urn, status in self.retrain],
            "rollback": [[group, urn] for group, urn in self.rollback],
            "severity": self.severity,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Published:
        """Inverse of :meth:`to_json` (a missing fact reads as its default; missing ``decisions``, from before the
        field existed, as None); KeyError/TypeError/ValueError on a malformed one."""
        if not isinstance(data, Mapping):
            raise TypeError(f"published facts must be an object, got {type(data).__name__}")
        return cls(
            assertions=tuple(data.get("assertions", ())),
            at_risk=tuple(data.get("at_risk", ())),
            blast=str(data.get("blast", "")),
            contamination=tuple((urn, verdict) for urn, verdict in data.get("contamination", ())),
            decisions=_decisions(data["decisions"]) if "decisions" in data else None,
            failed_rows=data.get("failed_rows"),
            first_failure_ms=data.get("first_failure_ms"),
            healed_ms=data.get("healed_ms"),
            last_success_ms=data.get("last_success_ms"),
            owners=tuple((entity, owner) for entity, owner in data.get("owners", ())),
            retrain=tuple((urn, RetrainStatus(status)) for urn, status in data.get("retrain", ())),
            rollback=tuple((group, urn) for group, urn in data.get("rollback", ())),
            severity=str(data.get("severity", "")),
        )

    def changes(self, new: Published) -> dict[str, tuple[Any, Any]]:
        """The facts that differ from ``new``, by name, as (old, new) JSON values. Decisions are compared only when
        both sides have them: facts stored before Pareis published decisions do not make every incident's next step
        an Update (after an upgrade, a restart must not comment on every open ticket)."""
        old_json, new_json = self.to_json(), new.to_json()
        return {k: (old_json[k], new_json[k]) for k in sorted(new_json) if k in old_json and old_json[k] != new_json[k]}


def _decisions(value: Any) -> tuple[tuple[str, str, str | None], ...]:
    """The stored ``decisions``: ``[[group, action, target URN or null], …]``; TypeError/ValueError otherwise."""
    if not isinstance(value, list):
        raise TypeError(f"decisions must be a list, got {value!r}")
    out = []
    for item in value:
        if not isinstance(item, list) or len(item) != 3:
            raise ValueError(f"a decision must be [group, action, target], got {item!r}")
        group, action, target = item
        if not isinstance(group, str) or not isinstance(action, str) or not isinstance(target, str | None):
            raise TypeError(f"a decision must be [group, action, target], got {item!r}")
        out.append((group, action, target))
    return tuple(out)


@dataclass(frozen=True)
class Tracked:
    """The incident a state is about: its identity, when Pareis opened it, and what it last published."""

    urn: str
    key_ms: int
    opened_at_ms: int
    revision: int
    published: Published

    def to_json(self) -> dict[str, Any]:
        return {
            "key_ms": self.key_ms,
            "opened_at_ms": self.opened_at_ms,
            "published": self.published.to_json(),
            "revision": self.revision,
            "urn": self.urn,
        }


@dataclass(frozen=True)
class IncidentState:
    """The incident state of one dataset key. ``incident``: the ACTIVE one, or the last RESOLVED one."""

    dataset: str
    status: Status = Status.CLEAR
    floor_ms: int | None = None
    incident: Tracked | None = field(default=None)

    def __post_init__(self) -> None:
        if (self.status is Status.CLEAR) != (self.incident is None):
            raise ValueError(f"state of {self.dataset}: only CLEAR goes without an incident (got {self.status})")

    @property
    def at_risk(self) -> tuple[str, ...]:
        """The entities an ACTIVE incident tagged ``pareis-at-risk`` (models and features); empty otherwise."""
        if self.status is not Status.ACTIVE or self.incident is None:
            return ()
        return self.incident.published.at_risk

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "floor_ms": self.floor_ms,
            "incident": self.incident.to_json() if self.incident else None,
            "status": self.status.value,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IncidentState:
        """Inverse of :meth:`to_json`; ValueError on a malformed document."""
        try:
            tracked = data["incident"]
            return cls(
                dataset=data["dataset"],
                status=Status(data["status"]),
                floor_ms=data["floor_ms"],
                incident=None
                if tracked is None
                else Tracked(
                    urn=tracked["urn"],
                    key_ms=tracked["key_ms"],
                    opened_at_ms=tracked["opened_at_ms"],
                    revision=tracked["revision"],
                    published=Published.from_json(tracked["published"]),
                ),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"malformed incident state: {error!r}") from error


def history_floor(state: IncidentState, *, rechecking: bool = False) -> int | None:
    """The time from which :func:`step` needs every run (None: all of them); see the module docstring. When
    ``rechecking`` a resolved incident that is :func:`followed`, :func:`recheck` needs its window again: every run
    from the one that opened it (the seeds before it give its last success)."""
    if rechecking and followed(state) and state.incident is not None:
        return state.incident.key_ms if state.floor_ms is None else min(state.floor_ms, state.incident.key_ms)
    return state.floor_ms


def step(
    state: IncidentState, signal: Signal, inputs: AnalysisInputs, now_ms: int
) -> tuple[IncidentState, tuple[Intent, ...]]:
    """Apply one signal. Raises ValueError when the signal is for another dataset, or the runs given do not
    contain the run that opened the ACTIVE incident (the caller read less history than :func:`history_floor`)."""
    if signal.dataset != state.dataset:
        raise ValueError(f"signal for {signal.dataset} applied to the state of {state.dataset}")
    runs = inputs.runs
    if not any(run.key == signal.run.key for run in runs):
        runs = (*runs, signal.run)
    windows = incidents(runs)
    out: list[Intent] = []
    tracked, status, floor = state.incident, state.status, state.floor_ms
    newer: list[IncidentWindow]
    if status is Status.ACTIVE and tracked is not None:
        current = next((w for w in windows if w.contains(tracked.key_ms)), None)
        if current is None:
            raise ValueError(f"the runs given for {state.dataset} miss the run that opened {tracked.urn}")
        facts = analyse(state.dataset, current, inputs, urn=tracked.urn)
        if current.is_open:
            tracked = _update(tracked, facts, now_ms, out)
            return IncidentState(state.dataset, status, floor, tracked), tuple(out)
        tracked = _resolve(tracked, facts, now_ms, out)
        status = Status.RESOLVED
        newer = [w for w in windows if w.first_failure_ms > current.first_failure_ms]
    elif status is Status.RESOLVED and tracked is not None:
        # Any failure now is new; a healed window is new only if it began after the resolved one healed.
        healed = tracked.published.healed_ms
        after = healed if isinstance(healed, int) else tracked.key_ms + 1
        newer = [w for w in windows if w.is_open or w.first_failure_ms >= after]
    else:
        newer = list(windows)
    for window in newer:
        facts = analyse(state.dataset, window, inputs)
        revision = tracked.revision if tracked is not None and tracked.urn == facts.urn else 0
        if floor is not None:
            floor = min(floor, window.first_failure_ms)
        tracked = _open(window.first_failure_ms, revision, facts, now_ms, out)
        status = Status.ACTIVE
        if not window.is_open:
            tracked = _resolve(tracked, facts, now_ms, out)
            status = Status.RESOLVED
    if status is not Status.ACTIVE:
        counted = counting_runs(runs)
        if counted:
            latest = counted[-1].timestamp_ms + 1
            floor = latest if floor is None else max(floor, latest)
    return IncidentState(state.dataset, status, floor, tracked), tuple(out)


def recheck(
    state: IncidentState, inputs: AnalysisInputs, now_ms: int, cause: Sequence[str] = ()
) -> tuple[IncidentState, tuple[Intent, ...], IncidentFacts | None]:
    """A lineage change touched ``state``'s incident (DESIGN §3, live re-evaluation): recompute the ACTIVE incident
    from ``inputs`` as :func:`step` would, with no new run, and emit an :class:`Update` when a published fact
    changed; its comment names ``cause`` (the changed entities). Also returns the facts computed (None when nothing
    was), changed or not, so the caller can refresh what the incident watches.

    A RESOLVED incident still :func:`followed` (a decision left to act on after the heal: a contaminated version
    serves) is recomputed the same way, and only its decisions are compared: when one changed (a clean retrain
    registered: "now PROMOTE churn_4"; a deployment switched: "NONE"), an Update of the resolved incident says so
    (``decisions_only``); its other facts are the postmortem's and stay as published.

    Only ever an Update: any other state, or an ACTIVE window the runs show healed (a run whose own signal is still
    on its way, and will resolve it), gives the state unchanged and no intent. Raises ValueError as :func:`step` does
    when the runs miss the incident's opening run.
    """
    tracked = state.incident
    if tracked is None or not (state.status is Status.ACTIVE or followed(state)):
        return state, (), None
    current = next((w for w in incidents(inputs.runs) if w.contains(tracked.key_ms)), None)
    if current is None:
        raise ValueError(f"the runs given for {state.dataset} miss the run that opened {tracked.urn}")
    if current.is_open is (state.status is Status.RESOLVED):  # the runs have moved on; their signal will step it
        return state, (), None
    out: list[Intent] = []
    facts = analyse(state.dataset, current, inputs, urn=tracked.urn)
    if state.status is Status.ACTIVE:
        tracked = _update(tracked, facts, now_ms, out, cause)
    else:
        tracked = _update(tracked, facts, now_ms, out, cause, decisions_only=True)
    return IncidentState(state.dataset, state.status, state.floor_ms, tracked), tuple(out), facts


def followed(state: IncidentState) -> bool:
    """Whether ``state`` is a RESOLVED incident whose published decisions still ask for an action (a contaminated
    version serves: ROLL_BACK, PROMOTE or RETRAIN): lineage changes of its groups then re-decide it
    (:func:`recheck`)."""
    incident = state.incident
    if state.status is not Status.RESOLVED or incident is None:
        return False
    return any(action != Action.NONE for _, action, _ in incident.published.decisions or ())


def _open(key_ms: int, revision: int, facts: IncidentFacts, now_ms: int, out: list[Intent]) -> Tracked:
    urn = facts.urn
    title, description, found = incident_text.described(facts)
    out.append(
        Open(
            effect_id=effect_id(urn, Open.kind, revision),
            revision=revision,
            at_ms=now_ms,
            facts=facts,
            title=title,
            description=description,
            brief=found,
            tags_add=facts.at_risk,
        )
    )
    return Tracked(urn, key_ms, now_ms, revision + 1, Published.of(facts))


def _update(
    tracked: Tracked,
    facts: IncidentFacts,
    now_ms: int,
    out: list[Intent],
    cause: Sequence[str] = (),
    *,
    decisions_only: bool = False,
) -> Tracked:
    """An :class:`Update` when a published fact of ``facts`` changed. ``decisions_only``: a resolved incident
    re-decided (:func:`recheck`): only its decisions are compared and republished — the heal published the rest
    (tags, retrain statuses, the postmortem) — and the Update, its window healed, is written RESOLVED."""
    old = tracked.published
    new = Published.of(facts)
    if decisions_only:
        new = old if old.decisions is None else dataclasses.replace(old, decisions=new.decisions)
    changes = old.changes(new)
    if not changes:
        # Only facts not compared can differ (decisions stored before they were published): adopt them silently,
        # so that the next change of a decision is an Update.
        return (
            tracked if new == old else Tracked(tracked.urn, tracked.key_ms, tracked.opened_at_ms, tracked.revision, new)
        )
    old_risk, new_risk = set(old.at_risk), set(new.at_risk)
    title, description, found = incident_text.described(facts)
    out.append(
        Update(
            effect_id=effect_id(tracked.urn, Update.kind, tracked.revision),
            revision=tracked.revision,
            at_ms=now_ms,
            facts=facts,
            title=title,
            description=description,
            brief=found,
            changed=tuple(changes),
            tags_add=tuple(sorted(new_risk - old_risk)),
            tags_remove=tuple(sorted(old_risk - new_risk)),
            retrain=() if decisions_only else _retrain_changes(old, facts),
            comment=incident_text.update_comment(changes, cause),
            prior=_prior(old, facts.dataset),
        )
    )
    return Tracked(tracked.urn, tracked.key_ms, tracked.opened_at_ms, tracked.revision + 1, new)


def _resolve(tracked: Tracked, facts: IncidentFacts, now_ms: int, out: list[Intent]) -> Tracked:
    old_risk = set(tracked.published.at_risk)
    title, description, found = incident_text.described(facts)
    out.append(
        Resolve(
            effect_id=effect_id(tracked.urn, Resolve.kind, tracked.revision),
            revision=tracked.revision,
            at_ms=now_ms,
            facts=facts,
            title=title,
            description=description,
            brief=found,
            tags_remove=tuple(sorted(old_risk | set(facts.at_risk))),
            retrain=_retrain_changes(tracked.published, facts),
            postmortem=incident_text.postmortem(facts, tracked.opened_at_ms, now_ms),
            prior=_prior(tracked.published, facts.dataset),
        )
    )
    return Tracked(tracked.urn, tracked.key_ms, tracked.opened_at_ms, tracked.revision + 1, Published.of(facts))


def _prior(published: Published, dataset: str) -> PriorFields:
    """What the previous revision wrote of the fields people edit: the priority of its severity, the failing
    dataset's owners as assignees (:func:`pareis.datahub.writes.incident_writes.incident_info`), no stage."""
    severity = published.severity
    priority = Severity(severity).priority if severity in Severity.__members__ else None
    return PriorFields(priority, tuple(owner for entity, owner in published.owners if entity == dataset))


def _retrain_changes(published: Published, facts: IncidentFacts) -> tuple[tuple[str, RetrainStatus], ...]:
    """Retrain statuses that differ from the published ones; a version no longer evaluated goes back to OK."""
    old = dict(published.retrain)
    new = dict(facts.retrain)
    for urn in old.keys() - new.keys():
        new[urn] = RetrainStatus.OK
    return tuple(sorted((urn, status) for urn, status in new.items() if old.get(urn) != status))
