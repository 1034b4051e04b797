"""What to do now, per model group (DESIGN §2.3 "Recommendation"): the decision every surface shows first, at a time
``at``, over every incident that reached the group.

For a set of groups (a model group URN, or a model's URN for a model in no group), the recommendation of each is
:func:`pareis.core.serving.recommend` over

* **every incident that reached it**, as it stood at ``at`` (an incident healed later is still failing then; one
  that began later does not count): from the reach index the incidents role keeps (``sources.reaches``) when the
  sources are live, else by analysing every incident of the run history up to ``at`` that can reach the groups
  (pruned as the gate prunes: :mod:`pareis.answers.reach`). Incidents the caller already analysed (``known``) stand
  as analysed: the index's copy of them may lag behind;
* **the group's versions trained at or before** ``at`` (None: every version), with what says whether each serves
  (deployments and their status, aliases: :func:`pareis.core.catalog.serving_facts`; ``sources.serving_aliases``).

So a live answer equals the recomputed one whenever the incidents role is current (a resolved incident's reach is
as of its heal: lineage changed since is not in it). ``at`` None: everything known.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from pareis.answers.newest import END_OF_TIME_MS
from pareis.answers.reach import incident_facts_at, region_of
from pareis.answers.sources import Sources
from pareis.core import catalog
from pareis.core.analysis import reaches_of
from pareis.core.contamination import ModelVersion
from pareis.core.graph import Memo
from pareis.core.intents import IncidentFacts
from pareis.core.serving import Reach, Recommendation, VersionFacts, recommend

MODEL_PREFIX = "urn:li:mlModel:"


def group_versions(view: Memo, groups: Iterable[str]) -> dict[str, tuple[ModelVersion, ...]]:
    """Every known version of each group (a model URN: the model alone), as the analysis reads them."""
    wanted = sorted(set(groups))
    solo = [g for g in wanted if g.startswith(MODEL_PREFIX)]
    out = dict(catalog.versions_by_group(view, [g for g in wanted if not g.startswith(MODEL_PREFIX)]))
    found = catalog.model_versions(view, solo)
    out.update({urn: (found[urn],) for urn in solo})
    return out


def reaches_from(facts: Iterable[IncidentFacts]) -> dict[str, list[Reach]]:
    """Per group, how each of the analysed incidents ``facts`` reached it (:func:`pareis.core.analysis.reaches_of`)."""
    out: dict[str, list[Reach]] = {}
    for f in facts:
        for group, reach in reaches_of(f).items():
            out.setdefault(group, []).append(reach)
    return out


def reaches_for(
    sources: Sources, view: Memo, groups: Iterable[str], at_ms: int | None, known: Sequence[IncidentFacts] = ()
) -> dict[str, list[Reach]]:
    """Every incident that reached each of ``groups`` as it stood at ``at_ms`` (see the module docstring)."""
    wanted = sorted(set(groups))
    found: dict[str, list[Reach]] = {}
    if sources.reaches is not None:
        for group, stored in sources.reaches.of_groups(wanted).items():
            found[group] = [r for r in (s.as_of(at_ms) for s in stored) if r is not None]
    elif wanted:
        versions = {v.urn for vs in group_versions(view, wanted).values() for v in vs}
        near = region_of(view, versions)
        every = incident_facts_at(view, sources.runs, END_OF_TIME_MS if at_ms is None else at_ms, near_to=near)
        found = reaches_from(every)
    mine = reaches_from(known)
    analysed = {r.incident for rs in mine.values() for r in rs}
    return {g: [*(r for r in found.get(g, ()) if r.incident not in analysed), *mine.get(g, ())] for g in wanted}


def decide(
    sources: Sources, view: Memo, reaches: Mapping[str, Sequence[Reach]], at_ms: int | None, groups: Iterable[str]
) -> dict[str, Recommendation]:
    """The recommendation of each of ``groups`` at ``at_ms`` over ``reaches`` (each as it stood then)."""
    wanted = sorted(set(groups))
    versions = group_versions(view, wanted)
    facts = catalog.serving_facts(view, (v for vs in versions.values() for v in vs))
    return {
        g: recommend(
            g,
            [facts.get(v.urn) or VersionFacts(v) for v in versions.get(g, ())],
            sorted(reaches.get(g, ()), key=lambda r: r.incident),
            at_ms,
            sources.serving_aliases,
        )
        for g in wanted
    }


def decided(
    sources: Sources,
    view: Memo,
    facts: Sequence[IncidentFacts],
    at_ms: int | None,
    *,
    every: Sequence[IncidentFacts] | None = None,
) -> list[IncidentFacts]:
    """``facts`` (incidents analysed as of ``at_ms``), each with the recommendation of its groups over every incident
    that reached them (``every``: every incident up to ``at_ms`` when the caller analysed them all; else found as the
    module docstring says)."""
    groups = {g.group for f in facts for g in f.contamination}
    if every is not None:
        reaches: Mapping[str, Sequence[Reach]] = reaches_from(every)
    else:
        reaches = reaches_for(sources, view, groups, at_ms, facts)
    found = decide(sources, view, reaches, at_ms, groups)
    return [dataclasses.replace(f, decisions=tuple(found[g.group] for g in f.contamination)) for f in facts]
