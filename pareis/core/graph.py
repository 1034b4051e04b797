"""The lineage graph as the core sees it: named relations, a batched read view, and walks over it.

The index holds directed edges ``(relation, src, dst)`` (upstream → downstream where the relation is lineage) and
per-entity attributes. Stores implement :class:`LineageView`; the core only ever asks for a whole frontier at once,
so a store answers one walk step in one round trip. Column URNs are canonical (:mod:`pareis.core.fieldpath`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any, NamedTuple, Protocol

from pareis.core.fieldpath import (
    COLUMN_PREFIX,
    column_parts,
    column_urn,
    is_flat,
    path_of,
    split_schema,
    with_foreign,
)

REMOVABLE_TYPES = frozenset(
    {
        "dataset",
        "dataJob",
        "dataProcessInstance",
        "mlFeature",
        "mlFeatureTable",
        "mlPrimaryKey",
        "mlModel",
        "mlModelGroup",
        "assertion",
    }
)
"""Entity types whose ``status`` (soft deletion) and ``deprecation`` the index keeps. A column is removed with
its dataset."""


class Rel(StrEnum):
    """Edge relations; each is documented as ``src → dst`` and the aspect(s) that contribute it."""

    COLUMN = "column"
    """upstream column → downstream column (``fineGrainedLineages`` of upstreamLineage / dataJobInputOutput)."""
    DATASET_COLUMN = "dataset_column"
    """upstream dataset → downstream column (a ``fineGrainedLineages`` upstream that is a whole dataset)."""
    DATASET = "dataset"
    """upstream dataset → downstream dataset (``upstreamLineage.upstreams``)."""
    COVERED = "covered"
    """upstream dataset → downstream dataset joined by at least one column edge (derived from the above)."""
    HAS_COLUMN = "has_column"
    """dataset → column (``schemaMetadata.fields``)."""
    SIBLING = "sibling"
    """dataset → sibling dataset (``siblings``; read in both directions)."""
    READS = "reads"
    """dataset (or any input) → process reading it (``dataJobInputOutput`` inputs, ``dataProcessInstanceInput``)."""
    WRITES = "writes"
    """process → dataset it writes (``dataJobInputOutput`` outputs, ``dataProcessInstanceOutput``)."""
    TRAINS = "trains"
    """training run or job → model (``mlModelProperties.trainingJobs``, ``dataProcessInstanceOutput``)."""
    FEATURE_SOURCE = "feature_source"
    """source (column or dataset) → feature or primary key (``mlFeatureProperties`` / ``mlPrimaryKeyProperties``
    ``sources``)."""
    FEATURE_DATASET = "feature_dataset"
    """dataset of a feature source → feature or primary key (derived from the ``sources`` above)."""
    FEATURE_MODEL = "feature_model"
    """feature → model (``mlModelProperties.mlFeatures``)."""
    MODEL_GROUP = "model_group"
    """model → model group (``mlModelProperties.groups``)."""
    VERSION_OF = "version_of"
    """model → version set (``versionProperties.versionSet``)."""
    TABLE_FEATURE = "table_feature"
    """feature table → feature (``mlFeatureTableProperties.mlFeatures``)."""
    TABLE_KEY = "table_key"
    """feature table → primary key it is keyed by (``mlFeatureTableProperties.mlPrimaryKeys``)."""
    ASSERTS = "asserts"
    """assertion → dataset it checks (``assertionInfo``)."""
    ASSERTS_COLUMN = "asserts_column"
    """assertion → column it checks (``assertionInfo``)."""
    DEPLOYED = "deployed"
    """model → deployment it lists (``mlModelProperties.deployments``; the deployment may never be ingested)."""


class Attr(StrEnum):
    """Entity attributes (string values). Each is contributed by exactly one aspect, named here."""

    REMOVED = "removed"  # status: "true" when soft-deleted
    DEPRECATED = "deprecated"  # deprecation: "true" when deprecated
    DECOMMISSION_MS = "decommission_ms"  # deprecation.decommissionTime
    MODEL_NAME = "model.name"  # mlModelProperties.name
    MODEL_CREATED_MS = "model.created_ms"  # mlModelProperties.created.time, else .date
    MODEL_VERSION = "model.version"  # mlModelProperties.version.versionTag
    GROUP_NAME = "group.name"  # mlModelGroupProperties.name
    GROUP_CREATED_MS = "group.created_ms"  # mlModelGroupProperties.created.time, else .createdAt
    VERSION_TAG = "version.tag"  # versionProperties.version.versionTag
    VERSION_SORT_ID = "version.sort_id"  # versionProperties.sortId
    VERSION_CREATED_MS = "version.created_ms"  # versionProperties source/metadata created, else attribution
    RUN_NAME = "run.name"  # dataProcessInstanceProperties.name
    RUN_STARTED_MS = "run.started_ms"  # dataProcessInstanceProperties.created.time
    ASSERTION_TYPE = "assertion.type"  # assertionInfo.type
    ASSERTION_DIMENSION = "assertion.dimension"  # assertionInfo → pareis.core.dimension.dimension
    LINEAGE_INCOMPLETE = "lineage.incomplete"  # upstreamLineage: the entries not indexed, JSON [[where, why], …]
    SCHEMA_TYPES = "schema.types"  # schemaMetadata: JSON {simple field path: type} (NumberType → "number", …)
    SCHEMA_PRIMARY_KEYS = "schema.primary_keys"  # schemaMetadata.primaryKeys: JSON [simple field path, …]
    SCHEMA_FOREIGN_KEYS = "schema.foreign_keys"  # schemaMetadata.foreignKeys: JSON [[path, foreign column], …]
    DBT_UNIQUE_ID = "dbt.unique_id"  # datasetProperties.customProperties.dbt_unique_id (dbt nodes only)
    PROFILE = "profile"  # datasetProfile: JSON {"time_ms", "rows", "fields": {path: {min, max, values, …}}}
    OWNERS = "owners"  # ownership.owners[].owner: JSON [owner URN, …] (pareis.core.owners)
    USER_EMAIL = "user.email"  # corpUserInfo.email (corpuser entities)
    USER_EDITED_EMAIL = "user.edited_email"  # corpUserEditableInfo.email: set by a person in DataHub's UI
    DEPLOYMENT_STATUS = "deployment.status"  # mlModelDeploymentProperties.status, as given (IN_SERVICE, …)
    VERSION_ALIASES = "version.aliases"  # versionProperties.aliases[].versionTag: JSON [alias, …], as given


class Query(NamedTuple):
    """Neighbours of every node in ``nodes`` along ``rel``: destinations, or sources when ``reverse``."""

    rel: Rel
    nodes: Collection[str]
    reverse: bool = False


Adjacency = Mapping[str, frozenset[str]]


class Outline(NamedTuple):
    """What containment (:mod:`pareis.core.containment`) needs of a dataset's schema (its ``has_column``
    neighbours) without listing a flat one: ``size`` columns (0: the schema is unknown) and ``columns``, all of
    them, or none when the schema is flat (:func:`~pareis.core.fieldpath.is_flat`: every column the dataset's own,
    none nested). A large blast touches thousands of flat schemas of tens of columns each, of which it needs only
    this. :func:`outline_of` defines it."""

    size: int
    columns: frozenset[str]

    @property
    def flat(self) -> bool:
        return self.size > 0 and not self.columns


def outline_of(dataset: str, columns: frozenset[str]) -> Outline:
    """The :class:`Outline` of ``dataset``'s schema ``columns``."""
    return Outline(len(columns), _NONE if is_flat(dataset, columns) else columns)


