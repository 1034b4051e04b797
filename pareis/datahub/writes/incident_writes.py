"""What an incident intent writes to DataHub (DESIGN §3): pure functions of the intent and the settings.

:func:`intent_mcps` maps the state machine's outputs (:mod:`pareis.core.intents`) to proposals, in this order:

1. ``incidentInfo`` (UPSERT) on the incident: type CUSTOM / ``ML_DATA_QUALITY``, source ASSERTION_FAILURE with
   the assertion whose failure began the incident, priority from severity, entities = the dataset, assignees =
   the dataset's owners, the intent's title and description, state ACTIVE (Open, Update) or RESOLVED (Resolve);
   then, where the server accepts incidents on ML entities (``datahub.ml_incident_types``), the same aspect with
   the affected model versions (and features) among its entities, as a second proposal (:func:`incident_infos`);
2. ``globalTags`` PATCHes adding / removing ``pareis-at-risk`` — each entry attributed to the agent
   (``attribution.actor`` = the configured ``agent_urn``) and the incident (``attribution.source``), so resolving
   one incident removes only its own entry and a model two incidents touch stays tagged until both are resolved;
3. ``institutionalMemory`` PATCHes: a note on the dataset and the affected models linking the incident (keyed
   by its URL, so the Resolve note replaces the Open note);
4. ``structuredProperties`` PATCHes, one per model version: ``io.pareis.retrain_status`` and
   ``io.pareis.contamination``, attributed to the agent (the incident in ``attribution.sourceDetail``);
5. on Resolve, the postmortem Document (:mod:`pareis.datahub.writes.postmortem`).

Update writes only what changed: incidentInfo (its description reflects every published fact), the tag deltas,
notes on newly affected models, the retrain deltas, and contamination verdicts when they moved. Within each
step entities are in URN order. Stamps use the intent's time, except ``created`` (and a note's
``createStamp``) which use the incident's first failure so that every revision writes the same value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import quote

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    IncidentAssigneeClass,
    IncidentInfoClass,
    IncidentSourceClass,
    IncidentSourceTypeClass,
    IncidentStageClass,
    IncidentStateClass,
    IncidentStatusClass,
    IncidentTypeClass,
    InstitutionalMemoryMetadataClass,
    MetadataAttributionClass,
    StructuredPropertyValueAssignmentClass,
    TagAssociationClass,
)
from datahub.specific.aspect_helpers.institutional_memory import HasInstitutionalMemoryPatch
from datahub.specific.aspect_helpers.structured_properties import HasStructuredPropertiesPatch
from datahub.specific.aspect_helpers.tags import HasTagsPatch

from pareis.config import ML_INCIDENT_TYPES, DatahubSettings
from pareis.core import incident_text
from pareis.core.brief import linked
from pareis.core.incident_text import iso
from pareis.core.intents import TAG_AT_RISK, IncidentFacts, Intent, Open, Resolve, RetrainStatus, Update, healed
from pareis.datahub.writes import postmortem
from pareis.datahub.writes.definitions import CONTAMINATION, RETRAIN_STATUS
from pareis.datahub.writes.marks import stamp, system_metadata
from pareis.datahub.writes.writer import Mcp

CUSTOM_TYPE = "ML_DATA_QUALITY"


class EntityPatch(HasTagsPatch, HasStructuredPropertiesPatch, HasInstitutionalMemoryPatch):
    """acryl-datahub's tag, structured-property and note patch helpers over any entity URN."""


QUIET_CHANGES = frozenset({"failed_rows"})
"""Facts whose change alone does not make an Update rewrite ``incidentInfo`` on a write path that cannot keep
human edits (the ticket comment still says it)."""


def intent_mcps(intent: Intent, settings: DatahubSettings, *, keeps_edits: bool = True) -> list[Mcp]:
    """Every proposal ``intent`` writes, in write order (see the module docstring).

    ``keeps_edits``: the write path reads the current ``incidentInfo`` and keeps what people edited (REST). When
    False (Kafka: a proposal replaces the whole aspect, unread), an Update whose only change is in
    :data:`QUIET_CHANGES` writes no ``incidentInfo``, so the daily failing run does not undo a person's stage,
    priority or assignees; any other Update, and Resolve, still does.
    """
    return planned(intent, settings, ACRYL, keeps_edits=keeps_edits)


T = TypeVar("T")


@dataclass(frozen=True)
class Builders(Generic[T]):
    """How each kind of write is built: acryl's classes (:data:`ACRYL`, the reference) or straight in serial form
    (:mod:`pareis.datahub.writes.incident_serial`, the same bytes); :func:`planned` decides what is written."""

    infos: Callable[[Intent, DatahubSettings], list[T]]
    tags: Callable[[Intent, DatahubSettings, Iterable[str], Iterable[str]], list[T]]
    notes: Callable[[Intent, DatahubSettings, Iterable[str]], list[T]]
    properties: Callable[[Intent, DatahubSettings, Iterable[tuple[str, RetrainStatus]], bool], list[T]]
    document: Callable[[Resolve, DatahubSettings], T]


