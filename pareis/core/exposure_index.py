"""The exposure index (DESIGN §2.5): for every column, the features and model versions downstream of it, computed
for the whole lineage graph in one pass, so that ``pareis protect`` and the retrain gate read what
:func:`pareis.core.exposure.exposure` would walk.

**What it holds.** :func:`snapshot` gives, for every column whose exposure is not empty, exactly
:func:`~pareis.core.exposure.exposure`'s answer — the features (and primary keys) a wholly bad column reaches
through the blast radius's spread (:mod:`pareis.core.spread`: lineage, sibling twins, containment) and their links
(:mod:`pareis.core.upstream`: the features keyed by a key too), and the model versions consuming them or, at table
precision, trained on runs reading a dataset whose schema holds a column it reaches. A column it does not hold has
nothing downstream. Grouped per dataset (:class:`DatasetExposure`), because the readers ask for the columns of
whole datasets.

**How, in one pass** (no column's closure is walked on its own):

1. *Seeds* — every column that feeds something directly: the links of every feature and key
   (:func:`~pareis.core.upstream.feature_links`), and the columns of datasets read by the training runs of
   featureless models.
2. *Candidates* — everything upstream of the seeds, along a superset of the reverse of the spread's step: column
   edges backwards, the schema of a whole-dataset upstream, the same-named (exact or case-folded) columns of the
   siblings, and the structs enclosing a column and the fields nested in it. Only these can have a non-empty
   exposure: they are the only columns a computation visits.
3. *Sums* — the spread from every candidate, bounded to the candidates (exactly as the walk takes it), and
   :func:`~pareis.core.closures.closed_union` of the seeds' values over its states: one pass over strongly connected
   components, linear in the states and their edges, cycle-safe.

Same answer as the walk for every column, except one spelling the walk itself answers differently depending on
which columns it starts from, and which no producer of the goldens writes: a column outside its dataset's schema
that reaches something only through a whole-dataset edge or through a sibling twin spelled in another case.

The encoding (:func:`encode` / :func:`decode`) is the stored form, one string per dataset; pure, deterministic,
sorted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pareis.core import catalog
from pareis.core.blast import blast_radius
from pareis.core.closures import closed_union
from pareis.core.containment import Containment
from pareis.core.exposure import Exposure
from pareis.core.fieldpath import COLUMN_PREFIX, column_urn, index_parent, index_path, parents_of
from pareis.core.graph import (
    LineageView,
    Query,
    Rel,
    columns_of,
    downstream_columns,
    memoised,
    related,
    siblings_of,
    union,
)
from pareis.core.impact import BlastRadius
from pareis.core.incident_urn import incident_urn
from pareis.core.runs import AssertionRun
from pareis.core.spread import Spread
from pareis.core.upstream import feature_links, linked_features, table_models
from pareis.core.window import incidents

EMPTY: tuple[str, ...] = ()

EXPOSURE_ASPECTS = frozenset(
    {
        "upstreamLineage",
        "schemaMetadata",
        "siblings",
        "logicalParent",
        "dataJobInputOutput",
        "mlFeatureProperties",
        "mlPrimaryKeyProperties",
        "mlFeatureTableProperties",
        "mlModelProperties",
        "versionProperties",
        "dataProcessInstanceInput",
        "dataProcessInstanceOutput",
        "status",
    }
)
"""The aspects whose change can change an exposure (the edges the snapshot reads, the models' groups, and soft
deletion): each one whose facts the snapshot reads (``tests/unit/test_exposure_aspects.py`` checks it on real
metadata), so that a snapshot of the current generation is never stale."""

FEATURE_ASPECTS = ("mlFeatureProperties", "mlPrimaryKeyProperties")
"""The aspects whose entities can be the target of a ``feature_source`` edge (the snapshot's enumeration)."""
MODEL_ASPECTS = ("mlModelProperties",)
RUN_OUTPUT_ASPECTS = ("dataProcessInstanceOutput",)


def column_key(dataset: str, column: str) -> str:
    """How ``column`` (of ``dataset``) is named inside its dataset's entry: the part after ``<dataset>,`` of a
    canonical column URN, or ``\\x00`` and the URN as is for any other spelling."""
    head = f"{COLUMN_PREFIX}{dataset},"
    if column.startswith(head) and column.endswith(")"):
        return column[len(head) : -1]
    return "\x00" + column


def column_of(dataset: str, key: str) -> str:
    """The inverse of :func:`column_key`."""
    return key[1:] if key.startswith("\x00") else f"{COLUMN_PREFIX}{dataset},{key})"


@dataclass(frozen=True)
class DatasetExposure:
    """The exposure of the columns of one dataset: column key (:func:`column_key`) → (features, models), sorted;
    and the group of each of those models (:attr:`pareis.core.catalog.ModelInfo.group`, None: none), which gap
    ranking needs (distinct groups downstream)."""

    dataset: str
    columns: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]
    groups: Mapping[str, str | None] = field(default_factory=dict)

    def of(self, column: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return self.columns.get(column_key(self.dataset, column), (EMPTY, EMPTY))


def encode(entry: DatasetExposure) -> str:
    """Compact canonical JSON: ``{"f": [feature…], "m": [model…], "g": [group of each model…], "c": [[key,
    [f index…], [m index…]], …]}``, URNs listed once each in sorted order, columns sorted by key."""
    features = sorted({f for fs, _ in entry.columns.values() for f in fs})
    models = sorted({m for _, ms in entry.columns.values() for m in ms})
    fi = {f: i for i, f in enumerate(features)}
    mi = {m: i for i, m in enumerate(models)}
    cols = [[k, [fi[f] for f in fs], [mi[m] for m in ms]] for k, (fs, ms) in sorted(entry.columns.items())]
    groups = [entry.groups.get(m) for m in models]
    data = {"f": features, "m": models, "g": groups, "c": cols}
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def decode(dataset: str, text: str | bytes) -> DatasetExposure:
    """The inverse of :func:`encode`; ValueError on anything else."""
    try:
        data = json.loads(text)
        features, models = data["f"], data["m"]
        columns = {str(k): (tuple(features[i] for i in fs), tuple(models[i] for i in ms)) for k, fs, ms in data["c"]}
        groups = dict(zip(models, data["g"], strict=True))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ValueError(f"malformed exposure entry for {dataset}: {exc!r}") from exc
    return DatasetExposure(dataset, columns, groups)


def exposure_of(
    entries: Mapping[str, DatasetExposure | None], columns: Iterable[str], parents: Mapping[str, str] | None = None
) -> Exposure:
    """:func:`pareis.core.exposure.exposure`'s answer for ``columns``, read from the entries of their datasets
    (a dataset without an entry, or whose entry is None: nothing downstream of its columns). ``parents``, each
    column's dataset (:func:`~pareis.core.fieldpath.parents_of`) when the caller has it."""
    cols = sorted(set(columns))
    parent = parents if parents is not None else parents_of(cols)
    feats: dict[str, tuple[str, ...]] = {}
    mods: dict[str, tuple[str, ...]] = {}
    groups: dict[str, str | None] = {}
    heads: dict[str, str] = {}
    none = (EMPTY, EMPTY)
    for c in cols:
        d = parent[c]
        entry = entries.get(d)
        if entry is None:
            feats[c] = mods[c] = EMPTY
            continue
        head = heads.get(d)
        if head is None:
            head = heads[d] = f"{COLUMN_PREFIX}{d},"
        # column_key(d, c), its prefix built once per dataset
        key = c[len(head) : -1] if c.startswith(head) and c.endswith(")") else "\x00" + c
        fs, ms = entry.columns.get(key, none)
        feats[c] = fs
        mods[c] = ms
        if ms:
            for m in ms:
                if m in entry.groups:  # else the caller reads it
                    groups[m] = entry.groups[m]
    return Exposure(feats, mods, groups)


@dataclass(frozen=True)
class IncidentColumns:
    """A past incident's affected columns (DESIGN §2.2 step 3) as of one lineage snapshot: what a gap matches.

    ``assertions`` are the incident's assertions the columns were computed from (a reader uses the entry only when
    its incident has exactly these), ``dataset`` its key, ``first_failure_ms`` when it began."""

    urn: str
    dataset: str
    first_failure_ms: int
    assertions: tuple[str, ...]
    columns: frozenset[str]

    def encode(self) -> str:
        by_dataset: dict[str, list[str]] = {}
        for c in self.columns:
            d = index_parent(c)
            by_dataset.setdefault(d, []).append(column_key(d, c))
        data = {
            "d": self.dataset,
            "t": self.first_failure_ms,
            "a": list(self.assertions),
            "c": {d: sorted(keys) for d, keys in sorted(by_dataset.items())},
        }
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    @classmethod
    def decode(cls, urn: str, text: str | bytes) -> IncidentColumns:
        """The inverse of :meth:`encode`; ValueError on anything else."""
        try:
            data = json.loads(text)
            columns = frozenset(column_of(d, k) for d, keys in data["c"].items() for k in keys)
            return cls(urn, str(data["d"]), int(data["t"]), tuple(data["a"]), columns)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"malformed incident entry for {urn}: {exc!r}") from exc


