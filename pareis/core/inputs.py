"""What the incident analysis needs besides the runs (DESIGN §2.2, §2.3): the blast radius of each failing
assertion and the versions of every affected model group — computed once here for the incidents role and the
read side alike, so that ``pareis analyze`` predicts exactly what the running service writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pareis.core import catalog
from pareis.core.blast import blast_radius
from pareis.core.contamination import ModelVersion
from pareis.core.graph import LineageView
from pareis.core.impact import BlastRadius
from pareis.core.intents import AnalysisInputs
from pareis.core.owners import owners_by_entity
from pareis.core.runs import AssertionRun, ResultType


def analysis_inputs(
    view: LineageView, timeline: Sequence[AssertionRun], failing: Iterable[AssertionRun]
) -> AnalysisInputs:
    """The inputs of :func:`~pareis.core.intents.analyse` for ``timeline``: the blast radius of every assertion
    with a FAILURE among ``failing`` (an assertion whose definition is not indexed yet covers the whole datasets it
    failed on), the versions of the affected models' groups, the assertion types as failure classes, and the
    owners of the assertee datasets and affected models (:mod:`pareis.core.owners`).

    ``view`` should be a :class:`~pareis.core.graph.Memo` so that one analysis asks the index each question once.
    """
    assertees: dict[str, set[str]] = {}
    for run in failing:
        if run.result is ResultType.FAILURE:
            assertees.setdefault(run.assertion, set()).add(run.dataset)
    defs = catalog.assertions(view, assertees)
    blast: dict[str, BlastRadius] = {}
    for assertion in sorted(assertees):
        if assertion in defs:
            blast[assertion] = blast_radius(view, assertions=[assertion])
        else:
            blast[assertion] = blast_radius(view, datasets=sorted(assertees[assertion]))
    models = {m.urn: m.group for radius in blast.values() for m in radius.models}
    datasets = {run.dataset for run in timeline} | {d for ds in assertees.values() for d in ds}
    return AnalysisInputs(
        runs=tuple(timeline),
        blast=blast,
        versions=model_versions(view, blast.values()),
        failure_classes=catalog.failure_classes(defs),
        owners=owners_by_entity(view, sorted(datasets), models),
    )


def model_versions(view: LineageView, radii: Iterable[BlastRadius]) -> dict[str, tuple[ModelVersion, ...]]:
    """Every known version of each affected model's group (key: the group, or the model itself when it has
    none), with training times as DESIGN §2.3 defines them."""
    models = {m.urn: m.group for radius in radii for m in radius.models}
    versions = dict(catalog.versions_by_group(view, {g for g in models.values() if g}))
    solo = sorted(urn for urn, group in models.items() if not group)
    found = catalog.model_versions(view, solo)
    versions.update({urn: (found[urn],) for urn in solo})
    return versions