def planned(intent: Intent, settings: DatahubSettings, build: Builders[T], *, keeps_edits: bool = True) -> list[T]:
    """:func:`intent_mcps` with ``build``'s builders."""
    facts = intent.facts
    quiet = isinstance(intent, Update) and not keeps_edits and set(intent.changed) <= QUIET_CHANGES
    out: list[T] = [] if quiet else build.infos(intent, settings)
    if isinstance(intent, Open):
        out += build.tags(intent, settings, intent.tags_add, ())
        out += build.notes(intent, settings, [facts.dataset, *_models(facts)])
        out += build.properties(intent, settings, facts.retrain, True)
    elif isinstance(intent, Update):
        out += build.tags(intent, settings, intent.tags_add, intent.tags_remove)
        added = set(intent.tags_add)
        out += build.notes(intent, settings, [m for m in _models(facts) if m in added])
        out += build.properties(intent, settings, intent.retrain, "contamination" in intent.changed)
    else:
        out += build.tags(intent, settings, (), intent.tags_remove)
        out += build.notes(intent, settings, [facts.dataset, *_models(facts)])
        out += build.properties(intent, settings, intent.retrain, True)
        out.append(build.document(intent, settings))
    return out


def ml_entities(facts: IncidentFacts, types: Iterable[str]) -> list[str]:
    """The affected ML entities of the ``types`` that accept incidents (``datahub.ml_incident_types``): model
    versions (``mlModel``) and features (``mlFeature``), in URN order. Never a model group; feature tables are
    not in the blast radius, so none is listed."""
    accepted = set(types) & ML_INCIDENT_TYPES
    found = {m for m in _models(facts) if "mlModel" in accepted}
    found.update(f for f in facts.blast.features if "mlFeature" in accepted and f.startswith("urn:li:mlFeature:"))
    return sorted(found)


def incident_infos(intent: Intent, settings: DatahubSettings) -> list[Mcp]:
    """The ``incidentInfo`` writes of ``intent``: the dataset's incident, then — when some affected ML entities
    are of types the server accepts incidents on (``datahub.ml_incident_types``) — the same incident on the
    dataset and those entities, as a separate proposal. A server that refuses an entity fails the whole write it
    is in; written apart, a refusal leaves the dataset's incident standing (DESIGN §3)."""
    out = [incident_info(intent, settings)]
    extra = ml_entities(intent.facts, settings.ml_incident_types or ())
    if extra:
        out.append(incident_info(intent, settings, extra=extra))
    return out


def incident_info(intent: Intent, settings: DatahubSettings, *, extra: Iterable[str] = ()) -> Mcp:
    """The whole ``incidentInfo`` aspect of the incident as of ``intent``, on the dataset and ``extra``.

    Assignees are the failing dataset's owners (users and groups), assigned at the first failure so that every
    revision writes the same stamps; where the write path can read the current aspect, an Update or Resolve keeps
    a priority, stage or assignees a person changed since (:mod:`pareis.datahub.writes.incident_merge`).
    """
    facts = intent.facts
    window = facts.window
    resolved = healed(intent)
    status = IncidentStatusClass(
        state=IncidentStateClass.RESOLVED if resolved else IncidentStateClass.ACTIVE,
        stage=IncidentStageClass.FIXED if resolved else None,
        message=f"Healed at {iso(window.healed_ms)}: every assertion passes again." if resolved else None,
        lastUpdated=stamp(settings, intent.at_ms),
    )
    assignees = [
        IncidentAssigneeClass(actor=o.urn, assignedAt=stamp(settings, window.first_failure_ms))
        for o in facts.owners.dataset
    ]
    info = IncidentInfoClass(
        type=IncidentTypeClass.CUSTOM,
        customType=CUSTOM_TYPE,
        title=intent.title,
        description=description(intent, settings),
        entities=[facts.dataset, *extra],
        priority=facts.priority,
        assignees=assignees or None,
        status=status,
        source=IncidentSourceClass(type=IncidentSourceTypeClass.ASSERTION_FAILURE, sourceUrn=facts.source_assertion),
        startedAt=window.first_failure_ms,
        created=stamp(settings, window.first_failure_ms),
    )
    return MetadataChangeProposalWrapper(
        entityUrn=facts.urn, aspect=info, systemMetadata=system_metadata(settings, intent.effect_id, intent.at_ms)
    )


def tag_patches(
    intent: Intent, settings: DatahubSettings, *, add: Iterable[str] = (), remove: Iterable[str] = ()
) -> list[Mcp]:
    """``pareis-at-risk`` added to ``add`` and removed from ``remove``, attributed to the incident."""
    incident = intent.facts.urn
    out: list[Mcp] = []
    for urn in sorted(set(add)):
        attribution = MetadataAttributionClass(time=intent.at_ms, actor=settings.agent_urn, source=incident)
        out += (
            _patch(intent, settings, urn).add_tag(TagAssociationClass(tag=TAG_AT_RISK, attribution=attribution)).build()
        )
    for urn in sorted(set(remove)):
        out += _patch(intent, settings, urn).remove_tag(TAG_AT_RISK, attribution_source=incident).build()
    return out


