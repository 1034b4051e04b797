"""The retrain gate asked for many models at once (:func:`pareis.answers.gate.gates`, what the scores role asks for
a batch): each answer is, byte for byte, the one :func:`~pareis.answers.gate.gate` gives for that model alone, on
the demo recording at the times its incidents began and healed; and an error that belongs to one model's data
leaves the others answered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from pareis.answers import gate_reads
from pareis.answers.gate import MODEL_ERRORS, gate, gates
from pareis.answers.incidents import incident_list
from pareis.answers.render import dump
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.compose.gates import decisions
from pareis.core.graph import Adjacency, LineageView, Query
from pareis.errors import Poison
from tests.support.recorded import mlflow, recorded_sources

VERSIONS = [mlflow("mlModel", f"{g}_{v}") for g in ("churn", "ltv") for v in range(1, 5)]
GROUPS = [mlflow("mlModelGroup", g) for g in ("churn", "ltv")]
UNKNOWN = mlflow("mlModel", "nobody_1")
MODELS = [*VERSIONS, *GROUPS, UNKNOWN]


def _times(sources: Sources) -> list[int]:
    """Around each incident of the recording: as it began, and after it healed."""
    found = incident_list(sources)
    assert found, "the recording has incidents"
    began = {s.first_failure_ms for s in found}
    healed = {s.healed_ms + 1 for s in found if s.healed_ms is not None}
    return sorted(began | healed)


def _alone(sources: Sources, model: str, at_ms: int) -> str:
    """What the gate says of ``model`` asked alone: its JSON, or its error as ``type: message``."""
    try:
        return dump(gate(sources, model=model, at_ms=at_ms).to_json())
    except MODEL_ERRORS as exc:
        return f"{type(exc).__name__}: {exc}"


def _together(answers: Mapping[str, object], model: str) -> str:
    answer = answers[model]
    if isinstance(answer, Exception):
        return f"{type(answer).__name__}: {answer}"
    return dump(answer.to_json())  # type: ignore[attr-defined]


@pytest.mark.parametrize("ratio", [0, 10**9], ids=["pruned", "every-candidate"])
def test_asked_together_each_answer_is_the_one_asked_alone(ratio: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether the candidate incidents are pruned (``PRUNE_RATIO``: always, never) changes no answer."""
    sources = recorded_sources()
    times = _times(sources)
    decided = set()
    for at_ms in times:
        with monkeypatch.context() as patch:
            patch.setattr(gate_reads, "PRUNE_RATIO", ratio)
            answers = gates(sources, models=MODELS, at_ms=at_ms)
        assert sorted(answers) == sorted(MODELS)
        for model in MODELS:
            assert _together(answers, model) == _alone(sources, model, at_ms), (model, at_ms)
            if not isinstance(answers[model], Exception):
                decided.add(answers[model].decision)  # type: ignore[union-attr]
    assert isinstance(gates(sources, models=[UNKNOWN], at_ms=times[0])[UNKNOWN], CannotEvaluate)
    assert decided == {"GO", "NO-GO"}, "the times chosen see both decisions"


class _Unreadable:
    """A lineage view whose answers about ``node`` are malformed data (Poison), as a broken aspect would be."""

    def __init__(self, view: LineageView, node: str) -> None:
        self._view = view
        self._node = node

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        if any(self._node in q.nodes for q in queries):
            raise Poison(f"malformed aspect of {self._node}")
        return self._view.lookup(queries)

    def __getattr__(self, name: str) -> object:
        return getattr(self._view, name)


@pytest.mark.parametrize("broken", GROUPS)
def test_an_error_of_one_model_s_data_leaves_the_others_answered(broken: str) -> None:
    """One group's lineage cannot be read: the batch's shared reads meet it, so each model is asked on its own —
    those that read it cannot be evaluated (as alone), the others are answered as alone (before the first incident:
    after it, every model's incidents analysis reads both groups)."""
    base = recorded_sources()
    sources = replace(base, lineage=_Unreadable(base.lineage, broken))  # type: ignore[arg-type]
    at_ms = _times(base)[0] - 1
    out = {d.model: d for d in decisions(sources, MODELS, at_ms)}
    failed = {m for m, d in out.items() if d.decision == "CANNOT_EVALUATE"}
    assert UNKNOWN in failed
    assert failed != set(MODELS), "the models that do not read the broken feature are answered"
    for model in MODELS:
        assert out[model].text == dump(_decision_alone(sources, model, at_ms)), model


def _decision_alone(sources: Sources, model: str, at_ms: int) -> dict[str, object]:
    from pareis.answers.gate import cannot_evaluate_json

    try:
        return gate(sources, model=model, at_ms=at_ms).to_json()
    except MODEL_ERRORS as exc:
        return cannot_evaluate_json(model, " ".join(str(exc).split()) or type(exc).__name__)


class _Records:
    """A lineage store that logs which records each call reads."""

    def __init__(self, view: LineageView) -> None:
        self._view = view
        self.asked: list[list[tuple[str, str]]] = []

    def record(self, entity: str, aspect: str) -> object:
        self.asked.append([(entity, aspect)])
        return self._view.record(entity, aspect)  # type: ignore[attr-defined]

    def records(self, keys: Sequence[tuple[str, str]]) -> object:
        self.asked.append(list(keys))
        return self._view.records(keys)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._view, name)


def test_the_models_asked_together_are_read_at_once_not_one_by_one() -> None:
    """What tells the gate each version asked is a known model (its records) is read in one round trip for all of
    them, and each record once (the scores role asks hundreds of models per batch)."""
    base = recorded_sources()
    store = _Records(base.lineage)
    sources = replace(base, lineage=store)  # type: ignore[arg-type]
    at_ms = _times(base)[0]
    answers = gates(sources, models=MODELS, at_ms=at_ms)
    assert {m: _together(answers, m) for m in MODELS} == {m: _alone(base, m, at_ms) for m in MODELS}
    wanted = {(v, a) for v in [*VERSIONS, UNKNOWN] for a in ("mlModelProperties", "versionProperties")}
    reading = [keys for keys in store.asked if wanted & set(keys)]
    assert len(reading) == 1 and wanted <= set(reading[0]), reading
    read = [key for keys in store.asked for key in keys]
    assert len(read) == len(set(read)), "a record read twice"
