"""Change-log aspects → lineage index updates (DESIGN §1, §2.1).

:func:`lineage_update` turns one aspect value of one entity, as raw Pegasus JSON (the lineage role parses it with
orjson; no avrogen classes, for speed), into one :class:`~pareis.store.lineage.LineageUpdate` replacing what
that (entity, aspect) contributes. Column URNs come out canonical (:mod:`pareis.core.fieldpath`): v2 field
paths reduced to simple ones, reserved characters percent-encoded as DataHub's builders do.

Dataset-side aspects live here; ML aspects in :mod:`pareis.datahub.translate.ml`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pareis.contracts.lineage import Edge, Facts, LineageUpdate, Stamp
from pareis.core.dimension import dimension
from pareis.core.fieldpath import COLUMN_PREFIX, canonical_column, entity_type, normal_field_path, parent_of, path_of
from pareis.core.graph import REMOVABLE_TYPES, Attr, Rel
from pareis.datahub.translate import ml as translate_ml
from pareis.datahub.translate import owners as translate_owners
from pareis.datahub.translate.shape import Shape, canonical_parent, is_plain_path
from pareis.errors import DecodeError

Handler = Callable[[Shape, str, Mapping[str, Any]], Facts]

UPSERTS = frozenset({"UPSERT", "CREATE", "UPDATE", "RESTATE", "CREATE_ENTITY"})
"""Change types carrying the aspect's whole new value (GMS logs PATCH proposals as UPSERT)."""

FLAGGED_TYPES = REMOVABLE_TYPES
"""Entity types whose ``status`` / ``deprecation`` the index keeps (the change log carries them for every type)."""


def stamp_of(system_metadata: Mapping[str, Any] | None, created: Mapping[str, Any] | None) -> Stamp:
    """The version stamp of an MCL: ``systemMetadata.version`` (when numeric) and ``created.time``, else
    ``systemMetadata.lastObserved``, else 0."""
    sm = system_metadata or {}
    raw = sm.get("version")
    version = int(raw) if isinstance(raw, str) and raw.strip().isdigit() else None
    time = (created or {}).get("time")
    if not isinstance(time, int) or isinstance(time, bool):
        observed = sm.get("lastObserved")
        time = observed if isinstance(observed, int) and not isinstance(observed, bool) else 0
    return Stamp(version, time)


def lineage_update(entity: str, aspect_name: str, change_type: str, aspect: Any, stamp: Stamp) -> LineageUpdate | None:
    """The update one aspect value makes to the lineage index; None when it contributes nothing to it (not a
    lineage aspect, or ``status``/``deprecation`` of an entity type outside :data:`FLAGGED_TYPES`).

    ``aspect`` is the decoded aspect JSON (ignored, may be None, for DELETE). Raises
    :class:`~pareis.errors.DecodeError` (Poison, reason ``aspect-shape``) for a malformed value, an entity that
    is not a URN, or a change type that carries no whole value (PATCH).
    """
    handler = HANDLERS.get(aspect_name)
    if handler is None:
        return None
    try:
        kind = entity_type(entity)
    except ValueError as error:
        raise DecodeError("aspect-shape", f"{aspect_name}: entity {error}") from error
    if aspect_name in ("status", "deprecation") and kind not in FLAGGED_TYPES:
        return None
    kept = translate_owners.ENTITY_TYPES.get(aspect_name)
    if kept is not None and kind not in kept:
        return None
    if change_type == "DELETE":
        return LineageUpdate(entity, aspect_name, stamp, None)
    if change_type not in UPSERTS:
        raise DecodeError("aspect-shape", f"{aspect_name} of {entity}: change type {change_type!r} carries no value")
    shape = Shape(entity, aspect_name)
    return LineageUpdate(entity, aspect_name, stamp, handler(shape, entity, shape.obj(aspect, "")))


_FAST_UP_TYPES = frozenset({"FIELD_SET", "DATASET"})
_DOWN_TYPES = frozenset({"FIELD", "FIELD_SET"})


