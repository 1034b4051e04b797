"""The retrain gate's decisions on ``pareis.gate.v1``, from the scores role (DESIGN §1, §2.4: continuous learners).

For a batch of run signals, the models whose upstream its datasets touch — the model versions downstream of their
classes' columns (what :class:`~pareis.roles.scores.ScorePublisher` scores) and those versions' groups — are asked
the gate at the batch's latest run time (never the wall clock: a redo asks the same question). A model's answer is
published (key = its URN, value = the bytes ``pareis gate --json`` prints, without the final newline) only when its
decision or the version it evaluated differs from what was last published for it
(:class:`~pareis.store.gates.GateLedger`), and never from an evaluation older than the latest one recorded (a late
run does not roll a decision back). The topic is compacted: its latest record per model is the current decision.

The gate itself is a port (:data:`Gate`): the composition root gives the answers layer's
(:func:`pareis.compose.gates.gate_decisions`), so what a learner reads is what the CLI answers. The ledger is written
when the batch is computed, before its records are delivered, with the position of the signals that caused each
publication (:class:`~pareis.roles.span.BatchSpan`): a redo publishes again what an earlier attempt may not have
delivered; an unchanged decision only advances the recorded evaluation time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pareis.contracts.records import OutRecord
from pareis.core import catalog
from pareis.core.graph import Memo
from pareis.core.protect import Survey
from pareis.roles.span import BatchSpan
from pareis.store.gates import Decided, GateLedger

CANNOT_EVALUATE = "CANNOT_EVALUATE"
"""The decision of a model the gate cannot evaluate (the CLI's exit 2)."""


@dataclass(frozen=True)
class Decision:
    """The gate's answer for ``model`` at ``at_ms``: its decision (``GO``, ``NO-GO``, ``CANNOT_EVALUATE``), the
    version evaluated (``""`` when it could not evaluate) and ``text``, the JSON ``pareis gate --json`` prints."""

    model: str
    decision: str
    evaluated: str
    at_ms: int
    text: str


Gate = Callable[[Memo, Sequence[str], int, Survey | None], list[Decision]]
"""The gate's answers for ``models`` at ``at_ms``, one per model in the order given, reading the lineage index through
the batch's view and, when given, the survey of the versions downstream (:class:`~pareis.core.protect.Survey`, over
that view): what the batch's scores asked and found is not asked or found again. A dependency that is down raises
:class:`~pareis.errors.Retriable`; a model the gate cannot evaluate is a ``CANNOT_EVALUATE`` decision."""


@dataclass
class GatePublisher:
    """The gate records of a batch (see the module docstring)."""

    ledger: GateLedger
    gate: Gate
    topic: str

    def records(
        self,
        view: Memo,
        downstream: Mapping[str, Sequence[str]],
        at_ms: int,
        span: BatchSpan,
        survey: Survey | None = None,
    ) -> list[OutRecord]:
        """The records for the models downstream of the batch's datasets (``downstream``: dataset → model versions)
        at ``at_ms``; ``view``, the batch's view of the lineage index (the versions' groups are read from it), and
        ``survey``, the batch's survey of those versions when it has one (given to the gate)."""
        cause: dict[str, str] = {}
        for dataset in sorted(downstream):  # the last dataset touching a model stands for it
            for version in downstream[dataset]:
                cause[version] = dataset
        for version, info in catalog.models(view, sorted(cause)).items():
            if info.group is not None:
                cause[info.group] = max(cause.get(info.group, ""), cause[version])
        known = self.ledger.get(cause)
        redone = {m for m, seen in known.items() if span.redoes(seen.partition, seen.offset)}
        asked = [m for m in sorted(cause) if m in redone or m not in known or known[m].at_ms <= at_ms]
        out: list[OutRecord] = []
        recorded: dict[str, Decided] = {}
        for d in self.gate(view, asked, at_ms, survey) if asked else []:
            seen = known.get(d.model)
            if seen is None or d.model in redone or (d.decision, d.evaluated) != (seen.decision, seen.evaluated):
                out.append(OutRecord(self.topic, d.model.encode(), d.text.encode()))
                recorded[d.model] = Decided(d.decision, d.evaluated, d.at_ms, *span.position(cause[d.model]))
            elif d.at_ms > seen.at_ms:
                recorded[d.model] = seen._replace(at_ms=d.at_ms)  # unchanged: evaluated later, not published
        self.ledger.put(recorded)
        return out