def _reverse_step(view: LineageView, contained: Containment, frontier: set[str]) -> dict[str, set[str]]:
    """For each column, a superset of the columns whose downstream spread reaches it in one step (see the module
    docstring): lineage parents, same-named columns of siblings, and the structs enclosing it and the fields nested
    in it."""
    cols = sorted(frontier)
    direct, whole = view.lookup([Query(Rel.COLUMN, cols, True), Query(Rel.DATASET_COLUMN, cols, True)])
    parents = {c: index_parent(c) for c in cols}
    sibs = siblings_of(view, set(parents.values()))
    schemas = columns_of(view, union(whole) | union(sibs))
    enclosing, nested = contained.enclosing(cols), contained.nested(cols)
    folded: dict[str, dict[str, list[str]]] = {}
    out: dict[str, set[str]] = {}
    for c in cols:
        found = set(direct[c]) | nested[c]
        found.update(s for s, _ in enclosing[c])
        for d in whole[c]:
            found.update(schemas[d])
        path = index_path(c)
        for s in sibs[parents[c]]:
            found.add(column_urn(s, path))
            if schemas[s]:
                if s not in folded:
                    names: dict[str, list[str]] = {}
                    for x in schemas[s]:
                        names.setdefault(index_path(x).casefold(), []).append(x)
                    folded[s] = names
                found.update(folded[s].get(path.casefold(), ()))
        out[c] = found
    return out


