"""Typed, batched reads of what the lineage index knows about entities: assertions, features, models, model
versions, training runs, flags. Built on :class:`~pareis.core.graph.LineageView`; each function asks the view a
fixed number of batched questions, whatever the number of URNs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pareis.core.contamination import ModelVersion, known_time, trained_at
from pareis.core.dimension import OTHER
from pareis.core.graph import Attr, LineageView, Query, Rel, union
from pareis.core.serving import Deployment, VersionFacts


@dataclass(frozen=True)
class AssertionDef:
    """What an assertion checks. ``columns`` empty: the whole of each dataset. ``dimension``: the data-quality
    dimension it tests (:mod:`pareis.core.dimension`; ``other`` when the index does not say)."""

    urn: str
    datasets: tuple[str, ...]
    columns: tuple[str, ...]
    type: str | None
    dimension: str = OTHER


@dataclass(frozen=True)
class ModelInfo:
    """One model version (``mlModel``) as indexed; times in ms, None when unknown."""

    urn: str
    features: tuple[str, ...]
    groups: tuple[str, ...]
    version_sets: tuple[str, ...]
    training_runs: tuple[str, ...]
    version: str | None
    created_ms: int | None
    version_created_ms: int | None
    removed: bool
    deprecated: bool

    @property
    def group(self) -> str | None:
        """Its model group: the first ``groups`` entry, else the version set."""
        return _group(self.groups, self.version_sets)


def _group(groups: tuple[str, ...], version_sets: tuple[str, ...]) -> str | None:
    return (groups or version_sets or (None,))[0]


def _version(attrs: Mapping[str, str]) -> str | None:
    return attrs.get(Attr.VERSION_TAG) or attrs.get(Attr.MODEL_VERSION)


@dataclass(frozen=True)
class RunInfo:
    """A training run (``dataProcessInstance``) or job: when it started, what it read, wrote and trained."""

    urn: str
    started_ms: int | None
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    trained: tuple[str, ...]


@dataclass(frozen=True)
class Flags:
    removed: bool
    deprecated: bool


def _ms(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def assertions(view: LineageView, urns: Iterable[str]) -> dict[str, AssertionDef]:
    """Definitions of the assertions the index knows; unknown URNs are absent from the result."""
    nodes = sorted(set(urns))
    targets, fields = view.lookup([Query(Rel.ASSERTS, nodes), Query(Rel.ASSERTS_COLUMN, nodes)])
    attrs = view.attributes([n for n in nodes if targets[n] or fields[n]])
    return {
        n: AssertionDef(
            n,
            tuple(sorted(targets[n])),
            tuple(sorted(fields[n])),
            attrs[n].get(Attr.ASSERTION_TYPE),
            attrs[n].get(Attr.ASSERTION_DIMENSION) or OTHER,
        )
        for n in attrs
    }


def failure_classes(defs: Mapping[str, AssertionDef]) -> dict[str, str]:
    """The class of failure of each assertion (its dimension), for :class:`~pareis.core.intents.AnalysisInputs`."""
    return {a: d.dimension for a, d in defs.items()}


def assertions_on(view: LineageView, datasets: Iterable[str]) -> dict[str, frozenset[str]]:
    """The assertions checking each dataset (whole, or through one of its columns named in the definition)."""
    return dict(view.lookup([Query(Rel.ASSERTS, sorted(set(datasets)), True)])[0])


def feature_sources(view: LineageView, features: Iterable[str]) -> dict[str, frozenset[str]]:
    """The declared sources (column or dataset URNs) of each feature."""
    return dict(view.lookup([Query(Rel.FEATURE_SOURCE, sorted(set(features)), True)])[0])


def flags(view: LineageView, urns: Iterable[str]) -> dict[str, Flags]:
    """Soft-deletion (``status.removed``) and deprecation of each entity."""
    attrs = view.attributes(sorted(set(urns)))
    return {n: Flags(a.get(Attr.REMOVED) == "true", a.get(Attr.DEPRECATED) == "true") for n, a in attrs.items()}


def models(view: LineageView, urns: Iterable[str]) -> dict[str, ModelInfo]:
    """Every model asked for (unknown ones come back empty)."""
    nodes = sorted(set(urns))
    feats, groups, sets, trained_by = view.lookup(
        [
            Query(Rel.FEATURE_MODEL, nodes, True),
            Query(Rel.MODEL_GROUP, nodes),
            Query(Rel.VERSION_OF, nodes),
            Query(Rel.TRAINS, nodes, True),
        ]
    )
    attrs = view.attributes(nodes)
    out = {}
    for n in nodes:
        a = attrs[n]
        out[n] = ModelInfo(
            urn=n,
            features=tuple(sorted(feats[n])),
            groups=tuple(sorted(groups[n])),
            version_sets=tuple(sorted(sets[n])),
            training_runs=tuple(sorted(trained_by[n])),
            version=_version(a),
            created_ms=_ms(a.get(Attr.MODEL_CREATED_MS)),
            version_created_ms=_ms(a.get(Attr.VERSION_CREATED_MS)),
            removed=a.get(Attr.REMOVED) == "true",
            deprecated=a.get(Attr.DEPRECATED) == "true",
        )
    return out


def runs(view: LineageView, urns: Iterable[str]) -> dict[str, RunInfo]:
    """Every run or job asked for (unknown ones come back empty)."""
    nodes = sorted(set(urns))
    reads, writes, trains = view.lookup(
        [Query(Rel.READS, nodes, True), Query(Rel.WRITES, nodes), Query(Rel.TRAINS, nodes)]
    )
    attrs = view.attributes(nodes)
    return {
        n: RunInfo(
            n,
            _ms(attrs[n].get(Attr.RUN_STARTED_MS)),
            tuple(sorted(reads[n])),
            tuple(sorted(writes[n])),
            tuple(sorted(trains[n])),
        )
        for n in nodes
    }


def group_members(view: LineageView, groups: Iterable[str]) -> dict[str, frozenset[str]]:
    """The models of each model group or version set."""
    nodes = sorted(set(groups))
    by_group, by_set = view.lookup([Query(Rel.MODEL_GROUP, nodes, True), Query(Rel.VERSION_OF, nodes, True)])
    return {n: by_group[n] | by_set[n] for n in nodes}


def model_versions(view: LineageView, urns: Iterable[str]) -> dict[str, ModelVersion]:
    """The §2.3 view of each model: group, version label, and training time — the start of its (latest-starting)
    training run, else ``mlModelProperties.created``, else the ``versionProperties`` time. Asks only what these
    need of :func:`models` and :func:`runs` (not a model's features, nor a run's inputs and outputs: every version
    of every affected group is read)."""
    nodes = sorted(set(urns))
    groups, sets, trained_by = view.lookup(
        [Query(Rel.MODEL_GROUP, nodes), Query(Rel.VERSION_OF, nodes), Query(Rel.TRAINS, nodes, True)]
    )
    attrs = view.attributes(nodes)
    ran = sorted(union(trained_by))
    run_attrs = view.attributes(ran) if ran else {}
    out = {}
    for m in nodes:
        a = attrs[m]
        starts = [
            s for r in trained_by[m] if (s := _ms(run_attrs[r].get(Attr.RUN_STARTED_MS))) is not None and known_time(s)
        ]
        when = trained_at(
            max(starts, default=None), _ms(a.get(Attr.MODEL_CREATED_MS)), _ms(a.get(Attr.VERSION_CREATED_MS))
        )
        group = _group(tuple(sorted(groups[m])), tuple(sorted(sets[m])))
        out[m] = ModelVersion(urn=m, group=group, version=_version(a), trained_at_ms=when)
    return out


def versions_by_group(view: LineageView, groups: Iterable[str]) -> Mapping[str, tuple[ModelVersion, ...]]:
    """Every known version of each group, for :func:`pareis.core.contamination.contamination`."""
    members = group_members(view, groups)
    versions = model_versions(view, union(members))
    return {g: tuple(versions[m] for m in sorted(ms)) for g, ms in members.items()}


def serving_facts(view: LineageView, versions: Iterable[ModelVersion]) -> dict[str, VersionFacts]:
    """What says whether each version serves (DESIGN §2.3): the deployments it lists with their status (a deployment
    the index has no status for, e.g. one never ingested, has none; a removed deployment is left out), its aliases
    and whether it was removed. An alias list that is not a JSON list of strings reads as no aliases."""
    given = {v.urn: v for v in versions}
    nodes = sorted(given)
    deployed = view.lookup([Query(Rel.DEPLOYED, nodes)])[0]
    attrs = view.attributes(sorted(set(nodes) | union(deployed)))
    out = {}
    for n in nodes:
        a = attrs[n]
        deployments = tuple(
            Deployment(d, attrs[d].get(Attr.DEPLOYMENT_STATUS))
            for d in sorted(deployed[n])
            if attrs[d].get(Attr.REMOVED) != "true"
        )
        out[n] = VersionFacts(
            given[n], deployments, _aliases(a.get(Attr.VERSION_ALIASES)), a.get(Attr.REMOVED) == "true"
        )
    return out


def _aliases(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    try:
        found = json.loads(value)
    except ValueError:
        return ()
    return tuple(sorted(a for a in found if isinstance(a, str))) if isinstance(found, list) else ()
