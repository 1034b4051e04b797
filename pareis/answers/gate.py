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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from pareis.answers import time_travel
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.answers.versions import MODEL, kind_of, model_versions
from pareis.core import catalog
from pareis.core.contamination import ModelVersion
from pareis.core.fieldpath import parent_of
from pareis.core.gate import (
    HOUR_MS,
    GateResult,
    Policy,
    Status,
    evaluate,
)
from pareis.core.gate_inputs import FeatureState, GateInputs, SourceColumn, UpstreamAssertion
from pareis.core.graph import Memo, Query, Rel, columns_of, sibling_columns, union
from pareis.core.intents import IncidentFacts
from pareis.core.protect import Survey
from pareis.core.runs import AssertionRun
from pareis.core.upstream import ModelUpstream, upstream_walk
from pareis.errors import Poison

if TYPE_CHECKING:
    from pareis.store.runs import RunHistory

Scores = Callable[[Sequence[str]], Mapping[str, float]]
"""The reliability scores (0–100) of datasets at the evaluation time (DESIGN §2.5); a dataset it cannot score is
left out (check 9 does not judge it)."""


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


PRUNE_RATIO = 4
"""Candidate incident classes are pruned (walked up to see which can reach a version) only when there are more than
this many per version asked; with fewer, every one is analysed (see :class:`_Shared`)."""

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

    ``scores`` gives the upstream datasets' reliability at ``at_ms`` (default :func:`reliability_scores`, read from
    the exposure index when the sources have one, unless ``use_index`` is False: then walked, as before the index —
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
    """:func:`gates` with ``scores`` (None: :func:`reliability_scores`, through the index unless ``use_index`` is
    False)."""
    view = view if view is not None else Memo(sources.lineage)
    out: dict[str, GateAnswer | Exception] = {}
    evaluated: dict[str, ModelVersion] = {}
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
        shared = _Shared.of(view, sources, versions, at_ms, scores, use_index, survey)
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
    inputs = _Shared.of(view, sources, [version], at_ms, scores, True).inputs(version)
    return replace(inputs, model=model, is_group=model != version)


