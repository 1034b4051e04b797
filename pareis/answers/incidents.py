"""Incidents (DESIGN §2.2, §2.3, §3): the analysis of one, and the list of all that the run history describes.

An incident is found as the incidents role finds it: a dataset's incident key and its runs are those of its sibling
class (:mod:`pareis.answers.timelines`), and its incidents are :func:`pareis.core.window.incidents` of them; each is
analysed with the role's own recipe (:func:`pareis.core.analysis.incident_facts`), so the read side predicts exactly
the URN, blast radius and verdicts the running service writes. Each carries, per affected group, the recommendation
over every incident that reached the group (:mod:`pareis.answers.decisions`). Every answer is as of a time ``at``
(None: everything known): only runs at or before it count (an incident healed later is active then), and only
versions trained at or before it exist.

:class:`IncidentAnswer`'s JSON is ``pareis analyze --json``'s contract: the blast contract of ``pareis blast``
plus (keys sorted)::

    "decisions": [<Recommendation: pareis.answers.shapes.Recommendation>],      # by group; what to do now
    "incident": {urn, dataset, assertions, state: ACTIVE | RESOLVED, failed_rows},
    "window": {last_success_ms, first_failure_ms, healed_ms},
    "contamination": [{group, versions: [{urn, version, trained_at_ms, verdict}],   # oldest first
                       safe_rollback: {urn, version} | null}],                        # by group
    "owners": {dataset: [{urn, email}], models: {model urn: [{urn, email}]}},        # DESIGN §3
    "tickets": [{tool, id, label, url}]                                  # by tool; :mod:`pareis.answers.tickets`

:class:`IncidentSummary` (a row of the incident list) carries the same ``decisions`` and ``tickets``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pareis.answers.blast import known_dataset
from pareis.answers.decisions import MODEL_PREFIX, decide, decided, reaches_for
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.answers.tickets import TicketLink, ticket_links
from pareis.answers.timelines import class_timeline, failing_timelines
from pareis.core import catalog
from pareis.core.analysis import incident_facts
from pareis.core.brief import iso
from pareis.core.contamination import GroupContamination
from pareis.core.graph import Memo
from pareis.core.incident_urn import incident_urn
from pareis.core.intents import IncidentFacts
from pareis.core.lifecycle import IncidentState, Status
from pareis.core.serving import Recommendation
from pareis.core.window import IncidentWindow, incidents


@dataclass(frozen=True)
class IncidentAnswer:
    """The analysis of one incident; ``assertion`` is the one it was asked for (None: asked by dataset)."""

    facts: IncidentFacts
    assertion: str | None = None
    tickets: tuple[TicketLink, ...] = ()

    def to_json(self) -> dict[str, Any]:
        facts, window = self.facts, self.facts.window
        return {
            "assertion": self.assertion,
            "blast": facts.blast.to_json(),
            "decisions": [d.to_json() for d in facts.decisions],
            "incident": {
                "urn": facts.urn,
                "dataset": facts.dataset,
                "assertions": list(window.assertions),
                "state": state_of(window),
                "failed_rows": window.failed_rows,
            },
            "window": {
                "last_success_ms": window.last_success_ms,
                "first_failure_ms": window.first_failure_ms,
                "healed_ms": window.healed_ms,
            },
            "contamination": [group_json(g) for g in facts.contamination],
            "owners": facts.owners.to_json(),
            "tickets": [t.to_json() for t in self.tickets],
        }


@dataclass(frozen=True)
class IncidentSummary:
    """One line of the incident list: what an on-call person scans before opening an incident."""

    urn: str
    dataset: str
    state: str
    severity: str
    first_failure_ms: int
    healed_ms: int | None
    last_success_ms: int | None
    assertions: tuple[str, ...]
    models: tuple[str, ...]
    failed_rows: int | None
    tickets: tuple[TicketLink, ...] = ()
    decisions: tuple[Recommendation, ...] = ()

    @classmethod
    def of(cls, facts: IncidentFacts) -> IncidentSummary:
        window = facts.window
        return cls(
            urn=facts.urn,
            dataset=facts.dataset,
            state=state_of(window),
            severity=facts.severity.value,
            first_failure_ms=window.first_failure_ms,
            healed_ms=window.healed_ms,
            last_success_ms=window.last_success_ms,
            assertions=tuple(window.assertions),
            models=tuple(sorted(m.urn for m in facts.blast.models)),
            failed_rows=window.failed_rows,
            decisions=facts.decisions,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "decisions": [d.to_json() for d in self.decisions],
            "urn": self.urn,
            "dataset": self.dataset,
            "state": self.state,
            "severity": self.severity,
            "first_failure_ms": self.first_failure_ms,
            "healed_ms": self.healed_ms,
            "last_success_ms": self.last_success_ms,
            "assertions": list(self.assertions),
            "models": list(self.models),
            "failed_rows": self.failed_rows,
            "tickets": [t.to_json() for t in self.tickets],
        }


def state_of(window: IncidentWindow) -> str:
    """``ACTIVE`` while the window is open, else ``RESOLVED``."""
    return "ACTIVE" if window.is_open else "RESOLVED"


def group_json(group: GroupContamination) -> dict[str, Any]:
    """A group's verdicts in the analysis contract."""
    rollback = group.safe_rollback
    return {
        "group": group.group,
        "versions": [
            {
                "urn": v.version.urn,
                "version": v.version.version,
                "trained_at_ms": v.version.trained_at_ms,
                "verdict": v.verdict.value,
            }
            for v in group.versions
        ],
        "safe_rollback": None if rollback is None else {"urn": rollback.urn, "version": rollback.version},
    }