class LineageView(Protocol):
    """Read side of the lineage index, batched: a frontier in, a mapping out."""

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        """One mapping per query, in order; every queried node is a key (empty set when it has no edge).

        A store answers the whole batch in one round trip.
        """
        ...

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        """Attributes of every node (an empty mapping for nodes with none)."""
        ...

    def attribute(self, nodes: Collection[str], name: Attr) -> Mapping[str, str | None]:
        """One attribute of every node, None where it has none: what checking one flag needs, without reading the
        rest (a dataset's schema types, profile and owners)."""
        ...

    def outlines(self, datasets: Collection[str]) -> Mapping[str, Outline]:
        """The :class:`Outline` of each dataset's schema: ``outline_of(d, <its has_column neighbours>)``, which a
        store may answer without transferring a flat schema (:func:`outlines_of` is the plain way)."""
        ...


def outlines_of(view: LineageView, datasets: Iterable[str]) -> dict[str, Outline]:
    """:meth:`LineageView.outlines` answered from the whole schemas, for a view that transfers nothing less."""
    return {d: outline_of(d, columns) for d, columns in columns_of(view, datasets).items()}


def unasked(queries: Sequence[Query], edges: dict[tuple[Rel, bool], dict[str, frozenset[str]]]) -> list[Query]:
    """The part of ``queries`` not answered in ``edges`` (a read-through cache: relation and direction → node → its
    neighbours), nodes sorted, one query per relation and direction still to ask; ``edges`` gains an empty entry for
    each relation and direction asked about, where the answers will go."""
    missing: list[Query] = []
    for q in queries:
        known = edges.setdefault((q.rel, q.reverse), {})
        todo = sorted({n for n in q.nodes if n not in known})
        if todo:
            missing.append(Query(q.rel, todo, q.reverse))
    return missing


