"""The proposals Pareis writes for an incident and at start-up: valid for acryl-datahub, marked, deterministic,
and saying what DESIGN §3 says (checked on the realistic story of ``test_writer_scenario``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from datahub.emitter.aspect import ASPECT_MAP
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.mcp_builder import entity_supports_aspect
from datahub.metadata.schema_classes import (
    AIAgentInfoClass,
    DocumentInfoClass,
    IncidentInfoClass,
    MetadataChangeProposalClass,
    StructuredPropertyDefinitionClass,
    TagPropertiesClass,
)

from pareis.config import DatahubSettings
from pareis.core.intents import TAG_AT_RISK, Intent
from pareis.datahub.gms.patch import apply_patch
from pareis.datahub.writes.definitions import (
    CONTAMINATION_URN,
    RELIABILITY_SCORE_URN,
    RETRAIN_STATUS_URN,
    definition_mcps,
)
from pareis.datahub.writes.incident_writes import incident_link, intent_mcps
from pareis.datahub.writes.postmortem import document_urn
from pareis.datahub.writes.writer import Mcp
from tests.support.writer_scenario import (
    AMOUNT,
    AVG_AMOUNT,
    CHURN_V1,
    CHURN_V2,
    CHURN_V3,
    DATASET,
    DISCOUNT,
    FRAUD,
    NOT_NULL,
    SETTINGS,
    T0,
    story,
)

STORY = story()
INTENTS: dict[str, Intent] = {"open": STORY.open, "update": STORY.update, "resolve": STORY.resolve}
MODELS = [CHURN_V2, CHURN_V3, FRAUD]


def all_batches() -> dict[str, list[Mcp]]:
    batches: dict[str, list[Mcp]] = {name: intent_mcps(intent, SETTINGS) for name, intent in INTENTS.items()}
    batches["definitions"] = list(definition_mcps(SETTINGS))
    return batches


BATCHES = all_batches()
EVERY_MCP = [(name, index, mcp) for name, batch in BATCHES.items() for index, mcp in enumerate(batch)]


def patch_doc(mcp: Mcp) -> dict[str, Any]:
    assert isinstance(mcp, MetadataChangeProposalClass) and mcp.aspect is not None
    doc = json.loads(mcp.aspect.value)
    assert isinstance(doc, dict)
    return doc


def of(batch: list[Mcp], aspect_name: str) -> list[Mcp]:
    return [m for m in batch if m.aspectName == aspect_name]


def aspect_of(mcp: Mcp) -> Any:
    assert isinstance(mcp, MetadataChangeProposalWrapper)
    return mcp.aspect


# --- valid, round-tripping, marked ---------------------------------------------------------------------------


@pytest.mark.parametrize(("batch", "index", "mcp"), EVERY_MCP, ids=[f"{b}-{i}" for b, i, _ in EVERY_MCP])
def test_every_proposal_passes_acryl_validation_and_fits_its_entity(batch: str, index: int, mcp: Mcp) -> None:
    assert mcp.validate(), f"{batch}[{index}] {mcp.aspectName} on {mcp.entityUrn}"
    assert mcp.entityUrn is not None and mcp.aspectName is not None
    assert entity_supports_aspect(mcp.entityType, ASPECT_MAP[mcp.aspectName]), (mcp.entityType, mcp.aspectName)
    if isinstance(mcp, MetadataChangeProposalWrapper):
        assert mcp.changeType == "UPSERT"
        assert mcp.aspect is not None and mcp.aspect.validate()
    else:
        assert mcp.changeType == "PATCH"
        assert mcp.aspect is not None and mcp.aspect.contentType == "application/json-patch+json"
        doc = patch_doc(mcp)
        assert set(doc) == {"arrayPrimaryKeys", "patch"} and doc["patch"]
        for op in doc["patch"]:
            assert op["op"] in ("add", "remove") and op["path"].startswith("/")


@pytest.mark.parametrize(("batch", "index", "mcp"), EVERY_MCP, ids=[f"{b}-{i}" for b, i, _ in EVERY_MCP])
def test_every_proposal_round_trips_through_acryl_classes(batch: str, index: int, mcp: Mcp) -> None:
    obj = mcp.to_obj()
    back = type(mcp).from_obj(obj)
    assert back == mcp
    assert back.to_obj() == obj


@pytest.mark.parametrize(("batch", "index", "mcp"), EVERY_MCP, ids=[f"{b}-{i}" for b, i, _ in EVERY_MCP])
def test_every_proposal_carries_pareis_marks(batch: str, index: int, mcp: Mcp) -> None:
    marks = mcp.systemMetadata
    assert marks is not None
    effect = INTENTS[batch].effect_id if batch in INTENTS else "definitions-v1"
    assert marks.pipelineName == "pareis"
    assert marks.runId == f"pareis-{effect}"
    assert marks.properties == {"writer": "pareis", "pareisEffectId": effect}
    assert marks.lastObserved == (INTENTS[batch].at_ms if batch in INTENTS else 1_735_689_600_000)


def test_building_again_gives_the_same_proposals_in_the_same_order() -> None:
    again = all_batches()
    for name, batch in BATCHES.items():
        assert [m.to_obj() for m in again[name]] == [m.to_obj() for m in batch], name


def _actors(value: Any, *, attributions: bool = False) -> set[str]:
    """The actors of audit stamps in ``value`` (with ``attributions``: of ``attribution`` records only)."""
    if isinstance(value, dict):
        found = {value["actor"]} if isinstance(value.get("actor"), str) and not attributions else set()
        for key, v in value.items():
            if key == "attribution" and isinstance(v, dict):
                found |= {v["actor"]} if attributions else set()
            else:
                found |= _actors(v, attributions=attributions)
        return found
    if isinstance(value, list):
        return set().union(*(_actors(v, attributions=attributions) for v in value))
    return set()


def test_stamps_name_the_configured_actor_and_attributions_the_agent() -> None:
    settings = DatahubSettings(actor="urn:li:corpuser:svc-pareis", agent_urn="urn:li:aiAgent:pareis-staging")
    for intent in INTENTS.values():
        mcps = intent_mcps(intent, settings)
        aspects = [
            json.loads(m.aspect.value) if isinstance(m, MetadataChangeProposalClass) else m.aspect.to_obj()
            for m in mcps
            if m.aspect
        ]
        assert _actors(aspects) == {"urn:li:corpuser:svc-pareis"}, intent.kind
        assert _actors(aspects, attributions=True) == {"urn:li:aiAgent:pareis-staging"}, intent.kind
    assert _actors([m.aspect.to_obj() for m in definition_mcps(settings) if m.aspect]) == {"urn:li:corpuser:svc-pareis"}


def test_every_tag_and_property_write_is_attributed_to_the_agent_and_the_incident() -> None:
    for name, intent in INTENTS.items():
        for mcp in intent_mcps(intent, SETTINGS):
            if mcp.aspectName not in ("globalTags", "structuredProperties"):
                continue
            for op in patch_doc(mcp)["patch"]:
                if op["op"] != "add":
                    continue
                attribution = op["value"]["attribution"]
                assert attribution["actor"] == "urn:li:aiAgent:pareis", (name, mcp.entityUrn)
                incident = attribution.get("source") or attribution["sourceDetail"]["incident"]
                assert incident == intent.facts.urn, (name, mcp.entityUrn)


# --- what each intent writes ---------------------------------------------------------------------------------


def test_open_writes_an_active_custom_incident_from_the_failed_assertion() -> None:
    first = BATCHES["open"][0]
    info = aspect_of(first)
    assert isinstance(info, IncidentInfoClass) and first.entityUrn == STORY.open.facts.urn
    assert (info.type, info.customType) == ("CUSTOM", "ML_DATA_QUALITY")
    assert info.source is not None and (info.source.type, info.source.sourceUrn) == ("ASSERTION_FAILURE", NOT_NULL)
    assert info.priority == 1  # HIGH: the fraud model is reached at table precision
    assert info.entities == [DATASET], "the dataset only, unless the server accepts incidents on ML entities"
    assert info.status.state == "ACTIVE" and info.status.lastUpdated.time == STORY.open.at_ms
    assert (info.created.time, info.startedAt) == (T0, T0)
    assert info.title == STORY.open.title and info.description == STORY.open.description
    assert "Blind window" in (info.description or "") and "**ROLL BACK to** **churn_1**" in (info.description or "")
    assert (info.description or "").startswith("### Decision\n"), "decision first"


def test_where_ml_entities_take_incidents_the_models_carry_it_in_a_second_write() -> None:
    settings = SETTINGS.model_copy(update={"ml_incident_types": ["mlModel"]})
    first, second, *rest = intent_mcps(STORY.open, settings)
    assert aspect_of(first).entities == [DATASET], "the dataset's incident stands whatever the server does next"
    assert aspect_of(second).entities == [DATASET, *MODELS]
    assert first.entityUrn == second.entityUrn and "incidentInfo" not in [m.aspectName for m in rest]


def test_ml_incident_types_never_take_a_model_group() -> None:
    with pytest.raises(ValueError, match="mlModelGroup never takes incidents"):
        DatahubSettings(ml_incident_types=["mlModel", "mlModelGroup"])
    with pytest.raises(ValueError, match="unknown type"):
        DatahubSettings(ml_incident_types=["dashboard"])
    assert DatahubSettings(ml_incident_types=["mlModel", "mlModel"]).ml_incident_types == ["mlModel"]


def test_update_and_resolve_rewrite_the_same_incident_with_the_same_created_stamp() -> None:
    infos = [aspect_of(BATCHES[name][0]) for name in ("open", "update", "resolve")]
    assert {BATCHES[name][0].entityUrn for name in ("open", "update", "resolve")} == {STORY.open.facts.urn}
    assert {info.created.time for info in infos} == {T0}
    assert [info.status.state for info in infos] == ["ACTIVE", "ACTIVE", "RESOLVED"]
    assert infos[2].status.stage == "FIXED" and infos[2].status.lastUpdated.time == STORY.resolve.at_ms


def test_open_tags_every_affected_model_and_feature_and_resolve_removes_every_tag() -> None:
    tagged = [m.entityUrn for m in of(BATCHES["open"], "globalTags")]
    assert tagged == sorted([AMOUNT, AVG_AMOUNT, *MODELS])
    for mcp in of(BATCHES["open"], "globalTags"):
        (op,) = patch_doc(mcp)["patch"]
        assert op["op"] == "add" and op["value"]["tag"] == TAG_AT_RISK
        assert op["value"]["attribution"]["source"] == STORY.open.facts.urn
    assert [m.entityUrn for m in of(BATCHES["update"], "globalTags")] == [DISCOUNT]
    removed = of(BATCHES["resolve"], "globalTags")
    assert [m.entityUrn for m in removed] == sorted([AMOUNT, AVG_AMOUNT, DISCOUNT, *MODELS])
    assert all(op["op"] == "remove" for m in removed for op in patch_doc(m)["patch"])


def test_tags_applied_in_sequence_leave_nothing_once_resolved() -> None:
    value: Any = None
    for name in ("open", "update", "resolve"):
        for mcp in of(BATCHES[name], "globalTags"):
            if mcp.entityUrn == CHURN_V2:
                value = apply_patch("globalTags", value, patch_doc(mcp))
        if name == "open":
            assert [t["tag"] for t in value["tags"]] == [TAG_AT_RISK]
    assert value == {"tags": []}


def test_a_model_two_incidents_tag_keeps_the_tag_until_both_resolve() -> None:
    other = intent_mcps(STORY.open, SETTINGS)  # the same model, tagged by a second incident below
    second_urn = "urn:li:incident:pareis-00000000000000000000000000000002"
    value: Any = None
    for mcp in of(other, "globalTags"):
        if mcp.entityUrn == CHURN_V2:
            value = apply_patch("globalTags", value, patch_doc(mcp))
            value = apply_patch(
                "globalTags", value, json.loads(json.dumps(patch_doc(mcp)).replace(STORY.open.facts.urn, second_urn))
            )
    for mcp in of(BATCHES["resolve"], "globalTags"):
        if mcp.entityUrn == CHURN_V2:
            value = apply_patch("globalTags", value, patch_doc(mcp))
    assert [(t["tag"], t["attribution"]["source"]) for t in value["tags"]] == [(TAG_AT_RISK, second_urn)]


def test_notes_link_the_incident_on_the_dataset_and_models_and_resolve_replaces_them() -> None:
    opened = of(BATCHES["open"], "institutionalMemory")
    assert [m.entityUrn for m in opened] == sorted([DATASET, *MODELS])
    (op,) = patch_doc(opened[0])["patch"]
    assert op["value"]["url"] == STORY.open.facts.urn and "opened" in op["value"]["description"]
    assert op["value"]["createStamp"] == {"time": T0, "actor": "urn:li:corpuser:pareis"}
    assert of(BATCHES["update"], "institutionalMemory") == []  # no model joined the blast radius
    resolved = of(BATCHES["resolve"], "institutionalMemory")
    (op2,) = patch_doc(resolved[0])["patch"]
    assert op2["path"] == op["path"]  # same key: the Resolve note replaces the Open one
    assert document_urn(STORY.open.facts.urn) in op2["value"]["description"]


def test_the_note_links_the_web_app_when_one_is_configured() -> None:
    settings = DatahubSettings(ui_url="https://datahub.example.com/")
    link = incident_link(STORY.open.facts, settings)
    assert link.startswith("https://datahub.example.com/dataset/urn%3Ali%3Adataset%3A%28")
    assert link.endswith("/Incidents?incident=urn%3Ali%3Aincident%3A" + STORY.open.facts.urn.split(":")[-1])


def test_with_the_web_app_configured_the_description_and_postmortem_link_short_names_to_datahub_pages() -> None:
    settings = DatahubSettings(ui_url="https://datahub.example.com/")
    (info_mcp,) = of(intent_mcps(STORY.open, settings), "incidentInfo")
    text = info_mcp.aspect.description  # type: ignore[union-attr]
    page = "https://datahub.example.com/mlModelGroup/urn%3Ali%3AmlModelGroup%3A%28"
    assert text.startswith(f"### Decision\n\n- **[churn]({page}")
    assert "](https://datahub.example.com/mlModels/urn%3Ali%3AmlModel%3A%28" in text
    # The same text as the intent's but for the links (the intent's is rendered without the web app's URL).
    assert re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", text) == STORY.open.description
    (document,) = of(intent_mcps(STORY.resolve, settings), "documentInfo")
    postmortem = document.aspect.contents.text  # type: ignore[union-attr]
    assert postmortem.split("\n")[:3] == STORY.resolve.postmortem.text.split("\n")[:3]
    assert f"]({page}" in postmortem and f"]({page}" not in STORY.resolve.postmortem.text


def _properties(batch: list[Mcp]) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for mcp in of(batch, "structuredProperties"):
        for op in patch_doc(mcp)["patch"]:
            value = op["value"]
            found.setdefault(str(mcp.entityUrn), {})[value["propertyUrn"]] = value["values"][0]["string"]
    return found


def test_open_blocks_every_evaluated_version_and_records_its_verdict() -> None:
    assert _properties(BATCHES["open"]) == {
        CHURN_V1: {RETRAIN_STATUS_URN: "BLOCKED", CONTAMINATION_URN: "CLEAN"},
        CHURN_V2: {RETRAIN_STATUS_URN: "BLOCKED", CONTAMINATION_URN: "CONTAMINATED"},
        CHURN_V3: {RETRAIN_STATUS_URN: "BLOCKED", CONTAMINATION_URN: "CONTAMINATED"},
        FRAUD: {RETRAIN_STATUS_URN: "BLOCKED", CONTAMINATION_URN: "UNKNOWN"},
    }


def test_update_writes_no_property_that_did_not_change() -> None:
    assert "contamination" not in STORY.update.changed and STORY.update.retrain == ()
    assert _properties(BATCHES["update"]) == {}


def test_resolve_releases_all_but_the_contaminated_version_and_writes_final_verdicts() -> None:
    assert _properties(BATCHES["resolve"]) == {
        CHURN_V1: {RETRAIN_STATUS_URN: "OK", CONTAMINATION_URN: "CLEAN"},
        CHURN_V2: {CONTAMINATION_URN: "CONTAMINATED"},  # stays BLOCKED: nothing to change
        CHURN_V3: {RETRAIN_STATUS_URN: "OK", CONTAMINATION_URN: "CLEAN"},  # trained after the heal
        FRAUD: {RETRAIN_STATUS_URN: "OK", CONTAMINATION_URN: "UNKNOWN"},
    }


def test_resolve_publishes_the_postmortem_document_last() -> None:
    last = BATCHES["resolve"][-1]
    doc = aspect_of(last)
    assert isinstance(doc, DocumentInfoClass)
    assert (
        last.entityUrn
        == document_urn(STORY.resolve.facts.urn)
        == STORY.resolve.facts.urn.replace("urn:li:incident:", "urn:li:document:") + "-postmortem"
    )
    assert doc.status.state == "PUBLISHED"
    assert doc.title == f"Postmortem: {STORY.resolve.title}"
    assert doc.contents.text == STORY.resolve.postmortem.text
    for fact in (
        "Time to detect",
        "Time to heal",
        "Contaminated versions",
        "Safe rollback",
        "Class of failure",
        "Timeline",
    ):
        assert fact in doc.contents.text
    assert [a.asset for a in doc.relatedAssets or []] == sorted([DATASET, *MODELS])
    assert doc.customProperties["pareisIncident"] == STORY.resolve.facts.urn
    assert doc.customProperties["timeToDetectMs"] == "86400000"
    assert [m.aspectName for m in BATCHES["open"] + BATCHES["update"]].count("documentInfo") == 0


# --- start-up definitions ------------------------------------------------------------------------------------


def test_definitions_define_both_properties_the_tag_and_the_agent() -> None:
    by_urn = {m.entityUrn: aspect_of(m) for m in BATCHES["definitions"]}
    assert list(by_urn) == [
        RETRAIN_STATUS_URN,
        CONTAMINATION_URN,
        RELIABILITY_SCORE_URN,
        TAG_AT_RISK,
        "urn:li:aiAgent:pareis",
    ]
    retrain, contamination = by_urn[RETRAIN_STATUS_URN], by_urn[CONTAMINATION_URN]
    for definition in (retrain, contamination):
        assert isinstance(definition, StructuredPropertyDefinitionClass)
        assert definition.valueType == "urn:li:dataType:datahub.string"
        assert definition.cardinality == "SINGLE"
        assert "urn:li:entityType:datahub.mlModel" in definition.entityTypes
    assert retrain.qualifiedName == "io.pareis.retrain_status"
    assert [v.value for v in retrain.allowedValues or []] == ["BLOCKED", "OK"]
    assert contamination.qualifiedName == "io.pareis.contamination"
    assert [v.value for v in contamination.allowedValues or []] == ["CONTAMINATED", "CLEAN", "UNKNOWN"]
    tag = by_urn[TAG_AT_RISK]
    assert isinstance(tag, TagPropertiesClass) and tag.name == "pareis-at-risk"
    agent = by_urn["urn:li:aiAgent:pareis"]
    assert isinstance(agent, AIAgentInfoClass) and agent.name == "Pareis"
    assert agent.source is not None and agent.source.type == "EXTERNAL"
    score = by_urn[RELIABILITY_SCORE_URN]
    assert isinstance(score, StructuredPropertyDefinitionClass)
    assert score.qualifiedName == "io.pareis.reliability_score"
    assert score.valueType == "urn:li:dataType:datahub.number" and not score.allowedValues
    assert score.entityTypes == ["urn:li:entityType:datahub.dataset", "urn:li:entityType:datahub.mlModel"]


def test_definitions_are_byte_identical_on_every_start_and_follow_the_agent_setting() -> None:
    first = [m.to_obj() for m in definition_mcps(SETTINGS)]
    assert first == [m.to_obj() for m in definition_mcps(SETTINGS)]
    moved = definition_mcps(DatahubSettings(agent_urn="urn:li:aiAgent:pareis-staging"))
    assert moved[-1].entityUrn == "urn:li:aiAgent:pareis-staging"
