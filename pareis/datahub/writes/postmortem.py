"""The postmortem of a resolved incident as a DataHub Document (DESIGN §3).

The Markdown comes from the core (:func:`pareis.core.incident_text.postmortem`: the decision as of the heal first,
then time to detect, time to heal, contaminated versions, rollback, class of failure, blast radius, timeline); this
module wraps it in a ``documentInfo`` aspect, PUBLISHED, related to the dataset, the affected models and the
contaminated versions. The document URN is a function of the incident URN, so a replayed Resolve rewrites the same
document.
"""

from __future__ import annotations

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import DocumentInfoClass

from pareis.config import DatahubSettings
from pareis.core import incident_text
from pareis.core.intents import Resolve
from pareis.datahub.writes.document import DOCUMENT_PREFIX, published_info
from pareis.datahub.writes.marks import system_metadata


def document_urn(incident_urn: str) -> str:
    """``urn:li:document:<incident id>-postmortem`` (the incident id without ``urn:li:incident:``)."""
    incident_id = incident_urn.removeprefix("urn:li:incident:")
    if incident_id == incident_urn:
        raise ValueError(f"not an incident URN: {incident_urn!r}")
    return f"{DOCUMENT_PREFIX}{incident_id}-postmortem"


def text(intent: Resolve, settings: DatahubSettings) -> str:
    """The postmortem's Markdown: the intent's, rendered again with its entities linked to DataHub's web app when
    ``settings.ui_url`` is set (from the same facts and the opened/resolved times of its timeline)."""
    report = intent.postmortem
    if not settings.ui_url:
        return report.text
    opened = next(e.at_ms for e in report.timeline if e.event == "opened")
    resolved = next(e.at_ms for e in report.timeline if e.event == "resolved")
    return incident_text.postmortem(intent.facts, opened, resolved, settings.ui_url).text


def document_info(intent: Resolve, settings: DatahubSettings) -> DocumentInfoClass:
    """The ``documentInfo`` aspect of the postmortem of ``intent``'s incident."""
    facts = intent.facts
    report = intent.postmortem
    related = {facts.dataset, *(m.urn for m in facts.blast.models), *report.contaminated_versions}
    properties = {
        "pareisIncident": facts.urn,
        "severity": facts.severity.value,
        "failureClass": report.failure_class,
        "timeToHealMs": str(report.time_to_heal_ms),
    }
    if report.time_to_detect_ms is not None:
        properties["timeToDetectMs"] = str(report.time_to_detect_ms)
    return published_info(
        settings,
        title=f"Postmortem: {intent.title}",
        text=text(intent, settings),
        related=related,
        properties=properties,
        at_ms=intent.at_ms,
    )


def document_mcp(intent: Resolve, settings: DatahubSettings) -> MetadataChangeProposalWrapper:
    """The UPSERT of the postmortem document, with Pareis's marks."""
    return MetadataChangeProposalWrapper(
        entityUrn=document_urn(intent.facts.urn),
        aspect=document_info(intent, settings),
        systemMetadata=system_metadata(settings, intent.effect_id, intent.at_ms),
    )