class Memo:
    """The :class:`LineageView` one computation sees: answers remembered, removed entities absent.

    * **Remembered**: each question is asked of the store once (valid while the index does not change: one
      computation over one snapshot in time).
    * **Removed entities are gone** (DESIGN §2.1): an entity whose ``status.removed`` is true (a column: whose
      dataset's is) has no edges and is nobody's neighbour, so no walk, verdict or listing reaches it. Its
      attributes stay readable (they say why it is gone). Un-removing it brings it back in the next Memo.

    Checking removal costs one batched attribute read per walk step that meets new entities.

    ``generation``: the lineage generation (:mod:`pareis.store.exposure`) read before this view's first question,
    None when unknown: what answers kept from one view to the next are valid for
    (:class:`~pareis.core.walk_cache.WalkCache`).
    """

    def __init__(self, view: LineageView, *, generation: int | None = None) -> None:
        self._view = view
        self.generation = generation
        self._edges: dict[tuple[Rel, bool], dict[str, frozenset[str]]] = {}
        self._attrs: dict[str, Mapping[str, str]] = {}
        self._owners: dict[str, str | None] = {}
        self._schemas: dict[str, tuple[list[str], dict[str, str]]] = {}
        self._outlines: dict[str, Outline] = {}
        self._flags: dict[Attr, dict[str, str | None]] = {}
        self._dropped: dict[tuple[Rel, bool], dict[str, frozenset[str]]] = {}
        self._records: dict[tuple[str, str], bool] = {}

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        missing = unasked(queries, self._edges)
        if missing:
            self._remember(missing, self._view.lookup(missing))
        out: list[Adjacency] = []
        for q in queries:
            cache = self._edges[(q.rel, q.reverse)]
            out.append({n: cache[n] for n in q.nodes})
        return out

    def _remember(self, missing: Sequence[Query], answers: Sequence[Adjacency]) -> None:
        """Keep the store's ``answers`` to ``missing`` (questions not asked before), removed entities taken out."""
        seen = {n for q in missing for n in q.nodes}
        # A dataset's own columns (most of a schema) are owned by the dataset: checked as one group each,
        # not parsed one by one (a large blast reads 200,000+ of them).
        groups: dict[str, list[frozenset[str]]] = {}
        for q, answer in zip(missing, answers, strict=True):
            schema = q.rel == Rel.HAS_COLUMN and not q.reverse
            for n, targets in answer.items():
                if schema and targets:
                    groups.setdefault(n, []).append(targets)
                    self._schemas[n] = split_schema(n, targets)
                    seen.update(self._schemas[n][0])
                else:
                    seen |= targets
        gone = self._gone(seen, groups)
        for q, answer in zip(missing, answers, strict=True):
            cache = self._edges[(q.rel, q.reverse)]
            if gone:
                dropped = self._dropped.setdefault((q.rel, q.reverse), {})
                for n in q.nodes:
                    targets = answer.get(n, _NONE)
                    cache[n] = frozenset() if n in gone else targets - gone
                    if n not in gone and not targets.isdisjoint(gone):
                        dropped[n] = targets & gone
            else:
                for n in q.nodes:
                    cache[n] = answer.get(n, _NONE)

    def outlines(self, datasets: Collection[str]) -> Mapping[str, Outline]:
        """Outlines as the remembered schemas state them (removed columns out; a removed dataset's is unknown). A
        schema not read yet is outlined by the store; one that is not flat comes whole and is remembered as if
        :func:`columns_of` had read it."""
        schemas = self._edges.setdefault((Rel.HAS_COLUMN, False), {})
        todo = sorted({d for d in datasets if d not in self._outlines and d not in schemas})
        if todo:
            got = self._view.outlines(todo)
            whole = [d for d in todo if not got[d].flat]
            if whole:
                self._remember([Query(Rel.HAS_COLUMN, whole)], [{d: got[d].columns for d in whole}])
            flat = [d for d in todo if got[d].flat]
            gone = self._gone(flat, {})  # a flat schema's columns are its dataset's own: gone with it alone
            for d in flat:
                self._outlines[d] = _UNKNOWN if d in gone else got[d]
        out: dict[str, Outline] = {}
        for d in datasets:
            found = self._outlines.get(d)
            if found is None:
                columns = schemas[d]
                split = self._schemas.get(d)  # what reading the schema already found: outline_of without a parse
                if split is None:
                    found = outline_of(d, columns)
                else:
                    found = Outline(len(columns), _NONE if columns and split == ([], {}) else columns)
                self._outlines[d] = found
            out[d] = found
        return out

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        todo = sorted({n for n in nodes if n not in self._attrs})
        if todo:
            got = self._view.attributes(todo)
            for n in todo:
                self._attrs[n] = got.get(n, {})
        return {n: self._attrs[n] for n in nodes}

    def attribute(self, nodes: Collection[str], name: Attr) -> Mapping[str, str | None]:
        """From the attributes read whole where they were, else read alone (and remembered)."""
        known = self._flags.setdefault(name, {})
        todo = sorted({n for n in nodes if n not in self._attrs and n not in known})
        if todo:
            got = self._view.attribute(todo, name)
            for n in todo:
                known[n] = got.get(n)
        return {n: self._attrs[n].get(name) if n in self._attrs else known[n] for n in nodes}

    def dotted_paths(self, dataset: str, columns: frozenset[str]) -> dict[str, str]:
        """``{column: path_of(column)}`` for ``columns``, the schema of ``dataset`` as :func:`columns_of` answered
        it here, whose path has a dot, from what the schema lookup read (:func:`~pareis.core.fieldpath.split_schema`).
        Raises :class:`ValueError` for a column :func:`~pareis.core.fieldpath.path_of` refuses."""
        if not columns:
            return {}
        foreign, dotted = self._schemas[dataset]
        return {c: p for c, p in with_foreign(dotted, foreign).items() if c in columns}

    def removed_neighbours(self, rel: Rel, nodes: Iterable[str], *, reverse: bool = False) -> dict[str, frozenset[str]]:
        """The neighbours along ``rel`` of each of ``nodes`` (itself live) that this view leaves out because they are
        removed — what an answer names when a removal is why something is missing (a feature's removed source)."""
        wanted = sorted(set(nodes))
        self.lookup([Query(rel, wanted, reverse)])
        dropped = self._dropped.get((rel, reverse), {})
        return {n: dropped.get(n, _NONE) for n in wanted}

    def recorded(self, entity: str, aspects: Iterable[str]) -> bool:
        """Whether the store keeps a live record of one of ``aspects`` for ``entity`` (it was ingested, whatever
        facts it contributed); False for a view that keeps no records (:meth:`recorded_of`)."""
        return entity in self.recorded_of([entity], aspects)

    def recorded_of(self, entities: Collection[str], aspects: Iterable[str]) -> set[str]:
        """Those of ``entities`` for which :meth:`recorded` holds. Each record is read once per view (remembered
        like every answer), those not read yet in one round trip (the store's ``records``)."""
        names = tuple(aspects)
        todo = sorted({(e, a) for e in entities for a in names if (e, a) not in self._records})
        if todo:
            records = getattr(self._view, "records", None)
            found: list[Any] = [None] * len(todo) if records is None else list(records(todo))
            for key, record in zip(todo, found, strict=True):
                self._records[key] = record is not None and record.facts is not None
        return {e for e in entities if any(self._records[(e, a)] for a in names)}

    def removed(self, nodes: Iterable[str]) -> set[str]:
        """The soft-deleted among ``nodes`` (a column when its dataset is)."""
        return self._gone(nodes, {})

    def _gone(self, nodes: Iterable[str], groups: Mapping[str, list[frozenset[str]]]) -> set[str]:
        """The soft-deleted among ``nodes``, and among the columns in ``groups`` (``dataset → column sets``, each
        column its dataset's own, so owned by it), in one attribute read."""
        known = self._owners  # parsing a column URN is the cost here; a walk meets each node several times
        owners = {}
        for n in nodes:
            if n not in known:
                known[n] = _owner(n)
            owners[n] = known[n]
        group_owners = {d: _removable(d) for d in groups}
        asked = {o for o in owners.values() if o is not None} | {o for o in group_owners.values() if o is not None}
        flags = self.attribute(asked, Attr.REMOVED)
        dead = {o for o in asked if flags[o] == "true"}
        if not dead:
            return set()
        gone = {n for n, o in owners.items() if o in dead}
        for d, o in group_owners.items():
            if o in dead:
                for columns in groups[d]:
                    gone |= columns
        return gone


