"""Which model versions a model URN names at a time ``at`` (DESIGN §2.3, §2.4): one rule for the gate, protect and
the evidence pack, so that a model one of them answers for is never "unknown" to another.

* An ``mlModel`` is known when the index holds a live ``mlModelProperties`` or ``versionProperties`` record of it,
  whatever it lists (no group, no features, no training time: known, and the answers say what is missing); a
  removed one is unknown, and the reason says it is removed.
* An ``mlModelGroup`` names its live members; at ``at``, those trained at or before it or of an unknown training
  time (nothing says they did not exist then). A group known only by its ``mlModelGroupProperties`` has no version
  to answer for, and the reason says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from pareis.answers.sources import CannotEvaluate
from pareis.core import catalog
from pareis.core.fieldpath import entity_type
from pareis.core.graph import LineageView, Memo
from pareis.core.incident_text import iso

MODEL, GROUP = "mlModel", "mlModelGroup"
MODEL_ASPECTS = ("mlModelProperties", "versionProperties")
GROUP_ASPECTS = ("mlModelGroupProperties",)


def kind_of(model: str) -> str:
    """``mlModel`` or ``mlModelGroup``; CannotEvaluate for anything else."""
    try:
        kind = entity_type(model)
    except ValueError as exc:
        raise CannotEvaluate(f"--model {model!r} is not a URN") from exc
    if kind not in (MODEL, GROUP):
        raise CannotEvaluate(f"--model must be an mlModel or mlModelGroup URN, got a {kind}")
    return kind


def model_versions(view: Memo, model: str, at_ms: int | None = None) -> list[str]:
    """The versions ``model`` names (see the module docstring): itself for a known ``mlModel`` — with ``at_ms``,
    only when it existed then — and a group's live members existing at ``at_ms`` (every live member without it),
    sorted. CannotEvaluate when there is none, with the reason."""
    kind = kind_of(model)
    if kind == MODEL:
        if not view.recorded(model, MODEL_ASPECTS):
            raise CannotEvaluate(f"unknown model {model}: the index has no live mlModelProperties for it")
        if view.removed([model]):
            raise CannotEvaluate(f"unknown model {model}: it is removed (status.removed)")
        if at_ms is not None and not trained_by(view, [model], at_ms):
            when = catalog.model_versions(view, [model])[model].trained_at_ms
            raise CannotEvaluate(f"model {model} was trained at {iso(when or 0)}, after {iso(at_ms)}")
        return [model]
    members = sorted(catalog.group_members(view, [model])[model])
    removed = view.removed(members)
    live = [m for m in members if m not in removed]
    if not live:
        if view.recorded(model, GROUP_ASPECTS):
            raise CannotEvaluate(f"model group {model} has no version in the index")
        raise CannotEvaluate(f"unknown model group {model}")
    if at_ms is not None:
        live = trained_by(view, live, at_ms)
        if not live:
            raise CannotEvaluate(f"model group {model} has no version trained at or before {iso(at_ms)}")
    return live


def read_ahead(view: Memo, models: Sequence[str]) -> None:
    """Read into ``view`` at once what :func:`model_versions` reads of each of ``models`` (the scores role's gates ask
    hundreds): a model's records and removal, a group's members and theirs, and every one's training time. Each
    model's own call then reads the memo: the same answers, in a few round trips instead of a few per model. What
    is not a model URN is left to that call (its error)."""
    kinds: dict[str, str] = {}
    for model in models:
        try:
            kinds[model] = kind_of(model)
        except CannotEvaluate:
            continue
    versions = sorted(m for m, kind in kinds.items() if kind == MODEL)
    members = catalog.group_members(view, sorted(m for m, kind in kinds.items() if kind == GROUP))
    every = sorted(set(versions).union(*members.values()))
    view.recorded_of(versions, MODEL_ASPECTS)
    view.removed(every)
    catalog.model_versions(view, every)


def trained_by(view: LineageView, versions: Sequence[str], at_ms: int) -> list[str]:
    """The ``versions`` that existed at ``at_ms``: trained (DESIGN §2.3's training time) at or before it, or of an
    unknown training time (kept: nothing says they did not exist). Order kept."""
    when = catalog.model_versions(view, versions)
    return [m for m in versions if (t := when[m].trained_at_ms) is None or t <= at_ms]
