"""Pareis's marks on its own DataHub writes, and how to recognise them when they come back (DESIGN §1).

Every proposal Pareis writes carries:

* ``systemMetadata.pipelineName`` = the configured ``pipeline_name``;
* ``systemMetadata.runId`` = ``<pipeline_name>-<effect id>``, so a replayed effect writes the same run id;
* ``systemMetadata.properties`` = ``{"writer": "pareis", "pareisEffectId": <effect id>}``;
* ``systemMetadata.lastObserved`` = the effect's own time (not the wall clock), so a replay is byte-identical;
* audit stamps (``created``, ``lastUpdated``, ``createStamp`` …) whose actor is the configured ``actor``.

GMS copies the proposal's system metadata into the change log, and stamps ``created`` with the writing actor
(when writes go through REST with Pareis's token), so :func:`is_own_write` recognises Pareis's writes by either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from datahub.metadata.schema_classes import AuditStampClass, SystemMetadataClass

from pareis.config import DatahubSettings

WRITER_PROPERTY = "writer"
WRITER_NAME = "pareis"
EFFECT_PROPERTY = "pareisEffectId"


def run_id(settings: DatahubSettings, effect_id: str) -> str:
    """The ``systemMetadata.runId`` of every proposal written for ``effect_id``."""
    return f"{settings.pipeline_name}-{effect_id}"


def system_metadata(settings: DatahubSettings, effect_id: str, at_ms: int) -> SystemMetadataClass:
    """A fresh system-metadata record marking a write of ``effect_id`` made at ``at_ms``.

    Fresh on every call: acryl's REST emitter adds its client properties to the object it is given.
    """
    return SystemMetadataClass(
        lastObserved=at_ms,
        runId=run_id(settings, effect_id),
        pipelineName=settings.pipeline_name,
        properties={WRITER_PROPERTY: WRITER_NAME, EFFECT_PROPERTY: effect_id},
    )


def stamp(settings: DatahubSettings, at_ms: int) -> AuditStampClass:
    """An audit stamp by the configured actor at ``at_ms``."""
    return AuditStampClass(time=at_ms, actor=settings.actor)


def is_own_write(
    system_metadata: Mapping[str, Any] | None, created: Mapping[str, Any] | None, settings: DatahubSettings
) -> bool:
    """True when a change-log entry records a write Pareis made (so the caller can ignore it).

    ``system_metadata`` and ``created`` are the MCL's fields as plain dicts (``None`` when absent). A write is
    Pareis's when its pipeline name is the configured one, its properties name Pareis as the writer, or its
    ``created`` actor is the configured actor. Changes GMS derives on its own (e.g. ``incidentsSummary`` on a
    dataset after an ``incidentInfo`` write) carry none of these marks and are not recognised.
    """
    if system_metadata:
        if system_metadata.get("pipelineName") == settings.pipeline_name:
            return True
        properties = system_metadata.get("properties") or {}
        if isinstance(properties, Mapping) and properties.get(WRITER_PROPERTY) == WRITER_NAME:
            return True
    return created is not None and created.get("actor") == settings.actor
