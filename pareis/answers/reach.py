"""The incidents of the run history, as of a time ``at``, that reach one model version (DESIGN §2.3, §2.4).

Incidents are found exactly as the incidents role (and :func:`pareis.answers.incidents.incident_list`) finds
them: a dataset's incident key is its sibling class's canonical member (:mod:`pareis.core.keys`), its runs are
those of every assertion of the class, its incidents are :func:`pareis.core.window.incidents` of them, and each is
analysed with the role's inputs (:func:`pareis.core.inputs.analysis_inputs`) and
:func:`pareis.core.intents.analyse`. Only runs at or before ``at`` are read, so an incident healed after ``at`` is
active at ``at``; the lineage is the index's current state.

An incident *reaches* a version when its analysis gives that version a verdict: the version is in the blast
radius, or it is a version of a group the blast radius reaches. The incidents role blocks every such version
(``io.pareis.retrain_status``) while the incident is active, so the gate blocks it too.
"""

from __future__ import annotations

from collections.abc import Iterable

from pareis.core.gate import IncidentReach
from pareis.core.graph import Memo
from pareis.core.incident_urn import incident_urn
from pareis.core.inputs import analysis_inputs
from pareis.core.intents import IncidentFacts, analyse
from pareis.core.keys import canonical, sibling_classes
from pareis.core.window import incidents
from pareis.store.runs import RunHistory


def incident_facts_at(view: Memo, runs: RunHistory, at_ms: int) -> list[IncidentFacts]:
    """The analysis of every incident the run history describes up to ``at_ms``, by key then first failure.

    Only a sibling class with a FAILURE run can have an incident, so only the classes of
    :meth:`~pareis.store.runs.RunHistory.failed_datasets` are read (each with every member's assertions).
    """
    classes = sibling_classes(view, runs.failed_datasets())
    members: dict[str, frozenset[str]] = {canonical(group): group for group in classes.values()}
    out: list[IncidentFacts] = []
    for key in sorted(members):
        names = {a for member in sorted(members[key]) for a in runs.assertions_of(member)}
        timeline = tuple(r for r in runs.timeline(names, None) if r.timestamp_ms <= at_ms)
        for window in incidents(timeline):
            inputs = analysis_inputs(view, timeline, window.runs)
            out.append(analyse(incident_urn(key, window.first_failure_ms), key, window, inputs))
    return out


def reaching(facts: Iterable[IncidentFacts], version: str) -> tuple[IncidentReach, ...]:
    """The incidents among ``facts`` that give ``version`` a verdict, oldest first."""
    out = [
        IncidentReach(
            urn=f.urn,
            dataset=f.dataset,
            first_failure_ms=f.window.first_failure_ms,
            healed_ms=f.window.healed_ms,
            in_blast=v.in_blast,
            verdict=v.verdict,
            safe_rollback=group.safe_rollback,
        )
        for f in facts
        for group in f.contamination
        for v in group.versions
        if v.version.urn == version
    ]
    return tuple(sorted(out, key=lambda i: (i.first_failure_ms, i.urn)))