_NONE: frozenset[str] = frozenset()
_UNKNOWN = Outline(0, _NONE)


def memoised(view: LineageView) -> Memo:
    """``view`` itself when it is a :class:`Memo` already, else a new one over it."""
    return view if isinstance(view, Memo) else Memo(view)


def _owner(urn: str) -> str | None:
    """The entity whose ``status`` decides whether ``urn`` exists: itself, or a column's dataset; None for
    entity types without one (tags, containers, …)."""
    if urn.startswith(COLUMN_PREFIX):
        try:
            urn = column_parts(urn)[0]
        except ValueError:
            return None
    return _removable(urn)


def _removable(urn: str) -> str | None:
    """``urn`` when its entity type keeps a ``status``, else None."""
    parts = urn.split(":", 3)
    return urn if len(parts) == 4 and parts[2] in REMOVABLE_TYPES else None


def related(view: LineageView, rel: Rel, nodes: Iterable[str], *, reverse: bool = False) -> Adjacency:
    """Neighbours along one relation, for a whole frontier."""
    return view.lookup([Query(rel, sorted(set(nodes)), reverse)])[0]


def union(adjacency: Adjacency) -> set[str]:
    """Every neighbour in an adjacency mapping."""
    out: set[str] = set()
    for targets in adjacency.values():
        out |= targets
    return out


