"""A model's versions and their verdicts across every incident that reached it (DESIGN §2.3).

For a model version (``mlModel``) the versions are those of its group (itself alone when it has none); for a
model group, its versions. Each incident of :func:`~pareis.answers.incidents.incident_analyses` whose contamination
evaluates that group contributes its verdicts, its blind window and its safe rollback. Per version, the overall
verdict is ``CONTAMINATED`` when any incident says so, else ``UNKNOWN`` when any says so, else ``CLEAN`` (a version
no incident reached is CLEAN). The overall ``safe_rollback`` answers "which version do we roll back to" for the
most relevant incident (the first listed: active ones first, then newest): the newest version whose overall verdict
is CLEAN trained at or before that incident's ``last_success_ms`` — its own safe rollback, unless another incident
contaminated that version. Null when no incident reached the model, or none qualifies. ``at_risk``: an ACTIVE
incident is among them.

This is the one verdict rule of the read side: the MCP tool ``get_model_verdicts``, ``pareis analyze --model`` and
Mission Control's Models page (:mod:`pareis.answers.models`, one :class:`VerdictsAnswer` per group) all show it.
Above it, ``decision``: what to do now about the model's group (its recommendation over every incident that
reached it, :mod:`pareis.answers.decisions`; ``safe_rollback`` keeps its meaning). As of a time ``at`` (None:
everything known): the incidents as they stood then, the versions trained by then.

JSON (keys sorted by the renderer)::

    {"decision": <Recommendation: pareis.answers.shapes.Recommendation>,
     "model": URN, "group": URN | null,
     "versions": [{urn, version, trained_at_ms, verdict, contaminated_by: [incident URN…]}],   # oldest first
     "incidents": [{urn, dataset, state, window: {last_success_ms, first_failure_ms, healed_ms},
                    versions: [{urn, version, trained_at_ms, verdict}], safe_rollback: {urn, version} | null}],
     "safe_rollback": {urn, version} | null}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pareis.answers.incidents import IncidentAnswer, group_json, incident_analyses, state_of
from pareis.answers.sources import CannotEvaluate, Sources

if TYPE_CHECKING:
    from pareis.core.contamination import GroupContamination, ModelVersion
    from pareis.core.serving import Recommendation

_RANK = {"CLEAN": 0, "UNKNOWN": 1, "CONTAMINATED": 2}


@dataclass(frozen=True)
class VerdictsAnswer:
    """``model``'s versions (``versions``, oldest first), the incidents that evaluated them, and the decision about
    its group."""

    model: str
    group: str | None
    versions: tuple[ModelVersion, ...]
    incidents: tuple[tuple[IncidentAnswer, GroupContamination], ...]
    decision: Recommendation

    def verdict_of(self, urn: str) -> tuple[str, list[str]]:
        """The overall verdict of version ``urn`` and the incidents that contaminated it."""
        worst, contaminated_by = "CLEAN", []
        for answer, group in self.incidents:
            for v in group.versions:
                if v.version.urn == urn:
                    worst = max(worst, v.verdict.value, key=_RANK.__getitem__)
                    if v.verdict.value == "CONTAMINATED":
                        contaminated_by.append(answer.facts.urn)
        return worst, sorted(contaminated_by)

    @property
    def at_risk(self) -> bool:
        """Whether an ACTIVE incident (one whose data still fails) evaluated this model's group."""
        return any(answer.facts.window.is_open for answer, _ in self.incidents)

    def safe_rollback(self) -> ModelVersion | None:
        if not self.incidents:
            return None
        last_success = self.incidents[0][0].facts.window.last_success_ms
        if last_success is None:
            return None
        candidates = [
            v
            for v in self.versions
            if v.trained_at_ms is not None and v.trained_at_ms <= last_success and self.verdict_of(v.urn)[0] == "CLEAN"
        ]
        return candidates[-1] if candidates else None

    def to_json(self) -> dict[str, Any]:
        rollback = self.safe_rollback()
        versions = []
        for v in self.versions:
            verdict, contaminated_by = self.verdict_of(v.urn)
            versions.append(
                {
                    "urn": v.urn,
                    "version": v.version,
                    "trained_at_ms": v.trained_at_ms,
                    "verdict": verdict,
                    "contaminated_by": contaminated_by,
                }
            )
        incidents = []
        for answer, group in self.incidents:
            facts, window = answer.facts, answer.facts.window
            evaluated = group_json(group)
            incidents.append(
                {
                    "urn": facts.urn,
                    "dataset": facts.dataset,
                    "state": state_of(window),
                    "window": {
                        "last_success_ms": window.last_success_ms,
                        "first_failure_ms": window.first_failure_ms,
                        "healed_ms": window.healed_ms,
                    },
                    "versions": evaluated["versions"],
                    "safe_rollback": evaluated["safe_rollback"],
                }
            )
        return {
            "decision": self.decision.to_json(),
            "model": self.model,
            "group": self.group,
            "versions": versions,
            "incidents": incidents,
            "safe_rollback": None if rollback is None else {"urn": rollback.urn, "version": rollback.version},
        }