def analysis(
    sources: Sources, *, assertion: str | None = None, dataset: str | None = None, at_ms: int | None = None
) -> IncidentAnswer:
    """The latest incident ``assertion`` failed in, or of ``dataset`` (exactly one), as of ``at_ms``: the open
    failing streak, else the most recent resolved one. CannotEvaluate when there is none."""
    if (assertion is None) == (dataset is None):
        raise CannotEvaluate("give --assertion URN or --dataset URN (one of them)")
    view = Memo(sources.lineage)
    by = "" if at_ms is None else f" by {iso(at_ms)}"
    if assertion is not None:
        runs = sources.runs.runs(assertion)
        failures = [r for r in runs if r.fails and (at_ms is None or r.timestamp_ms <= at_ms)]
        if not runs and not catalog.assertions(view, [assertion]):
            raise CannotEvaluate(f"unknown assertion {assertion} (no assertionInfo and no runs)")
        if not failures:
            raise CannotEvaluate(f"assertion {assertion} never failed{by}")
        dataset = failures[-1].dataset
    assert dataset is not None
    if assertion is None and not known_dataset(view, sources.runs, dataset):
        raise CannotEvaluate(f"unknown dataset {dataset} (not in the index)")
    key, timeline = class_timeline(view, sources.runs, dataset, {assertion} if assertion else (), at_ms)
    windows = [w for w in incidents(timeline) if assertion is None or assertion in w.assertions]
    if not windows:
        raise CannotEvaluate(f"no assertion of {dataset} ever failed{by}")
    facts = incident_facts(view, key, timeline, windows[-1], sources.serving_aliases, at_ms)
    (facts,) = decided(sources, view, [facts], at_ms)
    return IncidentAnswer(facts, assertion, ticket_links(sources, [facts.urn])[facts.urn])


