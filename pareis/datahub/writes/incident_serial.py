"""An incident intent's proposals built straight in their serial form
(:class:`~pareis.datahub.writes.writer.SerialMcp`),
for the Kafka write path: the bytes acryl-datahub's classes give
(:func:`pareis.datahub.writes.incident_writes.intent_mcps`,
the reference: ``tests/unit/test_incident_serial.py`` compares every record), at a fraction of the cost.

What is written, and in which order, is decided once (:func:`~pareis.datahub.writes.incident_writes.planned`); only the
building differs. Acryl builds each aspect as a class, turns it into Avro-shaped JSON (``to_obj``: fields in
schema order, unions tagged by type name), drops the null fields and renames the Avro namespaces
(``pre_json_transform``), then ``json.dumps`` it with the default separators; here the same JSON objects are built
as dicts in the same key order and dumped with the same function. The postmortem Document (Resolve only) is left
to acryl.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pareis.config import DatahubSettings
from pareis.core.incident_text import iso
from pareis.core.intents import TAG_AT_RISK, Intent, RetrainStatus, healed
from pareis.datahub.writes import postmortem
from pareis.datahub.writes.incident_writes import (
    CUSTOM_TYPE,
    Builders,
    description,
    incident_link,
    ml_entities,
    note_text,
    planned,
    property_values,
)
from pareis.datahub.writes.marks import EFFECT_PROPERTY, WRITER_NAME, WRITER_PROPERTY, run_id
from pareis.datahub.writes.writer import Mcp, SerialMcp

JSON = "application/json"
JSON_PATCH = "application/json-patch+json"
NO_RUN_ID = "no-run-id-provided"  # SystemMetadata.lastRunId's default
UNIT_SEPARATOR = "\u241f"  # acryl's compound-key separator in arrayPrimaryKeys
TAGS_KEYS = {"tags": [f"attribution{UNIT_SEPARATOR}source", "tag"]}
NOTES_KEYS = {"elements": ["url"]}
PROPERTIES_KEYS = {"properties": ["propertyUrn", f"attribution{UNIT_SEPARATOR}source"]}

_dumps = json.dumps  # acryl's serialiser, default separators and ASCII escapes


def intent_serial(intent: Intent, settings: DatahubSettings, *, keeps_edits: bool = False) -> list[Mcp | SerialMcp]:
    """:func:`~pareis.datahub.writes.incident_writes.intent_mcps` in serial form (the same records once encoded)."""
    return planned(intent, settings, SERIAL, keeps_edits=keeps_edits)


def system_metadata(settings: DatahubSettings, effect_id: str, at_ms: int) -> dict[str, Any]:
    """:func:`pareis.datahub.writes.marks.system_metadata` as its Avro record."""
    return {
        "lastObserved": at_ms,
        "runId": run_id(settings, effect_id),
        "lastRunId": NO_RUN_ID,
        "pipelineName": settings.pipeline_name,
        "registryName": None,
        "registryVersion": None,
        "properties": {WRITER_PROPERTY: WRITER_NAME, EFFECT_PROPERTY: effect_id},
        "version": None,
        "schemaVersion": None,
        "aspectCreated": None,
        "aspectModified": None,
    }


def proposal(
    urn: str, aspect_name: str, change_type: str, value: str, content_type: str, meta: dict[str, Any]
) -> SerialMcp:
    """The ``MetadataChangeProposal`` record of one aspect write (entity type as acryl guesses it from the URN)."""
    return SerialMcp(
        urn,
        aspect_name,
        {
            "auditHeader": None,
            "entityType": urn.split(":")[2],
            "entityUrn": urn,
            "entityKeyAspect": None,
            "changeType": change_type,
            "aspectName": aspect_name,
            "aspect": {"value": value.encode(), "contentType": content_type},
            "systemMetadata": meta,
            "headers": None,
        },
    )


def _stamp(settings: DatahubSettings, at_ms: int) -> dict[str, Any]:
    return {"time": at_ms, "actor": settings.actor}


def incident_infos(intent: Intent, settings: DatahubSettings) -> list[Mcp | SerialMcp]:
    """:func:`~pareis.datahub.writes.incident_writes.incident_infos` in serial form."""
    out: list[Mcp | SerialMcp] = [incident_info(intent, settings, ())]
    extra = ml_entities(intent.facts, settings.ml_incident_types or ())
    if extra:
        out.append(incident_info(intent, settings, extra))
    return out


def incident_info(intent: Intent, settings: DatahubSettings, extra: Iterable[str]) -> SerialMcp:
    """:func:`~pareis.datahub.writes.incident_writes.incident_info` in serial form."""
    facts = intent.facts
    window = facts.window
    status: dict[str, Any]
    if healed(intent):
        status = {
            "state": "RESOLVED",
            "stage": "FIXED",
            "message": f"Healed at {iso(window.healed_ms)}: every assertion passes again.",
        }
    else:
        status = {"state": "ACTIVE"}
    status["lastUpdated"] = _stamp(settings, intent.at_ms)
    info: dict[str, Any] = {"type": "CUSTOM", "customType": CUSTOM_TYPE}
    if intent.title is not None:
        info["title"] = intent.title
    text = description(intent, settings)
    if text is not None:
        info["description"] = text
    info["entities"] = [facts.dataset, *extra]
    if facts.priority is not None:
        info["priority"] = facts.priority
    first = window.first_failure_ms
    assignees = [{"actor": o.urn, "assignedAt": _stamp(settings, first)} for o in facts.owners.dataset]
    if assignees:
        info["assignees"] = assignees
    info["status"] = status
    source: dict[str, Any] = {"type": "ASSERTION_FAILURE"}
    if facts.source_assertion is not None:
        source["sourceUrn"] = facts.source_assertion
    info["source"] = source
    if first is not None:
        info["startedAt"] = first
    info["created"] = _stamp(settings, first)
    meta = system_metadata(settings, intent.effect_id, intent.at_ms)
    return proposal(facts.urn, "incidentInfo", "UPSERT", _dumps(info), JSON, meta)


def pointer_component(component: str) -> str:
    """``component`` escaped as one JSON Pointer reference token (RFC 6901), as acryl's patch paths spell it."""
    return component.replace("~", "~0").replace("/", "~1")


