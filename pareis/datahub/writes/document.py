"""A document Pareis publishes in DataHub (DESIGN §2.5 evidence packs, §3 postmortems): one ``documentInfo`` shape,
published, related to the entities it is about, stamped with Pareis's actor at the time it stands for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from datahub.metadata.schema_classes import (
    DocumentContentsClass,
    DocumentInfoClass,
    DocumentStateClass,
    DocumentStatusClass,
    RelatedAssetClass,
)

from pareis.config import DatahubSettings
from pareis.datahub.writes.marks import stamp

DOCUMENT_PREFIX = "urn:li:document:"


def published_info(
    settings: DatahubSettings,
    *,
    title: str,
    text: str,
    related: Iterable[str],
    properties: Mapping[str, str],
    at_ms: int,
) -> DocumentInfoClass:
    """The ``documentInfo`` of a PUBLISHED document: ``text`` as its Markdown contents, related to ``related``
    (sorted, each once), created and last modified at ``at_ms`` by Pareis's actor."""
    at = stamp(settings, at_ms)
    return DocumentInfoClass(
        title=title,
        contents=DocumentContentsClass(text=text),
        status=DocumentStatusClass(state=DocumentStateClass.PUBLISHED),
        relatedAssets=[RelatedAssetClass(asset=urn) for urn in sorted(set(related))],
        customProperties=dict(properties),
        created=at,
        lastModified=at,
    )
