"""DataHub file-format metadata: JSON arrays of MCPs (and legacy MCEs), as the `file` sink writes them.

Files are read directly (:mod:`pareis.datahub.files.json_array`: orjson for small files, element by element for large
ones), not through acryl-datahub's avrogen classes: an element becomes a :class:`Proposal` holding the aspect's
Pegasus JSON (its wire form) as written, and the checks that matter are those of the live path — the lineage
translation validates every aspect it reads (:mod:`pareis.datahub.translate.shape`) and PATCHes are applied as GMS
applies them (:mod:`pareis.datahub.gms.patch`), exactly as for change-log messages. The element shapes follow
``MetadataChangeProposalWrapper.from_obj`` and ``mcps_from_mce``:

* an MCP: ``entityType``, ``entityUrn``, ``changeType``, ``aspectName`` and ``aspect`` as ``{"json": value}`` or
  ``{"value": "<json text>", "contentType": …}`` (absent for a DELETE), ``systemMetadata``; the value is an object
  (every aspect is a record), or for a PATCH a list of operations or ``{"patch": [...]}``;
* an MCE (``proposedSnapshot``): one proposal per aspect of its snapshot, named by the aspect's schema
  (acryl-datahub's aspect classes supply the names; their ``com.linkedin.pegasus2avro.`` union keys become the
  Pegasus ``com.linkedin.``, and nulls are dropped, as ``pre_json_transform`` does);
* a usage aggregation (``bucket``): skipped, as DataHub's reader skips it.

:mod:`pareis.datahub.files.acryl_file` keeps the reader through acryl-datahub, the reference the tests and
``bench/metadata_file.py`` compare this one with.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pareis.datahub.files.json_array import JsonArrayError, array_elements
from pareis.errors import Poison

PATCH_CONTENT_TYPE = "application/json-patch+json"
JSON_CONTENT_TYPE = "application/json"
CHANGE_TYPES = frozenset({"UPSERT", "CREATE", "UPDATE", "DELETE", "PATCH", "RESTATE", "CREATE_ENTITY"})
_PEGASUS2AVRO = "com.linkedin.pegasus2avro."


class MetadataFileError(Poison):
    """A metadata file can't be read: missing, not JSON, or an element that is not DataHub file format."""


@dataclass(frozen=True, slots=True)
class Proposal:
    """One metadata change proposal in wire form.

    ``aspect`` is the Pegasus JSON of the aspect for UPSERT/CREATE/RESTATE, the JSON-patch document for PATCH
    (``content_type`` says which), and None for DELETE. ``source`` names the file and element index.
    """

    entity_type: str
    entity_urn: str
    change_type: str
    aspect_name: str
    aspect: Any
    content_type: str
    system_metadata: dict[str, Any] | None
    source: str

    @property
    def is_patch(self) -> bool:
        return self.change_type == "PATCH" or self.content_type == PATCH_CONTENT_TYPE


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """The files named: a folder stands for every ``.json`` file under it (recursively, the suffix in any case) in
    path order — a recorded timeline's steps are named ``NN-<step>.json`` — a file for itself.

    Raises :class:`MetadataFileError` for a path that does not exist and for a folder without ``.json`` files.
    """
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                (p for p in path.rglob("*") if p.suffix.lower() == ".json" and p.is_file()),
                key=lambda p: p.relative_to(path).parts,
            )
            if not found:
                raise MetadataFileError(f"{path}: folder holds no .json file")
            out.extend(found)
        elif path.exists():
            out.append(path)
        else:
            raise MetadataFileError(f"{path}: no such file or folder")
    return out


def read_proposals(paths: Iterable[str | Path]) -> Iterator[Proposal]:
    """Every proposal of every file (folders expanded by :func:`expand`), in file order then element order.

    Raises :class:`MetadataFileError` naming the file (and element) that can't be read.
    """
    for path in expand(paths):
        if not path.is_file():
            raise MetadataFileError(f"{path}: not a file")
        index = -1
        try:
            for index, element in enumerate(array_elements(path)):
                yield from proposals_of(element, f"{path}#{index}")
        except (OSError, JsonArrayError) as exc:
            where = f"{path}" if index < 0 else f"{path} after element {index}"
            raise MetadataFileError(f"{where}: not DataHub file-format metadata: {exc}") from exc


def proposals_of(element: Any, source: str) -> list[Proposal]:
    """The proposals one file element stands for (see the module docstring). Raises :class:`MetadataFileError`."""
    if not isinstance(element, dict):
        raise MetadataFileError(f"{source}: expected an object, got {type(element).__name__}")
    if "proposedSnapshot" in element:
        return _from_mce(element, source)
    if "aspect" in element:
        return [_from_mcp(element, source)]
    if "bucket" in element:
        return []  # a deprecated UsageAggregation: DataHub's reader drops it too
    raise MetadataFileError(f"{source}: neither a proposal (aspect) nor a snapshot (proposedSnapshot)")


