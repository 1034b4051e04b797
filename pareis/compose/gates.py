"""The retrain gate's published answer (DESIGN §2.4, continuous learners): the answers layer's gate
(:func:`pareis.answers.gate.gate`) as the bytes ``pareis gate --json`` prints (the CLI's defaults: ``max_age_hours``
24, ``min_score`` 60, not strict, no override), for the scores role's records on ``pareis.gate.v1``
(:func:`gate_decisions`, its :data:`~pareis.roles.gates.Gate` port) and Mission Control's ``/api/gate``: one place,
so a learner reads the same bytes on the topic, over HTTP and from the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pareis.answers.gate import cannot_evaluate_json, gates
from pareis.answers.render import dump
from pareis.answers.sources import Sources
from pareis.core.graph import Memo
from pareis.core.protect import Survey
from pareis.roles.batch_reads import RunReads
from pareis.roles.gates import CANNOT_EVALUATE, Decision, Gate


def decision(sources: Sources, model: str, at_ms: int) -> Decision:
    """The gate's answer for ``model`` at ``at_ms``. A model it cannot evaluate (an unknown or removed model, one
    with nothing to check, data it cannot read) is the ``CANNOT_EVALUATE`` object with the CLI's reason; a store
    that is down raises its :class:`~pareis.errors.Retriable` (the CLI would exit 2: do not train)."""
    return decisions(sources, [model], at_ms)[0]


def decisions(
    sources: Sources, models: Sequence[str], at_ms: int, view: Memo | None = None, survey: Survey | None = None
) -> list[Decision]:
    """:func:`decision` of each of ``models`` (in the order given), asked together
    (:func:`pareis.answers.gate.gates`: what they ask alike is read and computed once; ``view`` and ``survey``, the
    caller's view of ``sources.lineage`` and survey of model versions over it, when it has them)."""
    answers = gates(sources, models=models, at_ms=at_ms, view=view, survey=survey)
    out = []
    for model in models:
        answer = answers[model]
        if isinstance(answer, Exception):
            out.append(cannot_evaluate(model, answer, at_ms))
        else:
            out.append(Decision(model, answer.decision, answer.evaluated, at_ms, dump(answer.to_json())))
    return out


def cannot_evaluate(model: str, why: BaseException | str, at_ms: int) -> Decision:
    """The exit-2 answer for ``model``: :func:`~pareis.answers.gate.cannot_evaluate_json` with ``why`` on one line,
    as the CLI says it."""
    reason = " ".join(str(why).split()) or type(why).__name__
    return Decision(model, CANNOT_EVALUATE, "", at_ms, dump(cannot_evaluate_json(model, reason)))


def gate_decisions(sources: Sources) -> Gate:
    """The scores role's gate over ``sources`` (its own stores): :func:`decisions` of the models of one call (one
    batch), over the batch's view of ``sources.lineage`` and one :class:`~pareis.roles.batch_reads.RunReads` (each
    question asked once)."""

    def decide(view: Memo, models: Sequence[str], at_ms: int, survey: Survey | None) -> list[Decision]:
        return decisions(replace(sources, runs=RunReads(sources.runs)), models, at_ms, view, survey)

    return decide


__all__ = ["CANNOT_EVALUATE", "cannot_evaluate", "decision", "decisions", "gate_decisions"]
