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

**Pruning.** Analysing an incident costs a blast radius. A blast radius only ever reaches what lies downstream of
the failing datasets' table-level ancestors (every column edge also makes a ``covered`` dataset edge; sibling,
lineage and process hops are table-level edges), so an incident whose datasets share no table-level ancestor (or
self) with a version's *region* — its group's feature source datasets and training inputs — cannot reach it, and
is not analysed (:func:`upward` walks every incident's datasets and the region up together). Pruning never drops an
incident that reaches the version; with ``near_to=None`` every incident is analysed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pareis.core.gate_inputs import IncidentReach
from pareis.core.graph import LineageView, Memo, Query, Rel, related, union
from pareis.core.incident_urn import incident_urn
from pareis.core.inputs import analysis_inputs
from pareis.core.intents import IncidentFacts, analyse
from pareis.core.keys import canonical, sibling_classes
from pareis.core.window import incidents
from pareis.store.runs import RunHistory


def incident_facts_at(
    view: Memo, runs: RunHistory, at_ms: int, *, near_to: Iterable[str] | None = None
) -> list[IncidentFacts]:
    """The analysis of every incident the run history describes up to ``at_ms`` (by key, then first failure) that
    can reach the datasets ``near_to`` (a version's group inputs; see the module docstring; None: every incident).

    Only a sibling class with a FAILURE run can have an incident, so only the classes of
    :meth:`~pareis.store.runs.RunHistory.failed_datasets` are read (each with every member's assertions).
    """
    classes = sibling_classes(view, runs.failed_datasets())
    members: dict[str, frozenset[str]] = {canonical(group): group for group in classes.values()}
    of = runs.assertions_by_dataset(m for group in members.values() for m in group)
    names_of = {key: {a for member in group for a in of[member]} for key, group in members.items()}
    if near_to is not None and members:
        every = sorted({a for found in names_of.values() for a in found})
        targets = view.lookup([Query(Rel.ASSERTS, every)])[0]
        seeds: dict[object, set[str]] = {
            key: set(group).union(*(targets[a] for a in names_of[key])) for key, group in members.items()
        }
        seeds[_REGION] = set(near_to)
        up = upward(view, seeds)
        members = {key: group for key, group in members.items() if up[key] & up[_REGION]}
    wanted = {a for key in members for a in names_of[key]}
    history = [r for r in runs.timeline(wanted, None) if r.timestamp_ms <= at_ms] if wanted else []
    out: list[IncidentFacts] = []
    for key in sorted(members):
        names = names_of[key]
        timeline = tuple(r for r in history if r.assertion in names)
        for window in incidents(timeline):
            inputs = analysis_inputs(view, timeline, window.runs)
            out.append(analyse(incident_urn(key, window.first_failure_ms), key, window, inputs))
    return out


_REGION = object()


def table_parents(view: LineageView, datasets: Iterable[str]) -> dict[str, set[str]]:
    """Each dataset's table-level parents: lineage and column-covered upstreams, siblings, inputs of the processes
    writing it."""
    nodes = sorted(set(datasets))
    ups, covered, sib, sib_rev, writers = view.lookup(
        [
            Query(Rel.DATASET, nodes, True),
            Query(Rel.COVERED, nodes, True),
            Query(Rel.SIBLING, nodes),
            Query(Rel.SIBLING, nodes, True),
            Query(Rel.WRITES, nodes, True),
        ]
    )
    inputs = related(view, Rel.READS, union(writers), reverse=True)
    return {
        d: set(ups[d] | covered[d] | sib[d] | sib_rev[d]).union(*(inputs[p] for p in writers[d])) - {d} for d in nodes
    }


def upward(view: LineageView, seeds: Mapping[object, set[str]]) -> dict[object, set[str]]:
    """Each seed set and every dataset upstream of it at table level (:func:`table_parents`, transitively), the
    sets walked together: one :func:`table_parents` per level for all of them."""
    seen = {key: set(start) for key, start in seeds.items()}
    todo = {key: set(start) for key, start in seeds.items() if start}
    while todo:
        parents = table_parents(view, set().union(*todo.values()))
        nxt: dict[object, set[str]] = {}
        for key, frontier in todo.items():
            new = set().union(*(parents[d] for d in frontier)) - seen[key]
            if new:
                seen[key] |= new
                nxt[key] = new
        todo = nxt
    return seen


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
