"""What an active incident watches in the lineage graph, and which incidents a lineage change touches (DESIGN §3,
live re-evaluation). A resolved incident whose decision still asks for an action watches less: its model groups,
their versions and deployments (:func:`follow_set`), so that a clean retrain or a switched deployment re-decides it.

While an incident is ACTIVE its blast radius can change without a new assertion run: a model version registered
that reads a poisoned feature, a feature re-pointed at a poisoned column, lineage that carried the poison removed,
an affected entity soft-deleted. The incidents role keeps, per active incident, its **watch set**
(:func:`watch_set`); the lineage role asks, for each lineage update it applies, whether the update's **subjects**
(:func:`subjects`: the entity and every endpoint of the edges it now states) meet any watch set
(:meth:`WatchIndex.hits`; :meth:`WatchIndex.touched` answers the same from the update's edges, cheaper), and
signals those incidents' datasets so they are recomputed.

The watch set is *compact* and *conservative*:

* **Compact**: columns are folded into their datasets (a 10,000-column blast is a few hundred datasets), so the
  index grows with the number of datasets, features and models a radius reaches, not with its columns.
* **Conservative**: a hit means "may change the answer", never "does": the incidents role recomputes and writes an
  Update only when the published facts differ. What must never be missed is covered:

  - an edge added or removed *in* the affected set or its upstream: every such edge has an affected endpoint, and
    its downstream endpoint is affected (a descendant of an affected column is affected, §2.2), so the aspect that
    states it belongs to an affected dataset, feature or model — or to a process (a job's ``dataJobInputOutput``,
    a run's inputs/outputs), which is watched when it reads or writes an affected dataset or trains an affected
    model (``processes``);
  - a feature, model or version *linked to* an affected entity: its new aspect names that entity (a feature
    source, a listed feature, a model group), so a subject hits;
  - a soft delete (``status``) or deprecation of a watched entity: the entity itself is a subject.

Pure: no I/O; outputs sorted.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter, methodcaller

from pareis.core.fieldpath import COLUMN_PREFIX
from pareis.core.graph import LineageView, Query, Rel, union
from pareis.core.intents import IncidentFacts
from pareis.core.serving import Action


def folded(urn: str) -> str:
    """A column URN → its dataset's URN; any other URN unchanged.

    Canonical column URNs percent-encode commas in the field path (:func:`pareis.core.fieldpath.column_urn`), so
    the parent ends at the last comma: a slice, cheap enough to run on every edge of a busy change log.
    """
    if not urn.startswith(COLUMN_PREFIX):
        return urn
    comma = urn.rfind(",")
    return urn[len(COLUMN_PREFIX) : comma] if comma > len(COLUMN_PREFIX) else urn


def watch_set(facts: IncidentFacts, processes: Iterable[str] = ()) -> tuple[str, ...]:
    """The entities an active incident of ``facts`` watches, sorted: its dataset and assertions, every dataset of
    its radius (affected, failing and origin columns folded), its features (also those linked at table precision),
    its models and their groups, every version of its affected groups, and ``processes`` (the jobs and runs that
    read or write an affected dataset or train an affected model: :func:`processes_of`)."""
    blast = facts.blast
    out = {facts.dataset, *facts.window.assertions, *blast.datasets, *blast.features, *blast.table_features}
    out.update(folded(c) for c in (*blast.columns, *blast.failing_columns, *blast.origin_columns))
    for model in blast.models:
        out.add(model.urn)
        if model.group is not None:
            out.add(model.group)
    for group in facts.contamination:
        out.add(group.group)
        out.update(v.version.urn for v in group.versions)
    out.update(processes)
    return tuple(sorted(out))


def follow_set(facts: IncidentFacts) -> tuple[str, ...]:
    """What a resolved incident whose decisions still ask for an action watches, sorted: its affected groups (a new
    version names its group), their versions (deployments and aliases are aspects of a version) and the deployments
    its serving versions run on (a deployment's status). Empty when every decision is NONE: nothing is left to
    re-decide."""
    if all(d.action is Action.NONE for d in facts.decisions):
        return ()
    out: set[str] = set()
    for group in facts.contamination:
        out.add(group.group)
        out.update(v.version.urn for v in group.versions)
    for decision in facts.decisions:
        out.add(decision.group)
        for serving in decision.serving:
            out.add(serving.version.urn)
            out.update(via.deployment for via in serving.how if via.deployment is not None)
    return tuple(sorted(out))


def processes_of(view: LineageView, facts: IncidentFacts) -> tuple[str, ...]:
    """The jobs and runs that read or write a dataset of ``facts``' radius or train one of its models, sorted (one
    round trip): they own aspects (``dataJobInputOutput``, ``dataProcessInstanceInput``/``Output``) whose edges
    reach the radius although the process itself is no node of it."""
    datasets = sorted({facts.dataset, *facts.blast.datasets})
    models = sorted(m.urn for m in facts.blast.models)
    reads, writes, trains = view.lookup(
        [Query(Rel.READS, datasets), Query(Rel.WRITES, datasets, reverse=True), Query(Rel.TRAINS, models, reverse=True)]
    )
    return tuple(sorted(union(reads) | union(writes) | union(trains)))


def subjects(entity: str, endpoints: Iterable[str]) -> frozenset[str]:
    """What a lineage update is about: ``entity`` (whose aspect changed) and ``endpoints`` (the sources and
    destinations of the edges the aspect now states), columns folded into their datasets."""
    return frozenset({folded(entity), *(folded(u) for u in endpoints)})


@dataclass(frozen=True)
class WatchIndex:
    """Every active incident's watch set, inverted: entity → the incident datasets (keys) that watch it.

    ``revision`` identifies the stored index it was read from (a reader reloads only when it moves).
    """

    by_entity: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    revision: str = ""

    @classmethod
    def of(cls, watches: Mapping[str, Iterable[str]], revision: str = "") -> WatchIndex:
        """The index of ``watches`` (incident dataset → its watch set)."""
        inverted: dict[str, set[str]] = {}
        for dataset, entities in watches.items():
            for entity in entities:
                inverted.setdefault(entity, set()).add(dataset)
        return cls({e: tuple(sorted(ds)) for e, ds in sorted(inverted.items())}, revision)

    def __bool__(self) -> bool:
        return bool(self.by_entity)

    def hits(self, about: Iterable[str]) -> tuple[str, ...]:
        """The incident datasets watching any of ``about``, sorted (empty: the change cannot touch an active
        incident)."""
        found: set[str] = set()
        index = self.by_entity
        for urn in about:
            datasets = index.get(urn)
            if datasets:
                found.update(datasets)
        return tuple(sorted(found))

    def touched(self, entity: str, edges: Collection[tuple[object, str, str]]) -> tuple[str, ...]:
        """``hits(subjects(entity, endpoints))`` for the endpoints of ``edges`` (``(rel, source, destination)``
        triples), sorted: the same answer with the folding done by C-level string operations over the distinct
        endpoints, not a Python step per endpoint (the lineage role asks this of every update it applies).

        Why it is the same: a URN that is no well-formed column (no ``COLUMN_PREFIX``, or no comma after it) folds to
        itself and is looked up as is; a column's last comma splits it into ``COLUMN_PREFIX + dataset`` and its
        path, and the head is looked up among the watched entities spelled so (:attr:`_column_heads`). A head never
        matches a URN that is not such a column (every key there starts with ``COLUMN_PREFIX``, which has no comma).
        """
        index = self.by_entity
        if not index:
            return ()
        ends = set(map(_SOURCE, edges))
        ends.update(map(_DESTINATION, edges))
        ends.add(entity)
        found: set[str] = set()
        for urn in filter(index.__contains__, ends):  # a set & keys view would copy the index each time
            if not urn.startswith(COLUMN_PREFIX) or urn.rfind(",") <= _PREFIX:  # it folds to itself
                found.update(index[urn])
        heads = self._column_heads
        for head in filter(heads.__contains__, set(map(_HEAD, map(_AT_LAST_COMMA, ends)))):
            found.update(index[heads[head]])
        return tuple(sorted(found))

    @cached_property
    def _column_heads(self) -> dict[str, str]:
        """``COLUMN_PREFIX + entity → entity`` for every watched entity: what a column of it starts with up to the
        comma before its path."""
        return {COLUMN_PREFIX + e: e for e in self.by_entity if e}


_PREFIX = len(COLUMN_PREFIX)
_SOURCE, _DESTINATION, _HEAD = itemgetter(1), itemgetter(2), itemgetter(0)
_AT_LAST_COMMA = methodcaller("rpartition", ",")
