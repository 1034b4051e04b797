"""The incidents of the run history, as of a time ``at``, that reach one model version (DESIGN §2.3, §2.4).

Incidents are found exactly as the incidents role (and :func:`pareis.answers.incidents.incident_list`) finds
them: a dataset's incident key is its sibling class's canonical member (:mod:`pareis.core.keys`), its runs are
those of every assertion of the class (:mod:`pareis.answers.timelines`), its incidents are
:func:`pareis.core.window.incidents` of them, and each is analysed with the role's recipe
(:func:`pareis.core.analysis.incident_facts`). Only runs at or before ``at`` are read, so an incident healed after
``at`` is active at ``at``; the lineage is the index's current state.

An incident *reaches* a version when its analysis gives that version a verdict: the version is in the blast
radius, or it is a version of a group the blast radius reaches. The incidents role blocks every such version
(``io.pareis.retrain_status``) while the incident is active, so the gate blocks it too.

**Pruning.** Analysing an incident costs a blast radius. A blast radius only ever reaches what lies downstream of
the failing datasets' table-level ancestors (every column edge also makes a ``covered`` dataset edge; sibling,
lineage and process hops are table-level edges), so an incident whose datasets share no table-level ancestor (or
self) with a version's *region* — its group's feature source datasets and training inputs — cannot reach it, and is
not analysed (:func:`~pareis.core.upstream.upstream_walk` walks every class's datasets and the region up together).
Pruning never drops an incident that reaches the version; with ``near_to=None`` every incident is analysed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pareis.answers.timelines import class_timelines
from pareis.core import catalog
from pareis.core.analysis import incident_facts, shared_blasts, walk_together
from pareis.core.fieldpath import is_column, parent_of
from pareis.core.gate_inputs import IncidentReach
from pareis.core.graph import Memo, Query, Rel, union
from pareis.core.impact import BlastRadius
from pareis.core.intents import IncidentFacts
from pareis.core.keys import canonical, sibling_classes
from pareis.core.upstream import ModelUpstream, upstream_walk
from pareis.core.walk_cache import WalkCache
from pareis.core.window import incidents
from pareis.store.runs import RunHistory


@dataclass(frozen=True)
class Candidates:
    """The sibling classes that can have an incident (a member with a FAILURE run): each class's members, its
    assertions, and the datasets its failures start from (members and the datasets its assertions check)."""

    members: Mapping[str, frozenset[str]]
    names: Mapping[str, frozenset[str]]
    seeds: dict[object, set[str]]


def candidates(view: Memo, runs: RunHistory) -> Candidates:
    """Only a sibling class with a FAILURE run can have an incident, so only the classes of
    :meth:`~pareis.store.runs.RunHistory.failed_datasets` are read (each with every member's assertions)."""
    classes = sibling_classes(view, runs.failed_datasets())
    members = {canonical(group): group for group in classes.values()}
    of = runs.assertions_by_dataset(m for group in members.values() for m in group)
    names = {key: frozenset(a for member in group for a in of[member]) for key, group in members.items()}
    every = sorted({a for found in names.values() for a in found})
    targets = view.lookup([Query(Rel.ASSERTS, every)])[0]
    seeds: dict[object, set[str]] = {
        key: set(group).union(*(targets[a] for a in names[key])) for key, group in members.items()
    }
    return Candidates(members, names, seeds)


def analysed(view: Memo, runs: RunHistory, at_ms: int, found: Candidates, keys: Iterable[str]) -> list[IncidentFacts]:
    """The analysis of every incident of the classes ``keys`` up to ``at_ms``, by key then first failure."""
    by_key = analysed_by_key(view, runs, at_ms, found, keys)
    return [f for key in sorted(by_key) for f in by_key[key]]


def analysed_by_key(
    view: Memo,
    runs: RunHistory,
    at_ms: int,
    found: Candidates,
    keys: Iterable[str],
    walks: WalkCache[ModelUpstream] | None = None,
) -> dict[str, list[IncidentFacts]]:
    """:func:`analysed`, per class key (each class's incidents by first failure). The blast radii of many
    incidents are walked together first, into ``view`` (:func:`~pareis.core.analysis.walk_together`), and their
    analyses' inputs read at once (:func:`~pareis.core.analysis.shared_blasts`): each radius is walked once.
    ``walks``: radii kept from earlier views of ``view``'s generation, taken instead of walked, and given the radii
    walked here (:class:`~pareis.core.walk_cache.WalkCache`)."""
    timelines = class_timelines(runs, {key: found.names[key] for key in keys}, at_ms)
    windows = {key: incidents(timeline) for key, timeline in timelines.items()}
    failing = [r for found_windows in windows.values() for w in found_windows for r in w.runs]
    known: dict[str, BlastRadius] = {} if walks is None else walks.radii(view, {r.assertion for r in failing})
    walked = walk_together(view, [r for r in failing if r.assertion not in known]) is not None
    if walked or (walks is not None and failing):  # many incidents, or radii to keep: inputs read at once too
        every = [r for timeline in timelines.values() for r in timeline]
        known = shared_blasts(view, every, failing, known=known)
        if walks is not None:
            walks.keep_radii(view, known)
    return {key: [incident_facts(view, key, timelines[key], w, known=known) for w in windows[key]] for key in timelines}


def near(found: Candidates, ups: Mapping[object, set[str]], region: object) -> set[str]:
    """The candidate classes whose table-level upstream (``ups[key]``) meets ``ups[region]``."""
    return {key for key in found.members if ups[key] & ups[region]}


def incident_facts_at(
    view: Memo, runs: RunHistory, at_ms: int, *, near_to: Iterable[str] | None = None
) -> list[IncidentFacts]:
    """The analysis of every incident the run history describes up to ``at_ms`` (by key, then first failure) that
    can reach the datasets ``near_to`` (a version's group inputs; see the module docstring; None: every incident)."""
    found = candidates(view, runs)
    keys: Iterable[str] = found.members
    if near_to is not None:
        seeds: dict[object, set[str]] = {**found.seeds, REGION: set(near_to)}
        ups = upstream_walk(view, [], seeds).regions
        keys = near(found, ups, REGION)
    return analysed(view, runs, at_ms, found, keys)


REGION = object()
"""The key of a version's region among the seeds of :func:`~pareis.core.upstream.upstream_walk`."""


def region_of(view: Memo, versions: Iterable[str]) -> set[str]:
    """The region of model ``versions`` (see the module docstring): the datasets they read — their features' source
    datasets and their training runs' inputs — what an incident must reach, at table level, to reach one of them."""
    infos = catalog.models(view, versions)
    features = {f for i in infos.values() for f in i.features}
    runs = catalog.runs(view, {r for i in infos.values() for r in i.training_runs})
    out = {dataset_of(s) for s in union(catalog.feature_sources(view, features))}
    return out | {dataset_of(x) for r in runs.values() for x in r.inputs if x.startswith("urn:li:")}


def dataset_of(source: str) -> str:
    """The dataset of a feature source: itself, or a column's dataset."""
    return parent_of(source) if is_column(source) else source


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
