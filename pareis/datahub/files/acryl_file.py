"""The reference reader of DataHub file-format metadata: through acryl-datahub's own ``read_metadata_file``
(avrogen ``from_obj`` and validation, then back to JSON).

This was Pareis's reader; :mod:`pareis.datahub.files.metadata_file` reads the same files directly, an order of magnitude
faster and in bounded memory. It stays for what compares the two: the equivalence tests (every golden, the demo
recording) and ``bench/metadata_file.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from avro.errors import AvroException
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.mcp_builder import mcps_from_mce
from datahub.emitter.serialization_helper import pre_json_transform
from datahub.ingestion.source.file import read_metadata_file
from datahub.metadata.schema_classes import MetadataChangeEventClass, MetadataChangeProposalClass

from pareis.datahub.files.metadata_file import JSON_CONTENT_TYPE, MetadataFileError, Proposal, expand


def acryl_proposals(paths: Iterable[str | Path]) -> Iterator[Proposal]:
    """Every proposal of every file (folders expanded by :func:`expand`), in file order then element order.

    Raises :class:`MetadataFileError` naming the file (and element) that can't be read.
    """
    for path in expand(paths):
        if not path.is_file():
            raise MetadataFileError(f"{path}: no such file")
        try:
            items = list(read_metadata_file(path))
        except (OSError, ValueError, KeyError, TypeError, AssertionError, AvroException) as exc:
            raise MetadataFileError(f"{path}: not DataHub file-format metadata: {exc}") from exc
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
