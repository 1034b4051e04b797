"""Reliability scores and ranked test gaps over a :class:`~pareis.answers.sources.Sources` (DESIGN §2.5, §6).

* :func:`dataset_score` — one dataset's score (its sibling class's), e.g. for the retrain gate's check 9;
* :func:`model_score` — one model version's;
* :func:`protect` — the answer of ``pareis protect`` (and the MCP tool ``get_reliability``): scores of the datasets
  upstream of the targets and of the target models, and the gaps in rank order with their dbt tests.

The computation is :mod:`pareis.core.protect`; this module fetches what the core needs from the ports: the runs of
the assertions of each upstream sibling class (from 30 days before ``at``, plus the latest one before that) and
the past incidents (every incident in the run history that began at or before ``at``) with their affected
columns (:func:`pareis.core.blast.blast_radius`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pareis.answers import time_travel
from pareis.answers.blast import require_dataset
from pareis.answers.exposure import ExposureReader, past_incident_columns
from pareis.answers.incidents import incident_list
from pareis.answers.sources import CannotEvaluate
from pareis.answers.versions import model_versions, trained_by
from pareis.core import catalog, dbt_tests
from pareis.core.blast import blast_radius
from pareis.core.gaps import Gap
from pareis.core.graph import LineageView, Memo
from pareis.core.protect import Survey, assess, covers, dataset_scores_of, survey
from pareis.core.reliability import INCIDENT_WINDOW_MS, Score
from pareis.core.runs import AssertionRun
from pareis.core.upstream import ModelUpstream

if TYPE_CHECKING:
    from pareis.answers.incidents import IncidentSummary
    from pareis.answers.sources import Sources
    from pareis.core.impact import BlastRadius

MODEL_PREFIX = "urn:li:mlModel:"
GROUP_PREFIX = "urn:li:mlModelGroup:"
DATASET_PREFIX = "urn:li:dataset:"


@dataclass(frozen=True)
class ProtectAnswer:
    """``pareis protect --json``: scores, gaps in rank order, and the gaps' tests as one ``schema.yml``."""

    evaluated_at_ms: int
    datasets: tuple[Score, ...]
    models: tuple[Score, ...]
    gaps: tuple[Gap, ...]
    yaml: str
    exposure: dict[str, Any] | None = None
    """The exposure index snapshot the answer read (:meth:`pareis.answers.exposure.ExposureReader.age`), None when
    the lineage was walked. Not part of the JSON contract: the answer is the same either way."""

    def to_json(self) -> dict[str, Any]:
        return {
            "evaluated_at_ms": self.evaluated_at_ms,
            "datasets": [s.to_json() for s in self.datasets],
            "models": [s.to_json() for s in self.models],
            "gaps": [g.to_json() for g in self.gaps],
            "time_travel": time_travel.field(time_travel.PROTECT),
        }


def _cannot(reason: str) -> Exception:
    return CannotEvaluate(reason)


def _runs(sources: Sources, s: Survey, at_ms: int) -> dict[str, list[AssertionRun]]:
    """Class key → the runs the scores need (see the module docstring), read in two round trips for every class
    together: the assertions with runs on each member, then one timeline of all of them, split by class."""
    floor = at_ms - INCIDENT_WINDOW_MS
    members = sorted({m for cls in s.classes.values() for m in cls.members})
    with_runs = sources.runs.assertions_by_dataset(members) if members else {}
    names = {
        key: set(cls.assertions).union(*(with_runs.get(m, ()) for m in cls.members)) for key, cls in s.classes.items()
    }
    every = set().union(*names.values()) if names else set()
    by_assertion: dict[str, list[AssertionRun]] = {}
    for r in sources.runs.timeline(every, floor) if every else ():
        if r.timestamp_ms <= at_ms:
            by_assertion.setdefault(r.assertion, []).append(r)
    out: dict[str, list[AssertionRun]] = {}
    for key, wanted in names.items():
        runs = [r for a in wanted for r in by_assertion.get(a, ())]
        out[key] = sorted(runs, key=lambda r: (r.timestamp_ms, r.assertion))  # the port's timeline order
    return out