def closure(start: Iterable[str], step: Callable[[set[str]], Mapping[str, Iterable[str]]]) -> set[str]:
    """Everything reachable from ``start`` (included) by repeated ``step`` over frontiers; cycle-safe."""
    seen = set(start)
    frontier = set(seen)
    while frontier:
        nxt: set[str] = set()
        for targets in step(frontier).values():
            nxt.update(t for t in targets if t not in seen)
        seen |= nxt
        frontier = nxt
    return seen


def siblings_of(view: LineageView, datasets: Iterable[str]) -> dict[str, frozenset[str]]:
    """Siblings of each dataset, whichever side declared them (the relation is symmetric)."""
    nodes = sorted(set(datasets))
    fwd, rev = view.lookup([Query(Rel.SIBLING, nodes), Query(Rel.SIBLING, nodes, True)])
    return {d: (fwd[d] | rev[d]) - {d} for d in nodes}


def columns_of(view: LineageView, datasets: Iterable[str]) -> Adjacency:
    """The known schema (column URNs) of each dataset; empty when its schema is unknown."""
    return related(view, Rel.HAS_COLUMN, datasets)


class Names:
    """The columns of one dataset by name, for same-name matching (siblings, feature names)."""

    def __init__(self, columns: Iterable[str]) -> None:
        self.exact: dict[str, str] = {}
        self.folded: dict[str, list[str]] = {}
        for c in sorted(columns):
            path = path_of(c)
            self.exact[path] = c
            self.folded.setdefault(path.casefold(), []).append(c)

    def match(self, path: str) -> list[str]:
        """The column named ``path`` exactly, else every column named so case-insensitively."""
        hit = self.exact.get(path)
        return [hit] if hit is not None else list(self.folded.get(path.casefold(), ()))