def incident_list(sources: Sources, at_ms: int | None = None) -> list[IncidentSummary]:
    """Every incident the run history describes up to ``at_ms``, of every dataset: active ones first, then by first
    failure, newest first, then URN — each as :func:`analysis` would analyse it, with its decisions.

    With a live incident store (``sources.incidents``) the list is read, not recomputed: the windows come from the
    run history (two batched reads for every failing class, no blast radius), and an ACTIVE incident the store
    holds takes its severity, models and affected groups from what the incidents role last published about it (the
    role re-analyses an active incident when its inputs change), when the published window (first failure, last
    success, assertions, failed rows) is the one the runs give. Any other incident — resolved (its published facts
    date from its heal, and the lineage may have changed since), or one the role has not caught up with — is
    analysed. The decisions of every listed group are then read over the reach index (:mod:`pareis.answers.
    decisions`). So the answer equals the recomputed one whenever the incidents role is current, with one store read
    instead of one analysis per active incident."""
    if sources.incidents is None:
        return [
            dataclasses.replace(IncidentSummary.of(answer.facts), tickets=answer.tickets)
            for answer in incident_analyses(sources, at_ms)
        ]
    view = Memo(sources.lineage)
    # The failing classes and their runs, as the role finds them (without the datasets each assertion checks: the
    # list needs no blast radius for what the store holds).
    timelines = failing_timelines(view, sources.runs, at_ms)
    keys = sorted(timelines)
    stored = sources.incidents.get_many(keys)
    found = [(key, w, incident_urn(key, w.first_failure_ms)) for key in keys for w in incidents(timelines[key])]
    links = ticket_links(sources, [urn for *_, urn in found])
    rows: list[IncidentSummary] = []
    groups: dict[str, tuple[str, ...]] = {}  # the affected groups of each row read from the store
    analysed: list[IncidentFacts] = []
    for key, window, urn in found:
        kept = _published(stored[key], urn, window, links[urn])
        if kept is None:
            facts = incident_facts(view, key, timelines[key], window, sources.serving_aliases, at_ms)
            analysed.append(facts)
            kept = dataclasses.replace(IncidentSummary.of(facts), tickets=links[urn])
        else:
            groups[urn] = _published_groups(stored[key])
        rows.append(kept)
    analysed = decided(sources, view, analysed, at_ms)
    wanted = {g for gs in groups.values() for g in gs}
    by_group = decide(sources, view, reaches_for(sources, view, wanted, at_ms, analysed), at_ms, wanted)
    by_urn = {f.urn: f.decisions for f in analysed}
    rows = [
        dataclasses.replace(
            r, decisions=by_urn[r.urn] if r.urn in by_urn else tuple(by_group[g] for g in groups[r.urn])
        )
        for r in rows
    ]
    return sorted(rows, key=lambda s: (s.state != "ACTIVE", -s.first_failure_ms, s.urn))


def _published_groups(state: IncidentState) -> tuple[str, ...]:
    """The affected groups of the incident ``state`` tracks, as the role last published them (by group)."""
    assert state.incident is not None
    return tuple(group for group, _ in state.incident.published.rollback)


def _published(
    state: IncidentState, urn: str, window: IncidentWindow, tickets: tuple[TicketLink, ...]
) -> IncidentSummary | None:
    """The list row of incident ``urn`` (with its ``tickets``) from what the incidents role published about it,
    when ``state`` is about that incident and its published window is ``window``; else None (analyse it)."""
    tracked = state.incident
    if tracked is None or tracked.urn != urn or state.status is not Status.ACTIVE or not window.is_open:
        return None  # a resolved incident's published facts are as of its heal; the lineage may have moved since
    p = tracked.published
    failed_rows = window.failed_rows
    same = (
        p.first_failure_ms == window.first_failure_ms
        and p.healed_ms == window.healed_ms
        and p.last_success_ms == window.last_success_ms
        and tuple(p.assertions) == tuple(window.assertions)
        and p.failed_rows == failed_rows
        and bool(p.severity)
    )
    if not same:
        return None
    return IncidentSummary(
        urn=urn,
        dataset=state.dataset,
        state=state_of(window),
        severity=p.severity,
        first_failure_ms=window.first_failure_ms,
        healed_ms=window.healed_ms,
        last_success_ms=window.last_success_ms,
        assertions=tuple(window.assertions),
        models=tuple(sorted(u for u in p.at_risk if u.startswith(MODEL_PREFIX))),  # at_risk: blast models + features
        failed_rows=failed_rows,
        tickets=tickets,
    )


def incident_analyses(sources: Sources, at_ms: int | None = None) -> list[IncidentAnswer]:
    """The full analysis of every incident :func:`incident_list` lists, in its order (what ``get_incident`` and
    the model verdicts read: an incident that is not its dataset's latest is only reachable here), as of ``at_ms``."""
    view = Memo(sources.lineage)
    timelines = failing_timelines(view, sources.runs, at_ms)  # only a class with a FAILURE run can have an incident
    every = [
        incident_facts(view, key, timelines[key], w, sources.serving_aliases, at_ms)
        for key in sorted(timelines)
        for w in incidents(timelines[key])
    ]
    every = decided(sources, view, every, at_ms, every=every)
    links = ticket_links(sources, [f.urn for f in every])
    found = [IncidentAnswer(f, tickets=links[f.urn]) for f in every]
    return sorted(found, key=lambda a: (not a.facts.window.is_open, -a.facts.window.first_failure_ms, a.facts.urn))
