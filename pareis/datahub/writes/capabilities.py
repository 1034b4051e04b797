"""What the DataHub server accepts, asked at start-up: which ML entity types take incidents (DESIGN §3).

DataHub master accepts ``mlModel``, ``mlFeature`` and ``mlFeatureTable`` in ``incidentInfo.entities`` and lists
them on those entities (never ``mlModelGroup``); releases before 1.7.0 refuse them, and a refused entity fails the
whole write; the released 1.7.0 accepts and stores them but cannot list them on the entity, so they are invisible.
The registry's schemas list the types either way, so the only sure answer is the server's own, on both counts:

* it can list incidents on the type: GraphQL ``entity(urn) { … on MLModel { incidents { total } } }`` on a probe
  entity validates (a server without the field answers a validation error, "Field 'incidents' in type 'MLModel' is
  undefined"); a refusal or error of that query means "cannot list";
* it accepts the write: :func:`probe_ml_incident_types` writes one probe incident,
  ``urn:li:incident:pareis-capability-probe``, on a probe entity of that type (state RESOLVED, a constant stamp,
  so every start writes the same bytes); a refusal (:class:`~pareis.datahub.writes.rest.GmsRejected`, HTTP 4xx)
  means "not accepted".

A type counts only when both hold. The probe incident is then left on no entity at all. A GMS that is down or
refuses the token raises, as every start-up write does.

The probe incident stays in DataHub (resolved, on nothing, titled as a probe); probing needs the REST path,
since a Kafka write has no answer. ``datahub.ml_incident_types`` set explicitly skips the probe.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import requests
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
from pareis.datahub.writes.rest import GmsRejected, from_rest_error
from pareis.datahub.writes.writer import DatahubWriter
from pareis.errors import Fatal, Retriable

PROBE_INCIDENT = "urn:li:incident:pareis-capability-probe"
PROBE_ENTITIES = {
    "mlModel": "urn:li:mlModel:(urn:li:dataPlatform:pareis,pareis-capability-probe,PROD)",
    "mlFeature": "urn:li:mlFeature:(pareis,pareis-capability-probe)",
    "mlFeatureTable": "urn:li:mlFeatureTable:(urn:li:dataPlatform:pareis,pareis-capability-probe)",
}
GRAPHQL_TYPES = {"mlModel": "MLModel", "mlFeature": "MLFeature", "mlFeatureTable": "MLFeatureTable"}
"""The GraphQL type of each ML entity type (what ``entity(urn:)`` resolves it to)."""
_STAMP_MS = 0  # constant: every start writes the same value
_LISTING = (
    "query pareisProbe($urn: String!) "
    "{{ entity(urn: $urn) {{ ... on {type} {{ incidents(start: 0, count: 1) {{ total }} }} }} }}"
)


@runtime_checkable
class IncidentLister(Protocol):
    """Asks the server whether it can list incidents on an entity type (a writer that stands for a server, the
    in-memory one, answers for itself)."""

    def lists_incidents(self, kind: str, urn: str) -> bool:
        """Whether incidents on ``urn`` (of ML entity type ``kind``) can be listed on it. Raises Retriable (GMS
        unreachable) or Fatal (token refused)."""
        ...


class GraphqlLister:
    """:class:`IncidentLister` over GMS's GraphQL endpoint (``POST <gms>/api/graphql``)."""

    def __init__(self, gms_url: str, token: str | None = None, *, timeout_s: float = 30.0) -> None:
        self._url = gms_url.rstrip("/") + "/api/graphql"
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout_s = timeout_s

    @classmethod
    def from_settings(cls, settings: DatahubSettings) -> GraphqlLister:
        if not settings.gms_url:
            raise Fatal("probing GMS needs datahub.gms_url")
        return cls(settings.gms_url, settings.token.get_secret_value() if settings.token else None)

    def lists_incidents(self, kind: str, urn: str) -> bool:
        what = f"POST /api/graphql (incidents on {kind})"
        query: dict[str, Any] = {"query": _LISTING.format(type=GRAPHQL_TYPES[kind]), "variables": {"urn": urn}}
        try:
            response = requests.post(self._url, json=query, headers=self._headers, timeout=self._timeout_s)
            response.raise_for_status()
            answer: Any = response.json()
        except requests.RequestException as exc:
            error = from_rest_error(exc, what)
            if isinstance(error, GmsRejected):
                return False  # a query GMS refuses (4xx) lists nothing
            raise error from exc
        except ValueError as exc:
            raise Retriable(f"GMS answered non-JSON to {what}") from exc
        return isinstance(answer, dict) and not answer.get("errors") and "data" in answer


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


def probe_ml_incident_types(
    writer: DatahubWriter, settings: DatahubSettings, lister: IncidentLister | None = None
) -> list[str]:
    """The ML entity types GMS both lists and accepts incidents on (sorted): asked with ``lister`` (default: the
    writer when it answers for its server, else GMS's GraphQL at ``settings.gms_url``), then by writing the probe
    incident on each type it lists."""
    if lister is None:
        lister = writer if isinstance(writer, IncidentLister) else GraphqlLister.from_settings(settings)
    accepted = []
    for kind in sorted(ML_INCIDENT_TYPES):
        if not lister.lists_incidents(kind, PROBE_ENTITIES[kind]):
            continue
        try:
            writer.write([probe_mcp(settings, [PROBE_ENTITIES[kind]])])
        except GmsRejected:
            continue
        accepted.append(kind)
    writer.write([probe_mcp(settings, [])])
    return accepted
