"""What the DataHub server accepts, asked at start-up: which ML entity types take incidents (DESIGN §3).

DataHub master accepts ``mlModel``, ``mlFeature`` and ``mlFeatureTable`` in ``incidentInfo.entities`` (never
``mlModelGroup``); releases before it refuse them, and a refused entity fails the whole write. The registry's
schemas list the types either way, so the only sure answer is the server's own: :func:`probe_ml_incident_types`
writes one probe incident, ``urn:li:incident:pareis-capability-probe``, once per ML type on a probe entity of
that type (state RESOLVED, a constant stamp, so every start writes the same bytes), then leaves it on no entity
at all. A refusal (:class:`~pareis.datahub.writes.rest.GmsRejected`, HTTP 4xx) means "not accepted"; a GMS that is
down or refuses the token raises, as every start-up write does.

The probe incident stays in DataHub (resolved, on nothing, titled as a probe); probing needs the REST path,
since a Kafka write has no answer. ``datahub.ml_incident_types`` set explicitly skips the probe.
"""

from __future__ import annotations

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    AuditStampClass,
    IncidentInfoClass,
    IncidentStateClass,
    IncidentStatusClass,
    IncidentTypeClass,
)

from pareis.config import ML_INCIDENT_TYPES, DatahubSettings
from pareis.datahub.writes.marks import system_metadata
from pareis.datahub.writes.rest import GmsRejected
from pareis.datahub.writes.writer import DatahubWriter

PROBE_INCIDENT = "urn:li:incident:pareis-capability-probe"
PROBE_ENTITIES = {
    "mlModel": "urn:li:mlModel:(urn:li:dataPlatform:pareis,pareis-capability-probe,PROD)",
    "mlFeature": "urn:li:mlFeature:(pareis,pareis-capability-probe)",
    "mlFeatureTable": "urn:li:mlFeatureTable:(urn:li:dataPlatform:pareis,pareis-capability-probe)",
}
_STAMP_MS = 0  # constant: every start writes the same value


def probe_mcp(settings: DatahubSettings, entities: list[str]) -> MetadataChangeProposalWrapper:
    """The probe incident on ``entities``."""
    stamp = AuditStampClass(time=_STAMP_MS, actor=settings.actor)
    info = IncidentInfoClass(
        type=IncidentTypeClass.OPERATIONAL,
        title="Pareis capability probe (not an incident)",
        description="Written by Pareis at start-up to learn which entity types accept incidents.",
        entities=entities,
        status=IncidentStatusClass(state=IncidentStateClass.RESOLVED, lastUpdated=stamp),
        created=stamp,
    )
    return MetadataChangeProposalWrapper(
        entityUrn=PROBE_INCIDENT, aspect=info, systemMetadata=system_metadata(settings, "capability-probe", _STAMP_MS)
    )


def probe_ml_incident_types(writer: DatahubWriter, settings: DatahubSettings) -> list[str]:
    """The ML entity types GMS accepts incidents on, by writing the probe incident on each (sorted)."""
    accepted = []
    for kind in sorted(ML_INCIDENT_TYPES):
        try:
            writer.write([probe_mcp(settings, [PROBE_ENTITIES[kind]])])
        except GmsRejected:
            continue
        accepted.append(kind)
    writer.write([probe_mcp(settings, [])])
    return accepted