def _patch(
    urn: str, aspect_name: str, keys: dict[str, list[str]], ops: list[dict[str, Any]], meta: dict[str, Any]
) -> SerialMcp:
    doc = _dumps({"arrayPrimaryKeys": keys, "patch": ops})
    return proposal(urn, aspect_name, "PATCH", doc, JSON_PATCH, meta)


def tag_patches(
    intent: Intent, settings: DatahubSettings, add: Iterable[str], remove: Iterable[str]
) -> list[Mcp | SerialMcp]:
    """:func:`~pareis.datahub.writes.incident_writes.tag_patches` in serial form."""
    incident = intent.facts.urn
    path = f"/tags/{pointer_component(incident)}/{pointer_component(TAG_AT_RISK)}"
    out: list[Mcp | SerialMcp] = []
    for urn in sorted(set(add)):
        attribution = {"time": intent.at_ms, "actor": settings.agent_urn, "source": incident, "sourceDetail": {}}
        op = {"op": "add", "path": path, "value": {"tag": TAG_AT_RISK, "attribution": attribution}}
        out.append(
            _patch(urn, "globalTags", TAGS_KEYS, [op], system_metadata(settings, intent.effect_id, intent.at_ms))
        )
    for urn in sorted(set(remove)):
        op = {"op": "remove", "path": path, "value": {}}
        out.append(
            _patch(urn, "globalTags", TAGS_KEYS, [op], system_metadata(settings, intent.effect_id, intent.at_ms))
        )
    return out


def note_patches(intent: Intent, settings: DatahubSettings, urns: Iterable[str]) -> list[Mcp | SerialMcp]:
    """:func:`~pareis.datahub.writes.incident_writes.note_patches` in serial form."""
    facts = intent.facts
    url = incident_link(facts, settings)
    note = {
        "url": url,
        "description": note_text(intent),
        "createStamp": _stamp(settings, facts.window.first_failure_ms),
        "updateStamp": _stamp(settings, intent.at_ms),
    }
    ops = [{"op": "add", "path": f"/elements/{pointer_component(url)}", "value": note}]
    meta = system_metadata(settings, intent.effect_id, intent.at_ms)
    doc = _dumps({"arrayPrimaryKeys": NOTES_KEYS, "patch": ops})  # the same patch on every entity: dumped once
    return [proposal(urn, "institutionalMemory", "PATCH", doc, JSON_PATCH, meta) for urn in sorted(set(urns))]


def property_patches(
    intent: Intent, settings: DatahubSettings, retrain: Iterable[tuple[str, RetrainStatus]], contamination: bool
) -> list[Mcp | SerialMcp]:
    """:func:`~pareis.datahub.writes.incident_writes.property_patches` in serial form."""
    values = property_values(intent, retrain, contamination)
    attribution = {"time": intent.at_ms, "actor": settings.agent_urn, "sourceDetail": {"incident": intent.facts.urn}}
    out: list[Mcp | SerialMcp] = []
    for urn in sorted(values):
        ops = []
        for key in sorted(values[urn]):
            prop = f"urn:li:structuredProperty:{key}"
            value = {"propertyUrn": prop, "values": [{"string": values[urn][key]}], "attribution": attribution}
            ops.append({"op": "add", "path": f"/properties/{pointer_component(prop)}/", "value": value})
        meta = system_metadata(settings, intent.effect_id, intent.at_ms)
        out.append(_patch(urn, "structuredProperties", PROPERTIES_KEYS, ops, meta))
    return out


SERIAL: Builders[Mcp | SerialMcp] = Builders(
    infos=incident_infos,
    tags=tag_patches,
    notes=note_patches,
    properties=property_patches,
    document=postmortem.document_mcp,
)
"""The serial builders (the Document left to acryl)."""
