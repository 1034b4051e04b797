"""The evidence pack as a DataHub Document related to its model (DESIGN §2.5).

The document URN is a function of the model URN alone (``urn:li:document:pareis-evidence-<md5 of the URN>``), so
regenerating the pack replaces the document rather than adding one. Its text is the pack's Markdown; it is related
to the model (version or group) and to every version the pack covers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from datahub.emitter.mcp import MetadataChangeProposalWrapper

from pareis.config import DatahubSettings
from pareis.datahub.writes.document import DOCUMENT_PREFIX, published_info
from pareis.datahub.writes.marks import system_metadata


def document_urn(model: str) -> str:
    """``urn:li:document:pareis-evidence-<md5 hex of the model URN>``."""
    return f"{DOCUMENT_PREFIX}pareis-evidence-{hashlib.md5(model.encode('utf-8')).hexdigest()}"


def document_mcp(pack: Mapping[str, Any], text: str, settings: DatahubSettings) -> MetadataChangeProposalWrapper:
    """The UPSERT of the evidence document of ``pack`` (its JSON) with ``text`` (its Markdown), stamped at the
    pack's generation time, with Pareis's marks."""
    header = pack["header"]
    model, at_ms = header["model"], header["generated_at_ms"]
    info = published_info(
        settings,
        title=f"EU AI Act Article 10 evidence pack: {model}",
        text=text,
        related=[model, *header["versions"]],
        properties={"pareisEvidence": pack["kind"], "generatedAt": header["generated_at"]},
        at_ms=at_ms,
    )
    effect = f"evidence/{document_urn(model)}/{at_ms}"
    return MetadataChangeProposalWrapper(
        entityUrn=document_urn(model), aspect=info, systemMetadata=system_metadata(settings, effect, at_ms)
    )