def _fine_grained(shape: Shape, owner: Mapping[str, Any], edges: set[Edge]) -> list[tuple[str, str]]:
    """Edges of ``fineGrainedLineages``: each upstream × each downstream.

    An upstream is classified by its URN (a schemaField → column edge; any other entity → whole-dataset edge),
    so a mislabelled ``upstreamType`` still links what it names; ``NONE`` links nothing.

    Each entry is first read on a fast path that accepts only the common, valid shape (canonical column URNs,
    known types) and adds exactly what the checked reading :func:`_fine_grained_entry` would; anything else is
    left to that reading, which validates it and names what is wrong.

    A malformed entry is skipped, never the whole aspect: the valid entries are indexed and the bad ones returned
    as ``(where, why)`` (one bad entry must not shrink every blast radius through the others).
    """
    bad: list[tuple[str, str]] = []
    for i, fgl in enumerate(shape.objs(owner, "fineGrainedLineages", "")):
        if not _fine_grained_fast(fgl, edges):
            where, found = f"fineGrainedLineages[{i}]", set[Edge]()
            try:
                _fine_grained_entry(shape, fgl, where, found)
            except DecodeError as error:
                bad.append((where, error.detail))
                continue
            edges |= found
    return bad


def _fine_grained_fast(fgl: Mapping[str, Any], edges: set[Edge]) -> bool:
    """:func:`_fine_grained_entry` for the common shape; False, having added nothing, for any other."""
    up_type, down_type = fgl.get("upstreamType"), fgl.get("downstreamType")
    if up_type.__class__ is not str or up_type not in _FAST_UP_TYPES:
        return False
    if down_type.__class__ is not str or down_type not in _DOWN_TYPES:
        return False
    downs, ups = fgl.get("downstreams"), fgl.get("upstreams")
    if downs.__class__ is not list or ups.__class__ is not list:
        return False
    down_parents = []
    for d in downs:
        parent = canonical_parent(d) if d.__class__ is str else None
        if parent is None:
            return False
        down_parents.append((d, parent))
    up_parents = []
    for u in ups:
        if u.__class__ is not str or not u.startswith("urn:li:"):
            return False
        if u.startswith(COLUMN_PREFIX):
            parent = canonical_parent(u)
            if parent is None:
                return False
            up_parents.append((Rel.COLUMN, u, parent))
        else:
            up_parents.append((Rel.DATASET_COLUMN, u, u))
    add = edges.add
    for rel, up, up_parent in up_parents:
        for d, d_parent in down_parents:
            add((rel, up, d))
            add((Rel.COVERED, up_parent, d_parent))
    return True


def _fine_grained_entry(shape: Shape, fgl: Mapping[str, Any], where: str, edges: set[Edge]) -> None:
    """One ``fineGrainedLineages`` entry, every read checked."""
    up_type = shape.req_str(fgl, "upstreamType", where)
    down_type = shape.req_str(fgl, "downstreamType", where)
    if up_type not in ("FIELD_SET", "DATASET", "NONE"):
        shape.fail(f"{where}.upstreamType", f"unknown value {up_type!r}")
    if down_type not in ("FIELD", "FIELD_SET"):
        shape.fail(f"{where}.downstreamType", f"unknown value {down_type!r}")
    downs = [
        shape.column_parts(u, f"{where}.downstreams[{j}]") for j, u in enumerate(shape.urns(fgl, "downstreams", where))
    ]
    ups = shape.urns(fgl, "upstreams", where)
    if up_type == "NONE":
        return
    for j, up in enumerate(ups):
        if up.startswith(COLUMN_PREFIX):
            col, parent = shape.column_parts(up, f"{where}.upstreams[{j}]")
            for d, d_parent in downs:
                edges.add((Rel.COLUMN, col, d))
                edges.add((Rel.COVERED, parent, d_parent))
        else:
            for d, d_parent in downs:
                edges.add((Rel.DATASET_COLUMN, up, d))
                edges.add((Rel.COVERED, up, d_parent))