def _from_mcp(element: Mapping[str, Any], source: str) -> Proposal:
    urn, name = element.get("entityUrn"), element.get("aspectName")
    if not isinstance(urn, str) or not isinstance(name, str):
        raise MetadataFileError(f"{source}: proposal without entityUrn or aspectName")
    change_type = element.get("changeType", "UPSERT")
    if change_type not in CHANGE_TYPES:
        raise MetadataFileError(f"{source}: unknown changeType {change_type!r}")
    entity_type = element.get("entityType")
    if entity_type is None:
        entity_type = _entity_type(urn, source)
    if not isinstance(entity_type, str):
        raise MetadataFileError(f"{source}: entityType must be a string")
    envelope = element.get("aspect")
    aspect: Any = None
    content_type = JSON_CONTENT_TYPE
    if envelope is not None:
        if not isinstance(envelope, Mapping):
            raise MetadataFileError(f"{source}: aspect must be an object")
        if envelope.get("json") is not None:
            aspect = envelope["json"]
        else:
            value, content_type = envelope.get("value"), envelope.get("contentType", JSON_CONTENT_TYPE)
            if not isinstance(value, str) or not isinstance(content_type, str):
                raise MetadataFileError(f"{source}: aspect {name} has neither json nor a value and contentType")
            try:
                aspect = orjson.loads(value)
            except orjson.JSONDecodeError as exc:
                raise MetadataFileError(f"{source}: aspect {name} is not JSON: {exc}") from exc
    elif change_type != "DELETE":
        raise MetadataFileError(f"{source}: {change_type} of {name} without an aspect")
    proposal = Proposal(entity_type, urn, change_type, name, aspect, content_type, _system(element, source), source)
    if envelope is not None:
        _check_value(proposal)
    return proposal


def _check_value(proposal: Proposal) -> None:
    """An aspect value is an object (a record); a patch a list of operations or an object holding them."""
    value = proposal.aspect
    if proposal.is_patch:
        if not isinstance(value, list | Mapping):
            raise MetadataFileError(
                f"{proposal.source}: patch of {proposal.aspect_name} must be a list of operations or an object, "
                f"got {type(value).__name__}"
            )
    elif not isinstance(value, Mapping):
        raise MetadataFileError(
            f"{proposal.source}: aspect {proposal.aspect_name} must be an object, got {type(value).__name__}"
        )


def _from_mce(element: Mapping[str, Any], source: str) -> list[Proposal]:
    snapshot = element["proposedSnapshot"]
    if not isinstance(snapshot, Mapping) or len(snapshot) != 1:
        raise MetadataFileError(f"{source}: proposedSnapshot must hold exactly one snapshot")
    (body,) = snapshot.values()
    urn = body.get("urn") if isinstance(body, Mapping) else None
    aspects = body.get("aspects") if isinstance(body, Mapping) else None
    if not isinstance(urn, str) or not isinstance(aspects, list):
        raise MetadataFileError(f"{source}: snapshot without urn or aspects")
    entity_type = _entity_type(urn, source)
    system = _system(element, source)
    names = aspect_names()
    out = []
    for i, wrapped in enumerate(aspects):
        if not isinstance(wrapped, Mapping) or len(wrapped) != 1:
            raise MetadataFileError(f"{source}: aspects[{i}] must hold exactly one aspect")
        ((schema, value),) = wrapped.items()
        name = names.get(schema)
        if name is None:
            raise MetadataFileError(f"{source}: aspects[{i}]: unknown aspect {schema!r}")
        if not isinstance(value, Mapping):
            raise MetadataFileError(
                f"{source}: aspects[{i}]: aspect {name} must be an object, got {type(value).__name__}"
            )
        out.append(
            Proposal(entity_type, urn, "UPSERT", name, pegasus(value), JSON_CONTENT_TYPE, system, f"{source}/{i}")
        )
    return out


def _system(element: Mapping[str, Any], source: str) -> dict[str, Any] | None:
    system = element.get("systemMetadata")
    if system is not None and not isinstance(system, dict):
        raise MetadataFileError(f"{source}: systemMetadata must be an object")
    return system


def _entity_type(urn: str, source: str) -> str:
    parts = urn.split(":", 3)
    if len(parts) < 4 or parts[0] != "urn" or parts[1] != "li" or not parts[2]:
        raise MetadataFileError(f"{source}: not a URN: {urn!r}")
    return parts[2]


def pegasus(value: Any) -> Any:
    """Avro-style JSON of an MCE aspect → Pegasus JSON: ``com.linkedin.pegasus2avro.`` union keys renamed to
    ``com.linkedin.``, nulls dropped (acryl-datahub's ``pre_json_transform``, without its class round trip)."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key.startswith(_PEGASUS2AVRO):
                return {"com.linkedin." + key[len(_PEGASUS2AVRO) :]: pegasus(inner)}
        if "fieldDiscriminator" in value:  # a union with aliases (the only one: CostCost)
            field = value["fieldDiscriminator"]
            return {field: pegasus(value[field])}
        return {k: pegasus(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [pegasus(v) for v in value]
    return value


@functools.cache
def aspect_names() -> dict[str, str]:
    """Aspect schema name (both spellings, ``com.linkedin.pegasus2avro.…`` and ``com.linkedin.…``) → aspect name,
    from acryl-datahub's generated aspect classes (imported on first use: they take a second to load)."""
    from datahub.metadata.schema_classes import ASPECT_CLASSES

    out: dict[str, str] = {}
    for cls in ASPECT_CLASSES:
        full = cls.RECORD_SCHEMA.fullname
        out[full] = cls.ASPECT_NAME
        if full.startswith(_PEGASUS2AVRO):
            out["com.linkedin." + full[len(_PEGASUS2AVRO) :]] = cls.ASPECT_NAME
    return out