def model_versions(sources: Sources, model: str) -> tuple[str | None, tuple[ModelVersion, ...]]:
    """The group of ``model`` (a version or a group URN; None for a version in no group) and the versions it
    stands for, oldest first. CannotEvaluate for a URN that is neither, or that the index does not know."""
    from pareis.core import catalog
    from pareis.core.contamination import age

    if model.startswith("urn:li:mlModelGroup:"):
        if model not in sources.lineage.entities("mlModelGroupProperties") and not catalog.group_members(
            sources.lineage, [model]
        ).get(model):
            raise CannotEvaluate(f"unknown model group {model} (not in the index)")
        group: str | None = model
    elif model.startswith("urn:li:mlModel:"):
        if model not in sources.lineage.entities("mlModelProperties"):
            raise CannotEvaluate(f"unknown model {model} (not in the index)")
        group = catalog.model_versions(sources.lineage, [model])[model].group
    else:
        raise CannotEvaluate(f"{model} is not a model version (mlModel) or model group (mlModelGroup) URN")
    versions: tuple[ModelVersion, ...]
    if group is None:
        versions = (catalog.model_versions(sources.lineage, [model])[model],)
    else:
        versions = catalog.versions_by_group(sources.lineage, [group]).get(group, ())
    return group, tuple(sorted(versions, key=age))


def model_verdicts(sources: Sources, model: str, *, at_ms: int | None = None) -> VerdictsAnswer:
    """The verdicts of ``model`` (a version or a group) in every incident that evaluated its group, as of
    ``at_ms`` (see the module docstring)."""
    group, versions = model_versions(sources, model)
    if at_ms is not None:
        versions = tuple(v for v in versions if v.trained_at_ms is None or v.trained_at_ms <= at_ms)
    (answer,) = verdicts_over(sources, [(model, group, versions)], incident_analyses(sources, at_ms), at_ms)
    return answer


def verdicts_over(
    sources: Sources,
    models: Sequence[tuple[str, str | None, Sequence[ModelVersion]]],
    analyses: Sequence[IncidentAnswer],
    at_ms: int | None,
) -> list[VerdictsAnswer]:
    """The verdicts answer of each ``(model, its group or None, its versions oldest first)`` from the incident
    analyses ``analyses`` (:func:`incident_analyses` as of ``at_ms``, in its order), every group decided at once."""
    from pareis.answers.decisions import decide, reaches_from
    from pareis.core.graph import Memo

    keys = {group or model for model, group, _ in models}
    reaches = reaches_from(a.facts for a in analyses)
    decisions = decide(sources, Memo(sources.lineage), reaches, at_ms, keys)
    return [
        verdicts_of(model, group, versions, analyses, decisions[group or model]) for model, group, versions in models
    ]


def verdicts_of(
    model: str,
    group: str | None,
    versions: Sequence[ModelVersion],
    analyses: Iterable[IncidentAnswer],
    decision: Recommendation,
) -> VerdictsAnswer:
    """The verdicts answer of ``model`` (whose group is ``group``, None for a version in no group; ``versions``
    oldest first) from the incident analyses ``analyses`` (in :func:`incident_analyses`' order), with the
    ``decision`` about its group."""
    key = group or model
    reached = []
    for answer in analyses:
        for evaluated in answer.facts.contamination:
            if evaluated.group == key:
                reached.append((answer, evaluated))
    return VerdictsAnswer(model, group, tuple(versions), tuple(reached), decision)
