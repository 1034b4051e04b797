"""The retrain gate in the demo: after a step that opens or resolves an incident, ``pareis gate`` of every model
group the incident reaches, over the roles' own stores, at the step's time.

The step's time is the latest ``systemMetadata.lastObserved`` among its proposals (when the connectors wrote it:
after every run of the step), so the gate sees exactly what the roles have processed. Nothing here is demo-only
logic: the answer is :func:`pareis.answers.gate.gate` over a :class:`~pareis.answers.sources.Sources` of the
session's in-memory ports.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pareis.answers.gate import GateAnswer, gate
from pareis.answers.render import dump
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.demo.session import DemoSession, Step, StepOutcome


@dataclass(frozen=True)
class StepGate:
    """The gate's answer for one model group after one step."""

    step: str
    group: str
    answer: GateAnswer


def step_time(step: Step) -> int:
    """The latest ``lastObserved`` of the step's proposals (its start when none says)."""
    seen = [int((p.system_metadata or {}).get("lastObserved") or 0) for p in step.proposals]
    return max([step.at_ms, *seen])


def gates_after(session: DemoSession, outcome: StepOutcome) -> list[StepGate]:
    """The gate of every group an incident that changed in this step reaches, sorted by group."""
    groups = sorted(
        {g.group for _, _, _, facts in outcome.transitions if facts is not None for g in facts.contamination}
    )
    sources = Sources(session.ports.lineage, session.ports.runs, session.ports.incidents, origin="pareis demo")
    at_ms = step_time(outcome.step)
    out = []
    for group in groups:
        try:
            answer = gate(sources, model=group, at_ms=at_ms)
        except CannotEvaluate:  # a model outside any group (its own "group"), or one the index lost: no gate
            continue
        out.append(StepGate(outcome.step.name, group, answer))
    return out


def short(urn: str) -> str:
    """The name inside ``(platform,name,ENV)``, else the part after the last colon."""
    if urn.endswith(")") and "," in urn:
        return urn[urn.index("(") + 1 : -1].split(",")[1]
    return urn.rsplit(":", 1)[-1]


def write_gates(gates: Iterable[StepGate], folder: Path) -> list[Path]:
    """``gate-<group>-<step>.json`` per answer: ``pareis gate --json`` of that group at that step."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for g in gates:
        path = folder / f"gate-{short(g.group)}-{g.step}.json"
        path.write_text(dump(g.answer.to_json()) + "\n")
        written.append(path)
    return written


__all__ = ["StepGate", "gates_after", "short", "step_time", "write_gates"]
