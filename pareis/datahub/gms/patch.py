"""DataHub PATCH proposals applied to an aspect value, as GMS's patch templates apply them.

GMS turns keyed arrays into maps (``tags`` keyed by ``tag``, ``upstreams`` by ``dataset`` …), applies the JSON
Patch operations to the map form, and turns the maps back into arrays. Newer clients say which fields key each
array (``{"arrayPrimaryKeys": {...}, "patch": [...]}``); older ones send a bare list of operations and rely on the
server's per-aspect template, reproduced in :data:`TEMPLATE_KEYS` for the aspects Pareis reads or writes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from pareis.errors import Poison

# Array field → the fields (dotted for nested) that key its elements; () keys a string array by the value itself.
TEMPLATE_KEYS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "globalTags": {"tags": ("tag",)},
    "glossaryTerms": {"terms": ("urn",)},
    "structuredProperties": {"properties": ("propertyUrn",)},
    "institutionalMemory": {"elements": ("url",)},
    "ownership": {"owners": ("owner", "type")},
    "upstreamLineage": {"upstreams": ("dataset",)},
    "siblings": {"siblings": ()},
    "dataJobInputOutput": {
        "inputDatasetEdges": ("destinationUrn",),
        "outputDatasetEdges": ("destinationUrn",),
        "inputDatajobEdges": ("destinationUrn",),
        "inputDatasetFields": (),
        "outputDatasetFields": (),
    },
    "dataProcessInstanceInput": {"inputEdges": ("destinationUrn",), "inputs": ()},
    "dataProcessInstanceOutput": {"outputEdges": ("destinationUrn",), "outputs": ()},
}
# Aspects whose fineGrainedLineages follow GMS's transformOperation/downstream/query/upstream template.
FINE_GRAINED_ASPECTS = frozenset({"upstreamLineage", "dataJobInputOutput"})
_NONE = "NONE"
_KEY_SEPARATOR = "\u241f"  # how arrayPrimaryKeys spells a nested key path ("attribution␟source")


class PatchError(Poison):
    """A patch that can't be applied: unknown operation, bad path, or an aspect with no known template."""


def apply_patch(aspect_name: str, current: Mapping[str, Any] | None, patch: Any) -> dict[str, Any]:
    """The aspect value after applying ``patch`` (either patch form) to ``current`` (None = absent)."""
    if isinstance(patch, Mapping) and "patch" in patch:
        ops = patch["patch"]
        keys = {
            field: tuple(k.replace(_KEY_SEPARATOR, ".") for k in spec)
            for field, spec in (patch.get("arrayPrimaryKeys") or {}).items()
        }
    elif isinstance(patch, Sequence) and not isinstance(patch, str | bytes):
        ops, keys = patch, dict(TEMPLATE_KEYS.get(aspect_name, {}))
    else:
        raise PatchError(f"{aspect_name}: patch is neither a list of operations nor {{patch: [...]}}")
    doc: dict[str, Any] = copy.deepcopy(dict(current or {}))
    fine_grained = aspect_name in FINE_GRAINED_ASPECTS and "fineGrainedLineages" not in keys
    for field, spec in keys.items():
        if isinstance(doc.get(field), list):
            doc[field] = _to_map(doc[field], spec)
    if fine_grained and isinstance(doc.get("fineGrainedLineages"), list):
        doc["fineGrainedLineages"] = _fine_grained_to_map(doc["fineGrainedLineages"])
    for op in ops:
        _apply_op(doc, op, aspect_name)
    for field, spec in keys.items():
        if isinstance(doc.get(field), dict):
            doc[field] = _from_map(doc[field], max(len(spec), 1))
    if fine_grained and isinstance(doc.get("fineGrainedLineages"), dict):
        doc["fineGrainedLineages"] = _fine_grained_from_map(doc["fineGrainedLineages"])
    return doc


def _key_of(element: Any, dotted: str) -> str:
    value = element
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


def _to_map(array: list[Any], spec: tuple[str, ...]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for element in array:
        path = [str(element)] if not spec else [_key_of(element, k) for k in spec]
        node = root
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = element
    return root


def _from_map(node: dict[str, Any], depth: int) -> list[Any]:
    if depth == 1:
        return list(node.values())
    return [element for child in node.values() for element in _from_map(child, depth - 1)]


def _fine_grained_to_map(entries: list[Mapping[str, Any]]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for entry in entries:
        by_down = root.setdefault(entry.get("transformOperation") or _NONE, {})
        for down in entry.get("downstreams") or []:
            by_query = by_down.setdefault(down, {}).setdefault(entry.get("query") or _NONE, {})
            for up in entry.get("upstreams") or [_NONE]:
                by_query[up] = {"confidenceScore": entry.get("confidenceScore", 1.0)}
    return root


def _fine_grained_from_map(root: Mapping[str, Any]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for operation, by_down in root.items():
        for down, by_query in by_down.items():
            for query, by_up in by_query.items():
                ups = [u for u in by_up if u != _NONE]
                entry: dict[str, Any] = {
                    "upstreamType": _upstream_type(ups),
                    "upstreams": ups,
                    "downstreamType": "FIELD",
                    "downstreams": [down],
                    "confidenceScore": min((v.get("confidenceScore", 1.0) for v in by_up.values()), default=1.0),
                }
                if operation != _NONE:
                    entry["transformOperation"] = operation
                if query != _NONE:
                    entry["query"] = query
                entries.append(entry)
    return entries


def _upstream_type(upstreams: list[str]) -> str:
    if not upstreams:
        return "NONE"
    return "DATASET" if all(u.startswith("urn:li:dataset:") for u in upstreams) else "FIELD_SET"


def _tokens(path: str) -> list[str]:
    if not path.startswith("/"):
        raise PatchError(f"patch path {path!r} is not a JSON pointer")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _apply_op(doc: dict[str, Any], op: Mapping[str, Any], aspect_name: str) -> None:
    kind, tokens = op.get("op"), _tokens(str(op.get("path", "")))
    node: Any = doc
    for token in tokens[:-1]:
        if not isinstance(node, dict):
            raise PatchError(f"{aspect_name}: path {op.get('path')} runs through a non-object")
        node = node.setdefault(token, {})
    last = tokens[-1]
    if kind in ("add", "replace"):
        if isinstance(node, list):
            node.append(op.get("value")) if last == "-" else node.insert(int(last), op.get("value"))
        elif isinstance(node, dict):
            node[last] = op.get("value")
        else:
            raise PatchError(f"{aspect_name}: cannot {kind} at {op.get('path')}")
    elif kind == "remove":
        if isinstance(node, dict):
            node.pop(last, None)
        elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
            del node[int(last)]
    else:
        raise PatchError(f"{aspect_name}: unsupported patch operation {kind!r}")