@dataclass(frozen=True)
class _Shared:
    """What the gates of model ``versions`` at ``at_ms`` read alike, each read once: the candidate incidents, one walk
    up for every version and its region, each near incident's analysis, and the versions' upstream datasets'
    scores."""

    view: Memo
    at_ms: int
    upstream: Mapping[str, ModelUpstream]
    facts: Mapping[str, list[IncidentFacts]]
    """Per version, the analyses of the incidents near it (see the module docstring: pruning) that give it a
    verdict."""
    scores: Mapping[str, Mapping[str, float]]
    ran: Mapping[str, list[str]]
    """The assertions with runs on each upstream and feature source dataset of every version."""
    latest: Mapping[str, tuple[AssertionRun | None, AssertionRun | None]]
    """The latest runs at ``at_ms`` (:meth:`~pareis.store.runs.RunHistory.latest_of`) of every assertion upstream."""
    modified: Mapping[str, int]
    """The latest change at or before ``at_ms`` of each upstream dataset that has one."""

    @classmethod
    def of(
        cls,
        view: Memo,
        sources: Sources,
        versions: Sequence[str],
        at_ms: int,
        scores: Scores | None,
        use_index: bool,
        survey: Survey | None = None,
    ) -> _Shared:
        """``survey``: a survey of model versions over ``view``; those of ``versions`` it holds are taken from it."""
        from pareis.answers.exposure import ExposureReader
        from pareis.answers.reach import REGION, analysed_by_key, candidates, near
        from pareis.answers.reliability import version_dataset_scores

        infos = catalog.models(view, versions)
        features = sorted({f for info in infos.values() for f in info.features})
        groups = sorted({info.group for info in infos.values() if info.group})
        # One round trip for the features' sources and tables and the groups' versions (read again from the memo).
        view.lookup(
            [
                Query(Rel.FEATURE_SOURCE, features, True),
                Query(Rel.TABLE_FEATURE, features, True),
                Query(Rel.MODEL_GROUP, groups, True),
                Query(Rel.VERSION_OF, groups, True),
            ]
        )
        found = candidates(view, sources.runs)
        # Pruning (the module docstring of pareis.answers.reach) walks up from every candidate; it pays when it
        # spares most of them their analysis. Many versions asked at once are near most candidates (the scores
        # role's burst: near all but 1%), so then every candidate is analysed instead: the same incidents reach
        # each version either way (pruning never drops one that reaches it).
        pruned = len(versions) * PRUNE_RATIO < len(found.members)
        regions: dict[object, set[str]] = {**found.seeds} if pruned else {}
        if pruned:
            regions.update(((REGION, v), _group_inputs(view, infos[v])) for v in versions)
        surveyed = survey.upstream if survey is not None else {}
        walked = upstream_walk(view, [v for v in versions if v not in surveyed], regions)
        ups = {v: surveyed[v] if v in surveyed else walked.models[v] for v in versions}
        every = set(found.members)
        near_to = {v: near(found, walked.regions, (REGION, v)) if pruned else every for v in versions}
        facts = analysed_by_key(view, sources.runs, at_ms, found, sorted(set().union(*near_to.values())))
        if scores is not None:
            scored = {v: dict(scores(sorted(ups[v].datasets))) for v in versions}
        else:
            reader = ExposureReader.of(sources) if use_index else ExposureReader(None)
            found_scores = version_dataset_scores(sources, ups, at_ms, view=view, reader=reader, survey=survey)
            scored = {v: {u: sc.score for u, sc in found_scores[v].items() if sc.score is not None} for v in versions}
        # Each version's near incidents that give it a verdict (what reaching keeps), found in one pass over them.
        wanted = set(versions)
        near_facts: dict[str, list[IncidentFacts]] = {v: [] for v in versions}
        for key in sorted(facts):
            for f in facts[key]:
                given = {v.version.urn for g in f.contamination for v in g.versions} & wanted
                for v in sorted(given):
                    if key in near_to[v]:
                        near_facts[v].append(f)
        ran, latest, modified = _read_ahead(view, sources.runs, ups.values(), at_ms)
        return cls(view, at_ms, ups, near_facts, scored, ran, latest, modified)

    def _upstream_assertions(self, up: ModelUpstream) -> tuple[UpstreamAssertion, ...]:
        picked = checked_assertions(self.view, self.ran, [up])
        return tuple(UpstreamAssertion(n, *picked[n], *self.latest[n]) for n in sorted(picked))

    def inputs(self, version: str) -> GateInputs:
        """What the ten checks read for ``version`` (as asked by itself: :func:`gate` sets the model asked)."""
        from pareis.answers.reach import dataset_of, reaching

        view, at_ms = self.view, self.at_ms
        up = self.upstream[version]
        features = sorted(up.features)
        sources_of = up.sources
        datasets = sorted(up.datasets)
        source_datasets = sorted({dataset_of(s) for f in features for s in sources_of[f]})
        # One round trip for every lookup below that the walk did not answer (they then read the memo).
        view.lookup(
            [
                *_known_queries(source_datasets),
                Query(Rel.HAS_COLUMN, sorted({parent_of(c) for c in up.source_columns})),
            ]
        )

        # A feature with a source is indexed; one without needs its record read to tell "no source" from "unknown".
        known = {f for f in features if sources_of[f] or view.recorded(f, ["mlFeatureProperties"])}
        known_datasets = _known_datasets(view, self.ran, set(source_datasets))
        removed_sources = up.removed_sources
        feature_states = tuple(
            FeatureState(
                f,
                f in known,
                tuple(sorted(sources_of[f] | removed_sources[f])),
                tuple(sorted(s for s in sources_of[f] if dataset_of(s) not in known_datasets)),
                removed_sources=tuple(sorted(removed_sources[f])),
            )
            for f in features
        ) + tuple(FeatureState(f, False, removed=True) for f in up.removed_features)
        feature_states = tuple(sorted(feature_states, key=lambda state: state.urn))

        # Schemas and coverage of the source columns.
        direct = up.source_columns
        source_schemas = columns_of(view, {parent_of(c) for c in direct})
        twins = sibling_columns(view, direct)
        named_by = view.lookup([Query(Rel.ASSERTS_COLUMN, sorted(direct | union(twins)), True)])[0]
        columns = tuple(
            SourceColumn(
                c,
                bool(source_schemas[parent_of(c)]),
                c in source_schemas[parent_of(c)],
                tuple(sorted(named_by[c].union(*(named_by[t] for t in twins[c])))),
            )
            for c in sorted(direct)
        )

        flags = catalog.flags(view, [*datasets, *features])
        return GateInputs(
            model=version,
            evaluated=version,
            is_group=False,
            at_ms=at_ms,
            features=feature_states,
            source_columns=columns,
            upstream_datasets=tuple(datasets),
            deprecated=tuple(sorted(u for u, f in flags.items() if f.deprecated)),
            assertions=self._upstream_assertions(up),
            modified_ms={d: self.modified[d] for d in datasets if d in self.modified},
            incidents=reaching(self.facts[version], version),
            scores=self.scores[version],
        )


def _group_inputs(view: Memo, info: catalog.ModelInfo) -> set[str]:
    """The datasets every version of ``info``'s group (or ``info`` alone) reads: its features' source datasets and
    its training runs' inputs — what an incident must reach, at table level, to reach the version."""
    from pareis.answers.reach import region_of

    versions = {info.urn}
    if info.group is not None:
        versions |= catalog.group_members(view, [info.group])[info.group]
    return region_of(view, versions)


