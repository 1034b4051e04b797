"""ML aspects → lineage index facts: features, feature tables, models, model groups, versions, training runs.

Shapes follow DataHub's MLflow and Feast sources (reference §9): a model version is an ``mlModel`` with
``groups`` and ``trainingJobs`` (the run's ``dataProcessInstance``), a ``versionProperties`` naming its version
set, and the run points back at it through ``dataProcessInstanceOutput.outputEdges``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pareis.contracts.lineage import Edge, Facts
from pareis.core.fieldpath import entity_type
from pareis.core.graph import Attr, Rel
from pareis.datahub.translate.shape import Handler, Shape


def ml_feature_properties(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """Sources of a feature (or of a primary key, ``mlPrimaryKeyProperties``, same shape): a schemaField (column
    precision) or a dataset (matched by name at walk time). Both also index the source's dataset, for table-level
    reach."""
    edges: set[Edge] = set()
    for i, source in enumerate(shape.urns(aspect, "sources", "")):
        if shape.is_column(source):
            col, parent = shape.column_parts(source, f"sources[{i}]")
            edges.add((Rel.FEATURE_SOURCE, col, entity))
            edges.add((Rel.FEATURE_DATASET, parent, entity))
        else:
            edges.add((Rel.FEATURE_SOURCE, source, entity))
            edges.add((Rel.FEATURE_DATASET, source, entity))
    return Facts.of(edges)


def ml_feature_table_properties(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """The table's features and the primary keys it is keyed by (a bad key breaks the join of every feature)."""
    edges: set[Edge] = {(Rel.TABLE_FEATURE, entity, f) for f in shape.urns(aspect, "mlFeatures", "")}
    edges.update((Rel.TABLE_KEY, entity, k) for k in shape.urns(aspect, "mlPrimaryKeys", ""))
    return Facts.of(edges)


def ml_model_properties(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    edges: set[Edge] = set()
    edges.update((Rel.FEATURE_MODEL, f, entity) for f in shape.urns(aspect, "mlFeatures", ""))
    edges.update((Rel.MODEL_GROUP, entity, g) for g in shape.urns(aspect, "groups", ""))
    edges.update((Rel.TRAINS, j, entity) for j in shape.urns(aspect, "trainingJobs", ""))
    edges.update((Rel.DEPLOYED, entity, d) for d in shape.urns(aspect, "deployments", ""))
    attrs: dict[Attr, str] = {}
    created = shape.time_of(aspect, "created", "")
    if created is None:
        created = shape.opt_int(aspect, "date", "")
    _put(attrs, Attr.MODEL_CREATED_MS, created)
    _put(attrs, Attr.MODEL_NAME, shape.opt_str(aspect, "name", ""))
    version = shape.opt_obj(aspect, "version", "")
    if version is not None:
        _put(attrs, Attr.MODEL_VERSION, shape.opt_str(version, "versionTag", "version"))
    return Facts.of(edges, attrs)


def ml_model_group_properties(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    attrs: dict[Attr, str] = {}
    created = shape.time_of(aspect, "created", "")
    if created is None:
        created = shape.opt_int(aspect, "createdAt", "")
    _put(attrs, Attr.GROUP_CREATED_MS, created)
    _put(attrs, Attr.GROUP_NAME, shape.opt_str(aspect, "name", ""))
    return Facts.of(attrs=attrs)


def version_properties(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """Version set, label, sort id, and a creation time: the source's, else DataHub's, else the attribution's."""
    version_set = shape.urn(aspect.get("versionSet"), "versionSet")
    attrs: dict[Attr, str] = {}
    tag = shape.obj(aspect.get("version"), "version")
    _put(attrs, Attr.VERSION_TAG, shape.opt_str(tag, "versionTag", "version"))
    _put(attrs, Attr.VERSION_SORT_ID, shape.opt_str(aspect, "sortId", ""))
    created = shape.time_of(aspect, "sourceCreatedTimestamp", "")
    if created is None:
        created = shape.time_of(aspect, "metadataCreatedTimestamp", "")
    if created is None:
        created = shape.time_of(tag, "metadataAttribution", "version")
    _put(attrs, Attr.VERSION_CREATED_MS, created)
    aliases = _aliases(shape, aspect)
    if aliases:
        attrs[Attr.VERSION_ALIASES] = json.dumps(aliases, separators=(",", ":"), ensure_ascii=False)
    return Facts.of([(Rel.VERSION_OF, entity, version_set)], attrs)


def _aliases(shape: Shape, aspect: Mapping[str, Any]) -> list[str]:
    """``versionProperties.aliases``: each a ``VersionTag`` (``{"versionTag": "champion"}``), kept as given, sorted;
    an entry without a tag is skipped (it names nothing)."""
    found = {
        shape.opt_str(entry, "versionTag", f"aliases[{i}]") for i, entry in enumerate(shape.objs(aspect, "aliases", ""))
    }
    return sorted(tag for tag in found if tag)


def ml_model_deployment_properties(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """A deployment's status (``IN_SERVICE``, ``OUT_OF_SERVICE``, …), kept as given: a value DataHub does not
    define is still a status (:mod:`pareis.core.serving` judges it)."""
    attrs: dict[Attr, str] = {}
    _put(attrs, Attr.DEPLOYMENT_STATUS, shape.opt_str(aspect, "status", ""))
    return Facts.of(attrs=attrs)


def dpi_properties(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """A run's start time is ``created.time`` (DataHub's MLflow source sets it to the run's start)."""
    attrs: dict[Attr, str] = {}
    _put(attrs, Attr.RUN_STARTED_MS, shape.time_of(aspect, "created", ""))
    _put(attrs, Attr.RUN_NAME, shape.opt_str(aspect, "name", ""))
    return Facts.of(attrs=attrs)


def dpi_input(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    inputs = shape.urns(aspect, "inputs", "") + shape.edge_targets(aspect, "inputEdges", "")
    return Facts.of((Rel.READS, i, entity) for i in inputs)


def dpi_output(shape: Shape, entity: str, aspect: Mapping[str, Any]) -> Facts:
    """Outputs that are models are what the run trained; any other output is written data."""
    outputs = shape.urns(aspect, "outputs", "") + shape.edge_targets(aspect, "outputEdges", "")
    return Facts.of(
        (Rel.TRAINS, entity, o) if entity_type(o) == "mlModel" else (Rel.WRITES, entity, o) for o in outputs
    )


def _put(attrs: dict[Attr, str], name: Attr, value: str | int | None) -> None:
    if value is not None and value != "":
        attrs[name] = str(value)


HANDLERS: Mapping[str, Handler] = {
    "mlFeatureProperties": ml_feature_properties,
    "mlPrimaryKeyProperties": ml_feature_properties,
    "mlFeatureTableProperties": ml_feature_table_properties,
    "mlModelProperties": ml_model_properties,
    "mlModelGroupProperties": ml_model_group_properties,
    "mlModelDeploymentProperties": ml_model_deployment_properties,
    "versionProperties": version_properties,
    "dataProcessInstanceProperties": dpi_properties,
    "dataProcessInstanceInput": dpi_input,
    "dataProcessInstanceOutput": dpi_output,
}
