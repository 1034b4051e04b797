"""DataHub file-format metadata: JSON arrays of MCPs (and legacy MCEs), as the `file` sink writes them.

Files are read with acryl-datahub's own reader (``read_metadata_file``), so whatever DataHub's connectors write is
read the same way here. Every element becomes a :class:`Proposal` holding Pegasus JSON (the wire form of an
aspect), ready to be translated or published.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.mcp_builder import mcps_from_mce
from datahub.emitter.serialization_helper import pre_json_transform
from datahub.ingestion.source.file import read_metadata_file
from datahub.metadata.schema_classes import MetadataChangeEventClass, MetadataChangeProposalClass

from pareis.errors import Poison

PATCH_CONTENT_TYPE = "application/json-patch+json"
JSON_CONTENT_TYPE = "application/json"


class MetadataFileError(Poison):
    """A metadata file can't be read: missing, not JSON, or an element DataHub's reader rejects."""


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
    """The files named: a folder stands for its ``*.json`` files in name order (a recorded timeline's steps are
    named ``NN-<step>.json``), a file for itself."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        out.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return out


def read_proposals(paths: Iterable[str | Path]) -> Iterator[Proposal]:
    """Every proposal of every file (folders expanded by :func:`expand`), in file order then element order.

    Raises :class:`MetadataFileError` naming the file (and element) that can't be read.
    """
    for path in expand(paths):
        if not path.is_file():
            raise MetadataFileError(f"{path}: no such file")
        try:
            items = list(read_metadata_file(path))
        except RecursionError as exc:
            raise MetadataFileError(f"{path}: not DataHub file-format metadata: nested too deeply") from exc
        except Exception as exc:  # acryl's reader fails on malformed input with any class (AttributeError, …)
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            raise MetadataFileError(f"{path}: not DataHub file-format metadata: {detail}") from exc
        for index, item in enumerate(items):
            source = f"{path}#{index}"
            for mcp in _as_proposals(item):
                yield _to_proposal(mcp, source)


def _as_proposals(
    item: MetadataChangeEventClass | MetadataChangeProposalClass | MetadataChangeProposalWrapper,
) -> list[MetadataChangeProposalClass | MetadataChangeProposalWrapper]:
    if isinstance(item, MetadataChangeEventClass):
        # Legacy snapshot events carry several aspects; GMS logs each as its own change.
        return list(mcps_from_mce(item))
    return [item]


def _to_proposal(mcp: MetadataChangeProposalClass | MetadataChangeProposalWrapper, source: str) -> Proposal:
    if mcp.entityUrn is None or mcp.aspectName is None:
        raise MetadataFileError(f"{source}: proposal without entityUrn or aspectName")
    change_type = str(mcp.changeType)
    system_metadata = pre_json_transform(mcp.systemMetadata.to_obj()) if mcp.systemMetadata else None
    if isinstance(mcp, MetadataChangeProposalWrapper):
        aspect = pre_json_transform(mcp.aspect.to_obj()) if mcp.aspect is not None else None
        content_type = JSON_CONTENT_TYPE
    elif mcp.aspect is not None:
        content_type = mcp.aspect.contentType
        try:
            aspect = json.loads(mcp.aspect.value)
        except ValueError as exc:
            raise MetadataFileError(f"{source}: aspect {mcp.aspectName} is not JSON: {exc}") from exc
    else:
        aspect, content_type = None, JSON_CONTENT_TYPE
    return Proposal(
        entity_type=mcp.entityType,
        entity_urn=mcp.entityUrn,
        change_type=change_type,
        aspect_name=mcp.aspectName,
        aspect=aspect,
        content_type=content_type,
        system_metadata=system_metadata,
        source=source,
    )