def _known_datasets(view: Memo, ran: Mapping[str, list[str]], datasets: set[str]) -> set[str]:
    """Those of ``datasets`` the index has any fact about: a schema, lineage, a sibling, an assertion, a run
    (``ran``: the assertions with runs on each of them)."""
    nodes = sorted(datasets)
    answers = view.lookup(_known_queries(nodes))
    found = {d for d in nodes if any(a[d] for a in answers)}
    return found | {d for d in nodes if d not in found and ran[d]}


def _known_queries(nodes: list[str]) -> list[Query]:
    """What tells whether the index knows a dataset: a schema, lineage either way, a sibling, an assertion, a
    process reading or writing it."""
    return [
        Query(Rel.HAS_COLUMN, nodes),
        Query(Rel.DATASET, nodes),
        Query(Rel.DATASET, nodes, True),
        Query(Rel.SIBLING, nodes),
        Query(Rel.SIBLING, nodes, True),
        Query(Rel.ASSERTS, nodes, True),
        Query(Rel.READS, nodes),
        Query(Rel.WRITES, nodes, True),
    ]


def upstream_assertions(view: Memo, runs: RunHistory, ups: Iterable[ModelUpstream]) -> dict[str, Checked]:
    """The upstream assertions of the versions ``ups`` (DESIGN §2.4): those the index defines on their upstream
    (:attr:`~pareis.core.upstream.ModelUpstream.assertions`) and, dataset-level, those it does not define that ran
    on an upstream dataset — each with the datasets it checks and the upstream columns it names."""
    ups = list(ups)
    ran = runs.assertions_by_dataset(sorted(set().union(*(up.datasets for up in ups))))
    return checked_assertions(view, ran, ups)


def checked_assertions(view: Memo, ran: Mapping[str, list[str]], ups: Iterable[ModelUpstream]) -> dict[str, Checked]:
    """:func:`upstream_assertions` given ``ran``, the assertions with runs on each upstream dataset of ``ups``."""
    ups = list(ups)
    datasets = sorted(set().union(*(up.datasets for up in ups)))
    columns = frozenset().union(*(up.columns for up in ups))
    ran = {d: ran[d] for d in datasets}
    names = set().union(*(up.assertions for up in ups))
    defs = catalog.assertions(view, names.union(*ran.values()))
    picked = {n: Checked(defs[n].datasets, tuple(sorted(set(defs[n].columns) & columns))) for n in sorted(names)}
    for dataset, run_names in ran.items():
        for name in run_names:
            if name not in defs:  # not defined in the index: covers its whole assertee dataset
                seen = picked.get(name, Checked((), ()))
                picked[name] = Checked(tuple(sorted({*seen.datasets, dataset})), ())
    return picked


class Checked(NamedTuple):
    """What an upstream assertion checks: its datasets, and the upstream columns it names (none: dataset-level)."""

    datasets: tuple[str, ...]
    columns: tuple[str, ...]


def _read_ahead(
    view: Memo, runs: RunHistory, ups: Iterable[ModelUpstream], at_ms: int
) -> tuple[dict[str, list[str]], dict[str, tuple[AssertionRun | None, AssertionRun | None]], dict[str, int]]:
    """What the versions ``ups``' inputs read, for all of them at once: into ``view``, the lookups and attributes
    each version's inputs make (each version then reads the memo); from ``runs``, the assertions with runs on each
    upstream and feature source dataset, the latest runs of every upstream assertion, and the latest change of each
    upstream dataset (:class:`_Shared`'s ``ran``, ``latest`` and ``modified``): a few round trips for the batch
    instead of a few per version."""
    from pareis.answers.reach import dataset_of

    ups = list(ups)
    datasets = set().union(*(up.datasets for up in ups))
    features = sorted({f for up in ups for f in up.features})
    sourced = sorted({dataset_of(s) for up in ups for f in up.features for s in up.sources[f]})
    direct = frozenset().union(*(up.source_columns for up in ups))
    view.lookup([*_known_queries(sourced), Query(Rel.HAS_COLUMN, sorted({parent_of(c) for c in direct}))])
    twins = sibling_columns(view, direct)
    view.lookup([Query(Rel.ASSERTS_COLUMN, sorted(direct | union(twins)), True)])
    catalog.flags(view, [*sorted(datasets), *features])
    ran = runs.assertions_by_dataset(sorted(datasets | set(sourced)))
    picked = checked_assertions(view, ran, ups)
    return ran, runs.latest_of(picked, at_ms), runs.last_operations(sorted(datasets), at_ms)


def reliability_scores(
    sources: Sources, view: Memo, at_ms: int, version: str | None = None, *, use_index: bool = True
) -> Scores:
    """The reliability score of DESIGN §2.5 of many datasets at once, as ``pareis protect --model VERSION`` gives
    them (:func:`pareis.answers.reliability.dataset_scores`: one implementation), read over the gate's memo: what
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
