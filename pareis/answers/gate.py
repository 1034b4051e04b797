"""The retrain gate (DESIGN §2.4): "may this model be retrained (or this version promoted) at ``at``?"

:func:`gate` resolves the model (a version, or a group's newest version at ``at``), gathers what the ten checks of
:mod:`pareis.core.gate` read — from the lineage index (features, sources, the upstream columns and datasets,
assertion definitions, schemas, deprecation), the run history (latest runs at or before ``at``, dataset
modifications, the incidents of :mod:`pareis.answers.reach`) and the reliability score — and evaluates them.

Upstream of the evaluated version: the one upstream (:func:`pareis.core.upstream.model_upstream`, DESIGN §2.1) —
the columns feeding its features (their links, keys' links, column ancestors with sibling twins and containment),
at table precision the dataset sources without a column named like the feature and, for a model that lists no
features, the datasets its training runs read (with the columns feeding those); the datasets of all of them.
Upstream assertions are those the index defines on them, and the assertions it does not define that ran on an
upstream dataset (dataset-level).

:class:`GateAnswer`'s JSON (``pareis gate --json``, the MCP tool ``check_retrain_gate``) is published as a JSON
Schema in ``schemas/pareis/gate.schema.json``; :func:`cannot_evaluate_json` is the exit-2 form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pareis.answers import time_travel
from pareis.answers.gate_reads import GateReads, Scores
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.answers.versions import MODEL, kind_of, model_versions, read_ahead
from pareis.core import catalog
from pareis.core.contamination import ModelVersion
from pareis.core.gate import (
    HOUR_MS,
    GateResult,
    Policy,
    Status,
    evaluate,
)
from pareis.core.gate_inputs import GateInputs
from pareis.core.graph import Memo
from pareis.core.protect import Survey
from pareis.errors import Poison

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class GateAnswer:
    """The gate's answer for ``model`` (as asked) on ``evaluated`` (the version read) at ``evaluated_at_ms``."""

    model: str
    evaluated: str
    evaluated_at_ms: int
    result: GateResult
    version: str | None = None

    @property
    def decision(self) -> str:
        return self.result.decision.value

    @property
    def exit_code(self) -> int:
        return self.result.exit_code

    def to_json(self) -> dict[str, Any]:
        rollback = self.result.safe_rollback
        override = self.result.override_reason
        return {
            "checks": [c.to_json() for c in self.result.checks],
            "decision": self.decision,
            "evaluated": self.evaluated,
            "evaluated_at_ms": self.evaluated_at_ms,
            "exit_code": self.exit_code,
            "incidents": list(self.result.incidents),
            "model": self.model,
            "override": None if override is None else {"reason": override},
            "safe_rollback": None if rollback is None else {"urn": rollback.urn, "version": rollback.version},
            "time_travel": time_travel.field(time_travel.GATE),
        }


def cannot_evaluate_json(model: str, reason: str) -> dict[str, Any]:
    """The ``--json`` object of an exit-2 answer (DESIGN §2.4)."""
    return {"decision": "CANNOT_EVALUATE", "exit_code": 2, "model": model, "reason": reason}


MODEL_ERRORS = (CannotEvaluate, Poison, ValueError)
"""What makes one model's question unanswerable (exit 2) without saying anything of the others': an unknown or
removed model, nothing to check, data of its own the gate cannot read."""


def gate(
    sources: Sources,
    *,
    model: str,
    at_ms: int,
    max_age_hours: float = 24,
    min_score: float = 60,
    strict: bool = False,
    override_reason: str | None = None,
    scores: Scores | None = None,
    use_index: bool = True,
) -> GateAnswer:
    """The gate's answer for ``model`` at ``at_ms``.

    ``scores`` gives the upstream datasets' reliability at ``at_ms`` (default: the scores :func:`reliability_scores`
    gives, computed for every version of the question at once by :class:`~pareis.answers.gate_reads.GateReads`, read
    from the exposure index when the sources have one, unless ``use_index`` is False: then walked, as before the index —
    the same scores; the benchmark's baseline). Raises
    :class:`CannotEvaluate` for a URN that is not a model or group the index knows, a group without versions,
    and a version that lists no features and has no training runs.
    """
    policy = _policy(max_age_hours, min_score, strict, override_reason)
    answer = _answers(sources, [model], at_ms, policy, scores, use_index)[model]
    if isinstance(answer, Exception):
        raise answer
    return answer


def gates(
    sources: Sources,
    *,
    models: Sequence[str],
    at_ms: int,
    max_age_hours: float = 24,
    min_score: float = 60,
    strict: bool = False,
    override_reason: str | None = None,
    view: Memo | None = None,
    survey: Survey | None = None,
) -> dict[str, GateAnswer | Exception]:
    """:func:`gate` for each of ``models`` at ``at_ms``: the answer, or the :data:`MODEL_ERRORS` exception
    :func:`gate` raises for it. Each answer is :func:`gate`'s byte for byte, but the models share one view of the
    index (``view``, the caller's view of ``sources.lineage`` when it has one) and what every question asks alike —
    the candidate incidents, one walk up for every evaluated version and its region, each incident's analysis, one
    survey for the scores (``survey``, the caller's survey of model versions over ``view`` when it has one: the
    versions it surveyed are not walked or surveyed again) — so many cost little more than one (the scores role asks
    the models downstream of a batch of runs). An error of the shared part that belongs to one model
    (:data:`MODEL_ERRORS`) makes each model be asked on its own; anything else (a store down) raises."""
    policy = _policy(max_age_hours, min_score, strict, override_reason)
    return _answers(sources, models, at_ms, policy, None, True, view, survey)


