"""The retrain gate's published answer (DESIGN §2.4, continuous learners): the answers layer's gate
(:func:`pareis.answers.gate.gate`) as the bytes ``pareis gate --json`` prints (the CLI's defaults: ``max_age_hours``
24, ``min_score`` 60, not strict, no override), for the scores role's records on ``pareis.gate.v1``
(:func:`gate_decisions`, its :data:`~pareis.roles.gates.Gate` port) and Mission Control's ``/api/gate``: one place,
so a learner reads the same bytes on the topic, over HTTP and from the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pareis.answers.gate import cannot_evaluate_json, gate
from pareis.answers.render import dump
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.errors import Poison
from pareis.roles.batch_reads import LineageReads, RunReads
from pareis.roles.gates import CANNOT_EVALUATE, Decision, Gate


def decision(sources: Sources, model: str, at_ms: int) -> Decision:
    """The gate's answer for ``model`` at ``at_ms``. A model it cannot evaluate (an unknown or removed model, one
    with nothing to check, data it cannot read) is the ``CANNOT_EVALUATE`` object with the CLI's reason; a store
    that is down raises its :class:`~pareis.errors.Retriable` (the CLI would exit 2: do not train)."""
    try:
        answer = gate(sources, model=model, at_ms=at_ms)
    except (CannotEvaluate, Poison, ValueError) as exc:
        return cannot_evaluate(model, exc, at_ms)
    return Decision(model, answer.decision, answer.evaluated, at_ms, dump(answer.to_json()))


def cannot_evaluate(model: str, why: BaseException | str, at_ms: int) -> Decision:
    """The exit-2 answer for ``model``: :func:`~pareis.answers.gate.cannot_evaluate_json` with ``why`` on one line,
    as the CLI says it."""
    reason = " ".join(str(why).split()) or type(why).__name__
    return Decision(model, CANNOT_EVALUATE, "", at_ms, dump(cannot_evaluate_json(model, reason)))


def gate_decisions(sources: Sources) -> Gate:
    """The scores role's gate over ``sources`` (its own stores): :func:`decision` of each model, the models of one
    call (one batch) reading the stores through one :mod:`~pareis.roles.batch_reads` (each question asked once)."""

    def decide(models: Sequence[str], at_ms: int) -> list[Decision]:
        batch = replace(sources, lineage=LineageReads(sources.lineage), runs=RunReads(sources.runs))
        return [decision(batch, model, at_ms) for model in models]

    return decide


__all__ = ["CANNOT_EVALUATE", "cannot_evaluate", "decision", "gate_decisions"]