def past_incidents(sources: Sources, view: LineageView, at_ms: int) -> list[tuple[IncidentSummary, BlastRadius]]:
    """Every incident of the run history begun at or before ``at`` (newest first, as
    :func:`~pareis.answers.incidents.incident_list` lists them) with its blast radius: the incident's assertions
    together, or its whole dataset when the index defines none of them (as the incidents role does)."""
    out = []
    for summary in incident_list(sources):
        if summary.first_failure_ms > at_ms:
            continue
        defs = catalog.assertions(view, summary.assertions)
        defined = sorted(a for a in summary.assertions if a in defs)
        radius = blast_radius(view, assertions=defined, datasets=[] if defined else [summary.dataset])
        out.append((summary, radius))
    return out


def dataset_scores(
    sources: Sources,
    datasets: Iterable[str],
    at_ms: int,
    *,
    models: Iterable[str] = (),
    view: LineageView | None = None,
    reader: ExposureReader | None = None,
) -> dict[str, Score]:
    """The reliability score (DESIGN §2.5) of each of ``datasets`` at ``at_ms``, exactly as :func:`protect` with
    ``model`` = ``models`` scores it: the one dataset score of ``pareis protect``, the gate's check 9 (``models`` = the
    evaluated version) and ``io.pareis.reliability_score`` (no ``models``). A class's coverage counts every column of
    its schemas that feeds any model or feature; ``models`` only adds the columns their walk names that no schema lists
    (a feature linked by name into a dataset whose schema is unknown). Unknown datasets score as having nothing."""
    wanted = sorted(set(datasets))
    if not wanted:
        return {}
    memo = view if isinstance(view, Memo) else Memo(view or sources.lineage)
    s = survey(memo, models=models, datasets=wanted, exposed=reader or ExposureReader.of(sources))
    scored, _, _, _ = assess(s, _runs(sources, s, at_ms), {}, at_ms, max_gaps=0)
    keep = set(wanted)
    return {sc.urn: sc for sc in scored if sc.urn in keep}


def version_dataset_scores(
    sources: Sources,
    upstream: Mapping[str, ModelUpstream],
    at_ms: int,
    *,
    view: Memo,
    reader: ExposureReader | None = None,
    survey: Survey | None = None,
) -> dict[str, dict[str, Score]]:
    """For each model version of ``upstream`` (version → its upstream), what :func:`dataset_scores` gives for its
    upstream datasets with ``models`` = that version (the retrain gate's check 9), from one survey and one read of
    runs for them all (the scores role's gates of a batch; :func:`pareis.core.protect.dataset_scores_of`).
    ``survey``: a survey over ``view`` the caller has; the versions it covers (:func:`~pareis.core.protect.covers`)
    are scored from it, the others from one survey of them."""
    given = sorted(v for v, up in upstream.items() if survey is not None and covers(survey, up))
    rest = sorted(v for v in upstream if v not in given)
    out: dict[str, dict[str, Score]] = {}
    for s, versions in ((survey, given), (_surveyed(view, sources, rest, reader) if rest else None, rest)):
        if s is None or not versions:
            continue
        runs: defaultdict[str, list[AssertionRun]] = defaultdict(list, _runs(sources, s, at_ms))
        found = dataset_scores_of(s, {v: upstream[v] for v in versions}, runs.__getitem__, at_ms)
        out.update({v: {sc.urn: sc for sc in scores} for v, scores in found.items()})
    return out


def _surveyed(view: Memo, sources: Sources, versions: Sequence[str], reader: ExposureReader | None) -> Survey:
    """The survey of ``versions`` (it covers them: what check 9 scores)."""
    return survey(view, models=versions, exposed=reader or ExposureReader.of(sources), walks=sources.walks)