def _policy(max_age_hours: float, min_score: float, strict: bool, override_reason: str | None) -> Policy:
    if max_age_hours <= 0:
        raise CannotEvaluate(f"--max-age-hours must be positive, got {max_age_hours:g}")
    if override_reason is not None and not override_reason.strip():
        raise CannotEvaluate("--override-reason must say why")
    return Policy(round(max_age_hours * HOUR_MS), min_score, strict, override_reason)


def _answers(
    sources: Sources,
    models: Sequence[str],
    at_ms: int,
    policy: Policy,
    scores: Scores | None,
    use_index: bool,
    view: Memo | None = None,
    survey: Survey | None = None,
) -> dict[str, GateAnswer | Exception]:
    """:func:`gates` with ``scores`` (None: as :func:`reliability_scores` gives them, for all the versions at once,
    through the index unless ``use_index`` is False)."""
    view = view if view is not None else Memo(sources.lineage)
    out: dict[str, GateAnswer | Exception] = {}
    evaluated: dict[str, ModelVersion] = {}
    # An error here is one model's own (its data unreadable): the loop below meets it again, for that model alone.
    with suppress(*MODEL_ERRORS):
        read_ahead(view, sorted(set(models)))
    for model in sorted(set(models)):
        try:
            evaluated[model] = version = _evaluated(view, model, at_ms)
            info = catalog.models(view, [version.urn])[version.urn]
            if not info.features and not info.training_runs:
                raise CannotEvaluate(f"{version.urn} lists no features and has no training runs: nothing to check")
        except MODEL_ERRORS as exc:
            out[model] = exc
            evaluated.pop(model, None)
    versions = sorted({v.urn for v in evaluated.values()})
    try:
        shared = GateReads.of(view, sources, versions, at_ms, scores, use_index, survey)
    except MODEL_ERRORS as exc:
        if len(evaluated) == 1:
            return {**out, **dict.fromkeys(evaluated, exc)}
        for model in evaluated:  # whose error it is: each on its own
            out.update(_answers(sources, [model], at_ms, policy, scores, use_index, view, survey))
        return out
    inputs: dict[str, GateInputs] = {}
    for model, version in evaluated.items():
        try:
            if version.urn not in inputs:
                inputs[version.urn] = shared.inputs(version.urn)
            asked = replace(inputs[version.urn], model=model, is_group=model != version.urn)
            out[model] = GateAnswer(model, version.urn, at_ms, evaluate(asked, policy), version.version)
        except MODEL_ERRORS as exc:
            out[model] = exc
    return out


def _evaluated(view: Memo, model: str, at_ms: int) -> ModelVersion:
    """The version to evaluate: ``model`` itself, or a group's newest version trained at or before ``at_ms``
    (:func:`pareis.answers.versions.model_versions`)."""
    if kind_of(model) == MODEL:
        return catalog.model_versions(view, model_versions(view, model))[model]
    found = catalog.model_versions(view, model_versions(view, model, at_ms)).values()
    return max(found, key=_newest)


def _newest(v: ModelVersion) -> tuple[bool, int, tuple[int, int | str], str]:
    """By training time (known times first), else version label (numbers numerically), else URN."""
    label = v.version or ""
    number: tuple[int, int | str] = (1, int(label)) if label.isdigit() else (0, label)
    return (v.trained_at_ms is not None, v.trained_at_ms or 0, number, v.urn)


def gather(
    view: Memo, sources: Sources, model: str, version: str, at_ms: int, scores: Scores | None = None
) -> GateInputs:
    """What the ten checks read for ``version`` at ``at_ms`` (see the module docstring)."""
    inputs = GateReads.of(view, sources, [version], at_ms, scores, True).inputs(version)
    return replace(inputs, model=model, is_group=model != version)


def reliability_scores(
    sources: Sources, view: Memo, at_ms: int, version: str | None = None, *, use_index: bool = True
) -> Scores:
    """The reliability score of DESIGN §2.5 of many datasets at once for one version, as ``pareis protect --model
    VERSION`` gives them: the reference the gate's own scores of many versions at once
    (:func:`pareis.answers.reliability.version_dataset_scores`) are tested against
    (:func:`pareis.answers.reliability.dataset_scores`: one implementation), read over the gate's memo: what
    lies downstream of their columns from the exposure index when the sources have one (and ``use_index``), else
    walked."""

    def scores(datasets: Sequence[str]) -> Mapping[str, float]:
        from pareis.answers.exposure import ExposureReader
        from pareis.answers.reliability import dataset_scores

        reader = ExposureReader.of(sources) if use_index else ExposureReader(None)
        found = dataset_scores(sources, datasets, at_ms, models=[version] if version else (), view=view, reader=reader)
        return {urn: score.score for urn, score in found.items() if score.score is not None}

    return scores


__all__ = ["GateAnswer", "Scores", "Status", "cannot_evaluate_json", "gate", "reliability_scores"]