def note_patches(intent: Intent, settings: DatahubSettings, urns: Iterable[str]) -> list[Mcp]:
    """A note linking the incident on each of ``urns`` (the Resolve note also names the postmortem)."""
    facts = intent.facts
    text = note_text(intent)
    out: list[Mcp] = []
    for urn in sorted(set(urns)):
        note = InstitutionalMemoryMetadataClass(
            url=incident_link(facts, settings),
            description=text,
            createStamp=stamp(settings, facts.window.first_failure_ms),
            updateStamp=stamp(settings, intent.at_ms),
        )
        out += _patch(intent, settings, urn).add_institutional_memory(note).build()
    return out


def property_patches(
    intent: Intent,
    settings: DatahubSettings,
    *,
    retrain: Iterable[tuple[str, RetrainStatus]],
    contamination: bool,
) -> list[Mcp]:
    """One ``structuredProperties`` PATCH per model version: the given retrain statuses, and (when
    ``contamination``) the verdict of every version the incident evaluated."""
    values = property_values(intent, retrain, contamination)
    # The incident goes into sourceDetail, not source: the source is part of an entry's key, and each property
    # keeps one entry per model version whichever incident wrote it last.
    attribution = MetadataAttributionClass(
        time=intent.at_ms, actor=settings.agent_urn, sourceDetail={"incident": intent.facts.urn}
    )
    out: list[Mcp] = []
    for urn in sorted(values):
        patch = _patch(intent, settings, urn)
        for key in sorted(values[urn]):
            patch.set_structured_property_manual(
                StructuredPropertyValueAssignmentClass(
                    propertyUrn=f"urn:li:structuredProperty:{key}", values=[values[urn][key]], attribution=attribution
                )
            )
        out += patch.build()
    return out


def note_text(intent: Intent) -> str:
    """The text of the note linking the incident (the Resolve note also names the postmortem)."""
    facts = intent.facts
    if isinstance(intent, Resolve):
        return (
            f"Pareis incident resolved {iso(facts.window.healed_ms)}: {intent.title}. "
            f"Postmortem: {postmortem.document_urn(facts.urn)}"
        )
    return f"Pareis incident opened {iso(facts.window.first_failure_ms)}: {intent.title}"


def property_values(
    intent: Intent, retrain: Iterable[tuple[str, RetrainStatus]], contamination: bool
) -> dict[str, dict[str, str]]:
    """Per model version, the property values to write (key → value): the given retrain statuses, and (when
    ``contamination``) the verdict of every version the incident evaluated."""
    values: dict[str, dict[str, str]] = {}
    for urn, status in retrain:
        values.setdefault(urn, {})[RETRAIN_STATUS] = status.value
    if contamination:
        for group in intent.facts.contamination:
            for verdict in group.versions:
                values.setdefault(verdict.version.urn, {})[CONTAMINATION] = verdict.verdict.value
    return values


def description(intent: Intent, settings: DatahubSettings) -> str:
    """``incidentInfo.description``: the intent's (:func:`pareis.core.incident_text.description`, decision first),
    rendered again with its entities linked to DataHub's web app when ``settings.ui_url`` is set (from the brief the
    intent keeps, when it does: the facts are not analysed again)."""
    if not settings.ui_url:
        return intent.description
    if intent.brief is not None:
        return incident_text.markdown(linked(intent.brief, settings.ui_url))
    return incident_text.description(intent.facts, settings.ui_url)


def incident_link(facts: IncidentFacts, settings: DatahubSettings) -> str:
    """The note's URL: the dataset's Incidents tab in DataHub's web app (``settings.ui_url``), qualified by the
    incident so each incident keeps its own note; without ``ui_url``, the incident URN itself."""
    if not settings.ui_url:
        return facts.urn
    base = settings.ui_url.rstrip("/")
    return f"{base}/dataset/{quote(facts.dataset, safe='')}/Incidents?incident={quote(facts.urn, safe='')}"


ACRYL: Builders[Mcp] = Builders(
    infos=incident_infos,
    tags=lambda intent, settings, add, remove: tag_patches(intent, settings, add=add, remove=remove),
    notes=note_patches,
    properties=lambda intent, settings, retrain, contamination: property_patches(
        intent, settings, retrain=retrain, contamination=contamination
    ),
    document=postmortem.document_mcp,
)
"""The reference builders: acryl-datahub's classes and patch helpers."""


def _models(facts: IncidentFacts) -> list[str]:
    return sorted({model.urn for model in facts.blast.models})


def _patch(intent: Intent, settings: DatahubSettings, urn: str) -> EntityPatch:
    return EntityPatch(urn, system_metadata=system_metadata(settings, intent.effect_id, intent.at_ms))
