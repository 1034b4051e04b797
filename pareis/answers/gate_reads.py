"""What the retrain gate reads (:mod:`pareis.answers.gate`) for the model versions of one question — one model, or
the models downstream of a batch of runs, which the scores role asks together — and what each version's ten checks
read of it (:meth:`GateReads.inputs`).

What every version reads alike is read once for all of them: one view of the index (the caller's, when it has one:
the scores role's batch), the candidate incidents (:func:`pareis.answers.reach.candidates`), one walk up for every
version (and, when pruning, every candidate and each version's region), every incident near them analysed once
after one walk of all their blast radii together (:func:`pareis.core.analysis.walk_together`,
:func:`~pareis.core.analysis.shared_blasts`), one survey for check 9's scores (the caller's, for the versions it
covers: :func:`pareis.core.protect.covers`), and the run history's answers for all their upstream datasets and
assertions. Each version's inputs are those it would read alone: :func:`pareis.answers.gate.gate` of one model and
:func:`~pareis.answers.gate.gates` of many give the same answer for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from pareis.answers.sources import Sources
from pareis.core import catalog
from pareis.core.fieldpath import parent_of
from pareis.core.gate_inputs import FeatureState, GateInputs, SourceColumn, UpstreamAssertion
from pareis.core.graph import Memo, Query, Rel, columns_of, sibling_columns, union
from pareis.core.intents import IncidentFacts
from pareis.core.protect import Survey
from pareis.core.runs import AssertionRun
from pareis.core.upstream import ModelUpstream, upstream_walk

if TYPE_CHECKING:
    from pareis.store.runs import RunHistory

Scores = Callable[[Sequence[str]], Mapping[str, float]]
"""The reliability scores (0–100) of datasets at the evaluation time (DESIGN §2.5); a dataset it cannot score is
left out (check 9 does not judge it)."""


PRUNE_RATIO = 4
"""Candidate incident classes are pruned (walked up to see which can reach a version) only when there are more than
this many per version asked; with fewer, every one is analysed (:class:`GateReads`)."""


@dataclass(frozen=True)
class GateReads:
    """What the gates of model ``versions`` at ``at_ms`` read, what they read alike read once (see the module
    docstring); :meth:`inputs` gives each version's."""

    view: Memo
    at_ms: int
    upstream: Mapping[str, ModelUpstream]
    facts: Mapping[str, list[IncidentFacts]]
    """Per version, the analyses of the incidents near it (:mod:`pareis.answers.reach`: pruning) that give it a
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
    ) -> GateReads:
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
            regions.update(((REGION, v), group_inputs(view, infos[v])) for v in versions)
        surveyed = survey.upstream if survey is not None else {}
        # With a cache (the scores role's), the regions of the same past failures are walked once per generation.
        walked = upstream_walk(view, [v for v in versions if v not in surveyed], regions, walks=sources.walks)
        ups = {v: surveyed[v] if v in surveyed else walked.models[v] for v in versions}
        every = set(found.members)
        near_to = {v: near(found, walked.regions, (REGION, v)) if pruned else every for v in versions}
        keys = sorted(set().union(*near_to.values()))
        facts = analysed_by_key(view, sources.runs, at_ms, found, keys, sources.walks)
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
        sourced = {f for f in features if sources_of[f]}
        known = sourced | view.recorded_of([f for f in features if f not in sourced], ["mlFeatureProperties"])
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


def group_inputs(view: Memo, info: catalog.ModelInfo) -> set[str]:
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


__all__ = ["PRUNE_RATIO", "Checked", "GateReads", "Scores", "checked_assertions", "group_inputs", "upstream_assertions"]