def sibling_columns(view: LineageView, columns: Iterable[str]) -> dict[str, frozenset[str]]:
    """For each column, the columns of the same name in its dataset's siblings (DESIGN §2.1).

    A sibling with a known schema contributes its same-name column (exact, else case-insensitive) if it has
    one; a sibling whose schema is unknown contributes the column of that name spelled in it.
    """
    cols = sorted(set(columns))
    parts = {c: column_parts(c) for c in cols}
    sibs = siblings_of(view, {parent for parent, _ in parts.values()})
    if not any(sibs.values()):
        return {c: _NONE for c in cols}
    schemas = columns_of(view, union(sibs))
    names = {s: Names(schema) for s, schema in schemas.items() if schema}
    out: dict[str, frozenset[str]] = {}
    for c in cols:
        parent, path = parts[c]
        found: set[str] = set()
        for s in sibs[parent]:
            found.update(names[s].match(path) if s in names else [column_urn(s, path)])
        out[c] = frozenset(found)
    return out


def upstream_columns(view: LineageView, columns: Iterable[str]) -> dict[str, frozenset[str]]:
    """Lineage parents of each column: column edges, plus every known column of a whole-dataset upstream."""
    cols = sorted(set(columns))
    direct, whole = view.lookup([Query(Rel.COLUMN, cols, True), Query(Rel.DATASET_COLUMN, cols, True)])
    schemas = columns_of(view, union(whole))
    return {c: direct[c].union(*(schemas[d] for d in whole[c])) for c in cols}


def downstream_columns(view: LineageView, columns: Iterable[str]) -> dict[str, frozenset[str]]:
    """Lineage children of each column: column edges, plus columns fed by its whole dataset."""
    cols = sorted(set(columns))
    parents = {c: column_parts(c)[0] for c in cols}
    direct, whole = view.lookup([Query(Rel.COLUMN, cols), Query(Rel.DATASET_COLUMN, sorted(set(parents.values())))])
    return {c: direct[c] | whole[parents[c]] for c in cols}


def dataset_children(view: LineageView, datasets: Iterable[str]) -> dict[str, frozenset[str]]:
    """Datasets downstream of each dataset at table level: lineage, and writes of processes reading it."""
    nodes = sorted(set(datasets))
    direct, reads = view.lookup([Query(Rel.DATASET, nodes), Query(Rel.READS, nodes)])
    writes = related(view, Rel.WRITES, union(reads))
    return {d: direct[d].union(*(writes[p] for p in reads[d])) for d in nodes}