def snapshot(
    view: LineageView, *, features: Iterable[str], models: Iterable[str], run_outputs: Iterable[str] = ()
) -> dict[str, DatasetExposure]:
    """The exposure of every column with something downstream, per dataset (see the module docstring).

    ``features``: every entity that may be a feature source's target (features and primary keys); ``models``: every
    model version; ``run_outputs``: every run or job that may train a model (its ``trains`` edges name more models).
    The stores enumerate them (:meth:`~pareis.store.lineage.LineageStore.entities`); the view is read through a
    :class:`~pareis.core.graph.Memo` so removed entities are absent.
    """
    memo = memoised(view)
    contained = Containment(memo)
    # 1. Seeds: every column a feature (or key) links to, and the columns of the datasets read by the training runs
    # of the models that list no features.
    links = feature_links(memo, features)
    trained = related(memo, Rel.TRAINS, sorted(set(run_outputs)))
    every_model = sorted(set(models) | union(trained))
    listed = related(memo, Rel.FEATURE_MODEL, every_model, reverse=True)
    trainers = related(memo, Rel.TRAINS, [m for m in every_model if not listed[m]], reverse=True)
    read = related(memo, Rel.READS, sorted(union(trainers)), reverse=True)
    seeds = union(links.columns) | union(columns_of(memo, union(links.tables) | union(read)))
    # 2. Candidates: everything upstream of the seeds.
    candidates = set(seeds)
    frontier = set(seeds)
    while frontier:
        step = _reverse_step(memo, contained, frontier)
        frontier = set().union(*step.values()) - candidates if step else set()
        candidates |= frontier
    # 3. The downstream spread restricted to the candidates, and the sums over it.
    ordered = sorted(candidates)
    spread = Spread(memo, contained, lambda f: downstream_columns(memo, f), within=candidates)
    spread.run({c: {""} for c in ordered})
    graph = spread.graph()
    parents = parents_of(ordered)
    below_f = closed_union(graph, spread.on_states(linked_features(memo, links, parents)))
    tables = table_models(memo, parents)
    below_t = closed_union(graph, spread.on_states(tables)) if any(tables.values()) else {}
    consumers = related(memo, Rel.FEATURE_MODEL, union(below_f))
    grouped: dict[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    for c in ordered:
        fs = below_f.get(c, frozenset())
        ts = below_t.get(c, frozenset())
        if not fs and not ts:
            continue
        ms = set(ts).union(*(consumers[f] for f in fs))
        d = index_parent(c)
        grouped.setdefault(d, {})[column_key(d, c)] = (tuple(sorted(fs)), tuple(sorted(ms)))
    every = sorted({m for cols in grouped.values() for _, ms in cols.values() for m in ms})
    group_of = {m: info.group for m, info in catalog.models(memo, every).items()}
    out = {}
    for d, cols in sorted(grouped.items()):
        mine = {m for _, ms in cols.values() for m in ms}
        out[d] = DatasetExposure(d, cols, {m: group_of[m] for m in sorted(mine)})
    return out


def enumerate_inputs(entities: Callable[[str], Iterable[str]]) -> dict[str, list[str]]:
    """The keyword arguments of :func:`snapshot` from a store's ``entities(aspect)``."""
    return {
        "features": sorted({e for a in FEATURE_ASPECTS for e in entities(a)}),
        "models": sorted({e for a in MODEL_ASPECTS for e in entities(a)}),
        "run_outputs": sorted({e for a in RUN_OUTPUT_ASPECTS for e in entities(a)}),
    }


__all__ = [
    "EXPOSURE_ASPECTS",
    "DatasetExposure",
    "column_key",
    "column_of",
    "decode",
    "encode",
    "enumerate_inputs",
    "exposure_of",
    "snapshot",
]


@dataclass(frozen=True)
class IncidentHead:
    """What identifies a past incident for protect: its URN, key dataset, first failure and assertions."""

    urn: str
    dataset: str
    first_failure_ms: int
    assertions: tuple[str, ...]


def incident_heads(timelines: Mapping[str, Iterable[AssertionRun]]) -> list[IncidentHead]:
    """Every incident the runs describe (``timelines``: incident key → every run of its class's assertions), by
    key then first failure: :func:`pareis.core.window.incidents` with the incident URN (DESIGN §3)."""
    out = []
    for key in sorted(timelines):
        for w in incidents(timelines[key]):
            out.append(
                IncidentHead(incident_urn(key, w.first_failure_ms), key, w.first_failure_ms, tuple(w.assertions))
            )
    return out


def incident_columns(
    view: LineageView, head: IncidentHead, known: Mapping[str, BlastRadius] | None = None
) -> IncidentColumns:
    """The affected columns of ``head``'s blast radius: its assertions together, or its whole dataset when the
    index defines none of them (as the incidents role analyses it). ``known``: radii of single assertions walked
    over ``view`` already (:func:`pareis.core.radii.assertion_radii`): an incident of one of them takes its."""
    defs = catalog.assertions(view, head.assertions)
    defined = sorted(a for a in head.assertions if a in defs)
    radius = (known or {}).get(defined[0]) if len(defined) == 1 else None
    if radius is None:
        radius = blast_radius(view, assertions=defined, datasets=[] if defined else [head.dataset])
    return IncidentColumns(head.urn, head.dataset, head.first_failure_ms, head.assertions, frozenset(radius.columns))