def dataset_score(sources: Sources, dataset: str, at_ms: int) -> Score:
    """The reliability score of ``dataset`` at ``at_ms`` (DESIGN §2.5). CannotEvaluate for an unknown dataset."""
    view = Memo(sources.lineage)
    require_dataset(view, sources.runs, dataset)
    return dataset_scores(sources, [dataset], at_ms, view=view)[dataset]


def model_score(sources: Sources, model: str, at_ms: int) -> Score:
    """The reliability score of a model version. CannotEvaluate for an unknown model or a model group (score its
    versions)."""
    view = Memo(sources.lineage)
    versions = model_versions(view, model)
    if len(versions) != 1 or versions[0] != model:
        raise _cannot(f"{model} is a model group; score one of its versions")
    s = survey(view, models=versions, exposed=ExposureReader.of(sources))
    _, models, _, _ = assess(s, _runs(sources, s, at_ms), {}, at_ms, max_gaps=0)
    return models[0]


def protect(
    sources: Sources,
    *,
    at_ms: int,
    model: str | None = None,
    dataset: str | None = None,
    max_gaps: int | None = None,
    legacy: bool = False,
    use_index: bool = True,
) -> ProtectAnswer:
    """Scores and ranked gaps for ``model`` (a version, or every version of a group), ``dataset``, or, with
    neither, every live model version in the index. CannotEvaluate for an unknown model or dataset, or both
    given. ``use_index=False`` walks the lineage and analyses every past incident even when the sources have an
    exposure index (the same answer; the benchmarks' baseline)."""
    if model is not None and dataset is not None:
        raise _cannot("give --model or --dataset, not both")
    view = Memo(sources.lineage)
    models: Sequence[str] = ()
    datasets: Iterable[str] = ()
    if model is not None:
        models = model_versions(view, model, at_ms)
    elif dataset is not None:
        require_dataset(view, sources.runs, dataset)
        datasets = [dataset]
    else:
        every = sources.lineage.entities("mlModelProperties")
        flags = catalog.flags(view, every)
        models = trained_by(view, [m for m in every if not flags[m].removed], at_ms)
    reader = ExposureReader.of(sources) if use_index else ExposureReader(None)
    s = survey(view, models=models, datasets=datasets, exposed=reader)
    runs = _runs(sources, s, at_ms)
    if use_index:
        incidents = past_incident_columns(sources, view, at_ms, reader)
    else:  # the walk and the analysed incident list, as before the index (the benchmarks' baseline)
        incidents = {summary.urn: frozenset(radius.columns) for summary, radius in past_incidents(sources, view, at_ms)}
    scored, model_scores, gaps, entries = assess(
        s, runs, incidents, at_ms, max_gaps=max_gaps, legacy=legacy, existing=lambda ms: trained_by(view, ms, at_ms)
    )
    if dataset is not None:
        members = set(s.classes[s.class_of[dataset]].members)
        scored = [sc for sc in scored if sc.urn in members]
    return ProtectAnswer(
        evaluated_at_ms=at_ms,
        datasets=tuple(scored),
        models=tuple(model_scores),
        gaps=tuple(gaps),
        yaml=dbt_tests.schema_yml(entries, legacy=legacy) if entries else "",
        exposure=reader.age(at_ms),
    )


def reliability(
    sources: Sources, urn: str, *, at_ms: int, include_gaps: bool = True, max_gaps: int | None = None
) -> ProtectAnswer:
    """The answer of the MCP tool ``get_reliability``: :func:`protect` of a dataset URN or a model (version or
    group) URN; ``include_gaps=False`` leaves the gaps (and their YAML) out."""
    if urn.startswith(DATASET_PREFIX):
        answer = protect(sources, at_ms=at_ms, dataset=urn, max_gaps=max_gaps if include_gaps else 0)
    elif urn.startswith((MODEL_PREFIX, GROUP_PREFIX)):
        answer = protect(sources, at_ms=at_ms, model=urn, max_gaps=max_gaps if include_gaps else 0)
    else:
        raise _cannot(f"not a dataset or model URN: {urn}")
    return answer
