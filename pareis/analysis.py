"""The incident analysis of a dataset or assertion, as the incidents role computes it (DESIGN §2.2, §2.3).

Shared by ``pareis analyze`` and ``pareis demo``: the incident key is the dataset's sibling class's canonical member
(:func:`pareis.roles.assertions.canonical`), its runs are those of every assertion of the class, its incidents are
:func:`pareis.core.window.incidents` of them, and the latest one (the open failing streak, else the most recent
resolved one) is analysed with the role's inputs and :func:`pareis.core.intents.analyse`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pareis.bootstrap import AnalysisSource
    from pareis.core.intents import IncidentFacts


class CannotEvaluate(Exception):
    """The command can't answer; the message is the one-line reason (exit 2)."""


def incident_facts(source: AnalysisSource, *, assertion: str | None, dataset: str | None) -> IncidentFacts:
    """The analysis of the incident ``assertion`` (or ``dataset``) names; CannotEvaluate when there is none."""
    from pareis.core import catalog
    from pareis.core.blast import blast_radius
    from pareis.core.graph import Memo
    from pareis.core.impact import BlastRadius
    from pareis.core.incident_urn import incident_urn
    from pareis.core.intents import AnalysisInputs, analyse
    from pareis.core.runs import ResultType
    from pareis.core.window import incidents
    from pareis.roles.assertions import canonical, sibling_classes
    from pareis.roles.incidents import model_versions

    if (assertion is None) == (dataset is None):
        raise CannotEvaluate("give --assertion URN or --dataset URN (one of them)")
    view = Memo(source.lineage)
    if assertion is not None:
        failures = [r for r in source.runs.runs(assertion) if r.result is ResultType.FAILURE]
        if not failures:
            raise CannotEvaluate(f"assertion {assertion} never failed")
        dataset = failures[-1].dataset
    assert dataset is not None
    members = sibling_classes(view, [dataset])[dataset]
    key = canonical(members)
    names = {a for member in members for a in source.runs.assertions_of(member)}
    timeline = tuple(source.runs.timeline(names | ({assertion} if assertion else set()), None))
    windows = [w for w in incidents(timeline) if assertion is None or assertion in w.assertions]
    if not windows:
        raise CannotEvaluate(f"no assertion of {dataset} ever failed")
    window = windows[-1]
    assertees: dict[str, set[str]] = {}
    for run in window.runs:
        if run.result is ResultType.FAILURE:
            assertees.setdefault(run.assertion, set()).add(run.dataset)
    defs = catalog.assertions(view, window.assertions)
    blast: dict[str, BlastRadius] = {}
    for name in window.assertions:
        # As the incidents role does: an assertion not defined in the index covers its whole assertee dataset.
        by = {"assertions": [name]} if name in defs else {"datasets": sorted(assertees[name])}
        blast[name] = blast_radius(view, **by)
    inputs = AnalysisInputs(
        runs=timeline,
        blast=blast,
        versions=model_versions(view, blast.values()),
        failure_classes=catalog.failure_classes(defs),
    )
    return analyse(incident_urn(key, window.first_failure_ms), key, window, inputs)