def upstream_lineage(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    edges: set[Edge] = set()
    for i, up in enumerate(shape.objs(aspect, "upstreams", "", required=True)):
        edges.add((Rel.DATASET, shape.urn(up.get("dataset"), f"upstreams[{i}].dataset"), entity))
    bad = _fine_grained(shape, aspect, edges)
    return Facts.of(edges, {Attr.LINEAGE_INCOMPLETE: incomplete_value(bad)} if bad else None)


def incomplete_value(bad: list[tuple[str, str]]) -> str:
    """The :data:`~pareis.core.graph.Attr.LINEAGE_INCOMPLETE` value: JSON ``[[where, why], …]``."""
    return json.dumps([[where, why[:300]] for where, why in bad], separators=(",", ":"), ensure_ascii=False)


def data_job_input_output(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    edges: set[Edge] = set()
    inputs = shape.urns(aspect, "inputDatasets", "") + shape.edge_targets(aspect, "inputDatasetEdges", "")
    outputs = shape.urns(aspect, "outputDatasets", "") + shape.edge_targets(aspect, "outputDatasetEdges", "")
    edges.update((Rel.READS, d, entity) for d in inputs)
    edges.update((Rel.WRITES, entity, d) for d in outputs)
    bad = _fine_grained(shape, aspect, edges)
    return Facts.of(edges, {Attr.LINEAGE_INCOMPLETE: incomplete_value(bad)} if bad else None)


def schema_metadata(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """Columns of the dataset; a field whose simple path is empty (a v2 path of type tokens only) is skipped.

    Attributes, for the test suggestions of DESIGN §2.5: each field's type (``schema.types``, the DataHub type
    class without its package and ``Type`` suffix, lower-cased: ``number``, ``string``, …), the primary keys and
    the foreign keys (``[source path, foreign column URN]`` pairs). These are read leniently: a malformed type or
    key names nothing rather than poisoning the columns.
    """
    edges: set[Edge] = set()
    types: dict[str, str] = {}
    plain = entity.startswith("urn:li:")
    for i, f in enumerate(shape.objs(aspect, "fields", "", required=True)):
        path = f.get("fieldPath")
        if plain and path.__class__ is str and is_plain_path(path):  # fast path: the column URN is spelled as is
            edges.add((Rel.HAS_COLUMN, entity, f"{COLUMN_PREFIX}{entity},{path})"))
            _type_of(f, path, types)
            continue
        path = shape.req_str(f, "fieldPath", f"fields[{i}]")
        if path.startswith("[version=2.0]") and all(t.startswith("[") or t.endswith("]") for t in path.split(".")):
            continue
        column = shape.column_in(entity, path, f"fields[{i}].fieldPath")
        edges.add((Rel.HAS_COLUMN, entity, column))
        _type_of(f, path_of(column), types)
    attrs: dict[Attr, str] = {}
    if types:
        attrs[Attr.SCHEMA_TYPES] = _compact(types)
    keys = aspect.get("primaryKeys")
    if isinstance(keys, list):
        primary = sorted({normal_field_path(k) for k in keys if isinstance(k, str) and normal_field_path(k)})
        if primary:
            attrs[Attr.SCHEMA_PRIMARY_KEYS] = _compact(primary)
    foreign = _foreign_keys(aspect.get("foreignKeys"))
    if foreign:
        attrs[Attr.SCHEMA_FOREIGN_KEYS] = _compact(foreign)
    return Facts.of(edges, attrs)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _type_of(field: Mapping[str, Any], path: str, types: dict[str, str]) -> None:
    spec = field.get("type")
    inner = spec.get("type") if isinstance(spec, Mapping) else None
    if isinstance(inner, Mapping) and len(inner) == 1:
        name = next(iter(inner)).rsplit(".", 1)[-1]
        types[path] = name.removesuffix("Type").lower()


def _foreign_keys(value: Any) -> list[list[str]]:
    """``[[source field path, foreign column URN], …]`` of ``schemaMetadata.foreignKeys``, sorted."""
    pairs: set[tuple[str, str]] = set()
    if not isinstance(value, list):
        return []
    for fk in value:
        if not isinstance(fk, Mapping):
            continue
        sources = [s for s in fk.get("sourceFields") or [] if isinstance(s, str) and s.startswith(COLUMN_PREFIX)]
        targets = [t for t in fk.get("foreignFields") or [] if isinstance(t, str) and t.startswith(COLUMN_PREFIX)]
        if not targets:
            continue
        for i, source in enumerate(sources):
            try:
                src, target = canonical_column(source), canonical_column(targets[min(i, len(targets) - 1)])
            except ValueError:
                continue
            pairs.add((path_of(src), target))
    return [list(p) for p in sorted(pairs)]


def dataset_properties(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """The dbt node a dataset is (``customProperties.dbt_unique_id``, as DataHub's dbt source writes it:
    ``model.<package>.<name>``, ``source.<package>.<source>.<table>``, …); nothing for other datasets."""
    props = shape.opt_obj(aspect, "customProperties", "") or {}
    unique_id = props.get("dbt_unique_id")
    return Facts.of(attrs={Attr.DBT_UNIQUE_ID: unique_id} if isinstance(unique_id, str) and unique_id else {})


def dataset_profile(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """The latest profile of a dataset (timeseries ``datasetProfile``): row count, and per field the observed
    min/max, distinct-value list (``distinctValueFrequencies``), unique and null counts. Read leniently."""
    fields: dict[str, dict[str, Any]] = {}
    for fp in aspect.get("fieldProfiles") or []:
        if not isinstance(fp, Mapping) or not isinstance(fp.get("fieldPath"), str):
            continue
        path = normal_field_path(fp["fieldPath"])
        if not path:
            continue
        entry: dict[str, Any] = {}
        for key, name in (("min", "min"), ("max", "max")):
            if isinstance(fp.get(key), str | int | float) and not isinstance(fp.get(key), bool):
                entry[name] = str(fp[key])
        for key, name in (("uniqueCount", "unique_count"), ("nullCount", "null_count")):
            if isinstance(fp.get(key), int) and not isinstance(fp.get(key), bool):
                entry[name] = fp[key]
        freqs = fp.get("distinctValueFrequencies")
        if isinstance(freqs, list):
            values = sorted({str(v["value"]) for v in freqs if isinstance(v, Mapping) and "value" in v})
            if values:
                entry["values"] = values
        if entry:
            fields[path] = entry
    profile: dict[str, Any] = {"fields": fields}
    rows = aspect.get("rowCount")
    if isinstance(rows, int) and not isinstance(rows, bool):
        profile["rows"] = rows
    when = aspect.get("timestampMillis")
    if isinstance(when, int) and not isinstance(when, bool):
        profile["time_ms"] = when
    return Facts.of(attrs={Attr.PROFILE: _compact(profile)})


def siblings(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    return Facts.of((Rel.SIBLING, entity, s) for s in shape.urns(aspect, "siblings", "", required=True) if s != entity)


def logical_parent(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """``logicalParent`` (DataHub's logical/physical model, relationship ``PhysicalInstanceOf``): a physical dataset
    or column and its logical parent are the same data (DESIGN §2.1, logical datasets).

    Datasets link as siblings do (:attr:`~pareis.core.graph.Rel.SIBLING`: columns of the same name are the same
    column). A column and its parent column are linked both ways by column edges (:attr:`~pareis.core.graph.Rel.
    COLUMN`, with the ``covered`` dataset edges they imply), so that each is upstream of the other: a failing test
    on either reaches what is built on both, whatever their names. A column whose parent is a dataset is the
    column of that dataset with its own path. No parent (``parent`` absent or null): no link. A dataset whose
    parent is a column is refused (aspect-shape).
    """
    parent = shape.opt_obj(aspect, "parent", "")
    if parent is None:
        return Facts.of()
    target = shape.urn(parent.get("destinationUrn"), "parent.destinationUrn")
    if not shape.is_column(entity):
        if shape.is_column(target):
            shape.fail("parent.destinationUrn", f"the logical parent of a dataset must be a dataset, got {target}")
        return Facts.of([(Rel.SIBLING, entity, target)] if target != entity else [])
    column, table = shape.column_parts(entity, "<entity>")
    if shape.is_column(target):
        other, other_table = shape.column_parts(target, "parent.destinationUrn")
    else:
        other, other_table = shape.column_in(target, path_of(column), "parent.destinationUrn"), target
    if other == column:
        return Facts.of()
    edges = {(Rel.COLUMN, column, other), (Rel.COLUMN, other, column)}
    if other_table != table:
        edges |= {(Rel.COVERED, table, other_table), (Rel.COVERED, other_table, table)}
    return Facts.of(edges)


def assertion_info(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """What an assertion checks: its dataset(s) and, if it names any, its columns; its type and the data-quality
    dimension it tests (:func:`pareis.core.dimension.dimension`).

    Fields come from ``datasetAssertion.fields``, ``customAssertion.field``/``fields`` (dbt; a dbt column test
    without them falls back to ``nativeParameters.column_name``) and ``fieldAssertion`` (``fieldPath`` or the
    nested ``field.path``). The dataset is the sub-assertion's ``dataset``/``entity``, else ``entityUrn``.
    """
    datasets: set[str] = set()
    columns: set[str] = set()
    for key in (
        "datasetAssertion",
        "customAssertion",
        "fieldAssertion",
        "freshnessAssertion",
        "volumeAssertion",
        "sqlAssertion",
        "schemaAssertion",
    ):
        sub = shape.opt_obj(aspect, key, "")
        if sub is None:
            continue
        target = shape.opt_str(sub, "dataset" if key == "datasetAssertion" else "entity", key)
        if target is not None:
            datasets.add(shape.urn(target, key))
        named = shape.urns(sub, "fields", key)
        if key == "customAssertion":
            single = shape.opt_str(sub, "field", key)
            named += [single] if single else []
            native = shape.opt_obj(sub, "nativeParameters", key) or {}
            column_name = native.get("column_name")
            if not named and target and isinstance(column_name, str) and column_name:
                columns.add(shape.column_in(target, column_name, f"{key}.nativeParameters.column_name"))
        columns.update(shape.column(u, f"{key}.fields") for u in named)
        if key == "fieldAssertion" and target:
            columns.update(shape.column_in(target, p, key) for p in _field_paths(shape, sub))
    if not datasets:
        fallback = shape.opt_str(aspect, "entityUrn", "")
        if fallback:
            datasets.add(shape.urn(fallback, "entityUrn"))
        datasets.update(parent_of(c) for c in columns)
    if not datasets:
        shape.fail("", "names no dataset and no field")
    edges: set[Edge] = {(Rel.ASSERTS, entity, d) for d in datasets}
    edges.update((Rel.ASSERTS_COLUMN, entity, c) for c in columns)
    kind = shape.opt_str(aspect, "type", "")
    attrs = {Attr.ASSERTION_DIMENSION: dimension(aspect)}
    if kind:
        attrs[Attr.ASSERTION_TYPE] = kind
    return Facts.of(edges, attrs)


def _field_paths(shape: Shape, sub: Mapping[str, Any]) -> set[str]:
    paths = {p for p in [shape.opt_str(sub, "fieldPath", "fieldAssertion")] if p}
    for nested in ("fieldValuesAssertion", "fieldMetricAssertion"):
        inner = shape.opt_obj(sub, nested, "fieldAssertion")
        spec = None if inner is None else shape.opt_obj(inner, "field", f"fieldAssertion.{nested}")
        if spec is not None:
            paths.add(shape.req_str(spec, "path", f"fieldAssertion.{nested}.field"))
    return paths


def status(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    return Facts.of(attrs={Attr.REMOVED: "true"} if shape.opt_bool(aspect, "removed", "") else {})


def deprecation(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    if not shape.opt_bool(aspect, "deprecated", ""):
        return Facts.of()
    attrs = {Attr.DEPRECATED: "true"}
    decommission = shape.opt_int(aspect, "decommissionTime", "")
    if decommission is not None:
        attrs[Attr.DECOMMISSION_MS] = str(decommission)
    return Facts.of(attrs=attrs)


HANDLERS: Mapping[str, Handler] = {
    "upstreamLineage": upstream_lineage,
    "schemaMetadata": schema_metadata,
    "datasetProperties": dataset_properties,
    "datasetProfile": dataset_profile,
    "siblings": siblings,
    "logicalParent": logical_parent,
    "dataJobInputOutput": data_job_input_output,
    "assertionInfo": assertion_info,
    "status": status,
    "deprecation": deprecation,
    **translate_ml.HANDLERS,
    **translate_owners.HANDLERS,
}

LINEAGE_ASPECTS: frozenset[str] = frozenset(HANDLERS)
"""The aspect names :func:`lineage_update` reads; filter on these before decoding an MCL's aspect JSON."""
