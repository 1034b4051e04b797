"""The incident analysis (DESIGN §2.2, §2.3, §3): window, blast radius, verdicts, rollback and owners of one
incident — the one recipe the incidents role and every read surface share, so that ``pareis analyze``, Mission
Control and the MCP tools predict exactly what the running service writes.

Two stages, so that the state machine stays a function of values:

* :func:`analysis_inputs` reads the lineage view for a key's runs: the blast radius of each failing assertion,
  every version of each affected model group, the failure classes and the owners (:class:`AnalysisInputs`);
* :func:`analyse` turns one incident window and those inputs into :class:`~pareis.core.intents.IncidentFacts`
  (no reading). :func:`pareis.core.lifecycle.step` calls it with the inputs the incidents role read.

:func:`incident_facts` is both for one incident of a key's timeline: what the read side asks.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from pareis.core import catalog
from pareis.core.blast import blast_radius
from pareis.core.contamination import GroupContamination, ModelVersion, Verdict, contamination
from pareis.core.dimension import OTHER
from pareis.core.graph import LineageView
from pareis.core.impact import BlastRadius, ModelImpact
from pareis.core.incident_urn import incident_urn
from pareis.core.intents import IncidentFacts, RetrainStatus
from pareis.core.owners import Owner, incident_owners, owners_by_entity
from pareis.core.runs import AssertionRun
from pareis.core.serving import DEFAULT_SERVING_ALIASES, Reach, VersionFacts, recommend
from pareis.core.window import IncidentWindow

T = TypeVar("T")

UNCLASSIFIED = OTHER
"""The class of an assertion nothing classifies (:data:`pareis.core.dimension.OTHER`)."""


@dataclass(frozen=True)
class AnalysisInputs:
    """What the analysis reads besides the window, for one step of the state machine.

    ``runs``: the key's assertion runs (see :func:`pareis.core.lifecycle.history_floor` for which).
    ``blast``: the blast radius of each assertion of the key that may fail (computed by
    :func:`pareis.core.blast.blast_radius`); an assertion missing here contributes nothing.
    ``versions``: every known version of each affected model group (key: group URN, or the model URN for a
    model in no group). ``failure_classes``: the data-quality dimension each assertion tests
    (:mod:`pareis.core.dimension`: ``completeness``, ``freshness``, …), the incident's class of failure.
    ``owners``: the owners of each assertee dataset (its siblings' included) and of each affected model (its
    group's included), as :func:`pareis.core.owners.owners_by_entity` reads them; an entity missing has none.
    ``serving``: what says whether each of those versions serves (:func:`pareis.core.catalog.serving_facts`; a
    version missing here has no deployment and no alias), and ``serving_aliases`` the aliases that mean serving.
    ``reaches``: per affected group, the other incidents that reached it (their blind windows and blast radii, as
    :func:`reaches_of` gives them), for a recommendation over every incident (DESIGN §2.3); the incident analysed
    adds its own (a reach of its own URN here is ignored).
    """

    runs: tuple[AssertionRun, ...]
    blast: Mapping[str, BlastRadius] = field(default_factory=dict)
    versions: Mapping[str, tuple[ModelVersion, ...]] = field(default_factory=dict)
    failure_classes: Mapping[str, str] = field(default_factory=dict)
    owners: Mapping[str, tuple[Owner, ...]] = field(default_factory=dict)
    serving: Mapping[str, VersionFacts] = field(default_factory=dict)
    serving_aliases: tuple[str, ...] = DEFAULT_SERVING_ALIASES
    reaches: Mapping[str, tuple[Reach, ...]] = field(default_factory=dict)


def incident_facts(
    view: LineageView,
    key: str,
    timeline: Sequence[AssertionRun],
    window: IncidentWindow,
    serving_aliases: tuple[str, ...] = DEFAULT_SERVING_ALIASES,
    at_ms: int | None = None,
    *,
    known: Mapping[str, BlastRadius] | None = None,
) -> IncidentFacts:
    """The analysis of ``window``, one incident of the incident key ``key`` whose runs are ``timeline`` (every run
    of the key's sibling class's assertions), under its URN ``incident_urn(key, first failure)``; as of ``at_ms``
    (None: everything known), the versions trained after it left out (:func:`analysis_inputs`; ``known`` as there).

    ``view`` should be a :class:`~pareis.core.graph.Memo` so that one analysis asks the index each question once.
    """
    return analyse(key, window, analysis_inputs(view, timeline, window.runs, serving_aliases, at_ms, known=known))


def walk_together(view: LineageView, failing: Iterable[AssertionRun]) -> BlastRadius | None:
    """Walk the blast radius of every defined assertion failing among ``failing`` at once, into ``view`` (a
    :class:`~pareis.core.graph.Memo`): each incident's own walk then finds its lineage there, so many analyses ask
    the index one round trip per step of one walk instead of one per step of each. Answers are unchanged (each
    analysis is the same computation over the same view); an error of the index is one the analyses' own walks
    would meet. Returns the walk's radius; None when there was nothing to share (fewer than two such assertions:
    one walk is the analysis's own)."""
    names = {r.assertion for r in failing if r.fails}
    defined = sorted(catalog.assertions(view, names)) if len(names) > 1 else []
    return blast_radius(view, assertions=defined) if len(defined) > 1 else None


def shared_blasts(
    view: LineageView,
    timeline: Sequence[AssertionRun],
    failing: Iterable[AssertionRun],
    *,
    known: Mapping[str, BlastRadius] | None = None,
) -> dict[str, BlastRadius]:
    """Read at once, into ``view``, what many analyses of runs among ``timeline`` failing in ``failing`` ask; the
    blast radii of the defined assertions, for the analyses to share (:func:`shared_analysis`)."""
    return dict(shared_analysis(view, timeline, failing, known=known).blast)


def shared_analysis(
    view: LineageView,
    timeline: Sequence[AssertionRun],
    failing: Iterable[AssertionRun],
    *,
    known: Mapping[str, BlastRadius] | None = None,
) -> AnalysisInputs:
    """The inputs of one analysis of every run of ``timeline`` failing in ``failing`` (each failing assertion's blast
    radius, the versions, owners and serving facts of everything reached), read at once into ``view``, for many
    analyses of parts of them to share (``known`` and ``batch`` of :func:`analysis_inputs`, whose ``known`` this
    takes too); its blast radii only those of the defined assertions (an undefined one's covers the datasets it
    failed on, which differ between the analyses). Walk the others together first (:func:`walk_together`) for one
    round trip per step."""
    found = analysis_inputs(view, timeline, failing, known=known)
    defined = catalog.assertions(view, found.blast)
    return replace(found, blast={a: radius for a, radius in found.blast.items() if a in defined})


def analysis_inputs(
    view: LineageView,
    timeline: Sequence[AssertionRun],
    failing: Iterable[AssertionRun],
    serving_aliases: tuple[str, ...] = DEFAULT_SERVING_ALIASES,
    at_ms: int | None = None,
    *,
    known: Mapping[str, BlastRadius] | None = None,
    batch: AnalysisInputs | None = None,
) -> AnalysisInputs:
    """The inputs of :func:`analyse` for ``timeline``: the blast radius of every assertion with a FAILURE among
    ``failing`` (an assertion whose definition is not indexed yet covers the whole datasets it failed on), the
    versions of the affected models' groups (those trained at or before ``at_ms`` when given: a version trained
    later did not exist yet; one with an unknown training time is kept), the assertion types as failure classes,
    and the owners of the assertee datasets and affected models (:mod:`pareis.core.owners`).

    ``view`` should be a :class:`~pareis.core.graph.Memo` so that one analysis asks the index each question once.
    ``known``: blast radii of defined assertions already computed over ``view`` (a batch's, shared by its signals),
    taken as they are instead of walked again. ``batch``: inputs read over ``view`` for many analyses at once
    (:func:`shared_analysis`): the versions, owners and serving facts this analysis needs are taken from it when it
    holds them all (each is a function of its entity and the view alone: the same values), else read.
    """
    assertees: dict[str, set[str]] = {}
    for run in failing:
        if run.fails:  # a warning opens nothing: its blast would be walked for no incident
            assertees.setdefault(run.assertion, set()).add(run.dataset)
    defs = catalog.assertions(view, assertees)
    blast: dict[str, BlastRadius] = {}
    shared = known or {}
    for assertion in sorted(assertees):
        if assertion in defs:
            found = shared.get(assertion)
            blast[assertion] = found if found is not None else blast_radius(view, assertions=[assertion])
        else:
            blast[assertion] = blast_radius(view, datasets=sorted(assertees[assertion]))
    models = {m.urn: m.group for radius in blast.values() for m in radius.models}
    datasets = {run.dataset for run in timeline} | {d for ds in assertees.values() for d in ds}
    keys = {group or urn for urn, group in models.items()}
    taken = None if batch is None else _taken(batch.versions, keys)
    versions = taken if taken is not None else model_versions(view, blast.values())
    if at_ms is not None:
        versions = {
            g: tuple(v for v in vs if v.trained_at_ms is None or v.trained_at_ms <= at_ms) for g, vs in versions.items()
        }
    return AnalysisInputs(
        runs=tuple(timeline),
        blast=blast,
        versions=versions,
        failure_classes=catalog.failure_classes(defs),
        owners=_owners(view, datasets, models, batch),
        serving=_serving(view, versions, batch),
        serving_aliases=serving_aliases,
    )


def _taken(found: Mapping[str, T], keys: Collection[str]) -> dict[str, T] | None:
    """``found`` restricted to ``keys``, in key order (its readers look entries up); None when it lacks one of them.
    Walks ``keys``, not ``found``: a batch's inputs hold every signal's."""
    if not all(k in found for k in keys):
        return None
    return {k: found[k] for k in sorted(keys)}


def _owners(
    view: LineageView, datasets: set[str], models: Mapping[str, str | None], batch: AnalysisInputs | None
) -> dict[str, tuple[Owner, ...]]:
    found = None if batch is None else _taken(batch.owners, datasets | models.keys())
    return found if found is not None else owners_by_entity(view, sorted(datasets), models)


def _serving(
    view: LineageView, versions: Mapping[str, tuple[ModelVersion, ...]], batch: AnalysisInputs | None
) -> dict[str, VersionFacts]:
    every = [v for vs in versions.values() for v in vs]
    found = None if batch is None else _taken(batch.serving, {v.urn for v in every})
    return found if found is not None else catalog.serving_facts(view, every)


def model_versions(view: LineageView, radii: Iterable[BlastRadius]) -> dict[str, tuple[ModelVersion, ...]]:
    """Every known version of each affected model's group (key: the group, or the model itself when it has
    none), with training times as DESIGN §2.3 defines them."""
    models = {m.urn: m.group for radius in radii for m in radius.models}
    versions = dict(catalog.versions_by_group(view, {g for g in models.values() if g}))
    solo = sorted(urn for urn, group in models.items() if not group)
    found = catalog.model_versions(view, solo)
    versions.update({urn: (found[urn],) for urn in solo})
    return versions


def analyse(key: str, window: IncidentWindow, inputs: AnalysisInputs, *, urn: str | None = None) -> IncidentFacts:
    """The facts of ``window``, an incident of ``key``: merged blast radius of its assertions, verdicts, retrain
    statuses, tags, owners.

    ``urn``: the incident's URN, ``incident_urn(key, window.first_failure_ms)`` unless given — an incident already
    opened keeps the URN it was opened with when later runs move its first failure earlier
    (:func:`pareis.core.lifecycle.step`). While the incident is open every evaluated version is BLOCKED; once healed
    only CONTAMINATED ones stay so.
    """
    radius = merge_blast((inputs.blast[a] for a in window.assertions if a in inputs.blast), window.failed_rows)
    groups = contamination(radius.models, inputs.versions, window.last_success_ms, window.healed_ms)
    retrain = tuple(
        sorted((v.version.urn, _retrain(v.verdict, window.is_open)) for group in groups for v in group.versions)
    )
    at_risk = tuple(sorted({m.urn for m in radius.models} | set(radius.features)))
    classes = sorted({inputs.failure_classes.get(a, UNCLASSIFIED) for a in window.assertions})
    owned = {key, *(run.dataset for run in window.runs)}
    urn = urn if urn is not None else incident_urn(key, window.first_failure_ms)
    own = _reaches(urn, window, groups)
    decisions = tuple(
        recommend(
            g.group,
            [inputs.serving.get(v.version.urn) or VersionFacts(v.version) for v in g.versions],
            [own[g.group], *(r for r in inputs.reaches.get(g.group, ()) if r.incident != urn)],
            None,
            inputs.serving_aliases,
        )
        for g in groups
    )
    return IncidentFacts(
        urn=urn,
        dataset=key,
        window=window,
        blast=radius,
        contamination=groups,
        retrain=retrain,
        at_risk=at_risk,
        failure_class="+".join(classes) if classes else UNCLASSIFIED,
        owners=incident_owners(inputs.owners, owned, (m.urn for m in radius.models)),
        decisions=decisions,
    )


def reaches_of(facts: IncidentFacts) -> dict[str, Reach]:
    """How the incident ``facts`` describes reached each affected group (DESIGN §2.3): its window and the group's
    versions in its blast radius — what another incident's recommendation counts of it (:attr:`AnalysisInputs.
    reaches`), and what the incidents role keeps per group (:mod:`pareis.store.reaches`)."""
    return _reaches(facts.urn, facts.window, facts.contamination)


def _reaches(urn: str, window: IncidentWindow, groups: Iterable[GroupContamination]) -> dict[str, Reach]:
    return {
        g.group: Reach(
            urn,
            window.last_success_ms,
            window.healed_ms,
            frozenset(v.version.urn for v in g.versions if v.in_blast),
            window.first_failure_ms,
        )
        for g in groups
    }


def merge_blast(radii: Iterable[BlastRadius], failed_rows: int | None) -> BlastRadius:
    """The union of several blast radii; a model in several keeps the union of its poisoned features and the
    coarser precision."""
    parts = list(radii)
    models: dict[str, ModelImpact] = {}
    for part in parts:
        for model in part.models:
            seen = models.get(model.urn)
            if seen is None:
                models[model.urn] = model
                continue
            models[model.urn] = ModelImpact(
                urn=model.urn,
                group=seen.group or model.group,
                poisoned_features=tuple(sorted(set(seen.poisoned_features) | set(model.poisoned_features))),
                total_features=max(seen.total_features, model.total_features),
                precision="table" if "table" in (seen.precision, model.precision) else "column",
            )

    def union(name: str) -> tuple[str, ...]:
        return tuple(sorted({item for part in parts for item in getattr(part, name)}))

    at_column = {f for part in parts for f in part.features if f not in part.table_features}
    return BlastRadius(
        failing_columns=union("failing_columns"),
        origin_columns=union("origin_columns"),
        columns=union("columns"),
        datasets=union("datasets"),
        features=union("features"),
        models=tuple(models[urn] for urn in sorted(models)),
        failed_rows=failed_rows,
        table_features=tuple(f for f in union("table_features") if f not in at_column),
        incomplete=union("incomplete"),
    )


def _retrain(verdict: Verdict, is_open: bool) -> RetrainStatus:
    if is_open or verdict is Verdict.CONTAMINATED:
        return RetrainStatus.BLOCKED
    return RetrainStatus.OK
