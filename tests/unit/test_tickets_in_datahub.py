"""Tickets inside DataHub (DESIGN §3): the effects role writes each ticket's link to the incident's
``incidentExternalLinks`` and mirrors each comment it writes to ``incidentNotes``, idempotently by external id,
validated against acryl-datahub's classes, never clobbering a note a person wrote — through the REST writer to the
fake GMS (which refuses an invalid aspect, a PATCH's once applied), and as records of the MCP topic on the Kafka path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from datahub.metadata.schema_classes import IncidentExternalLinksClass, IncidentNotesClass

from pareis.config import DatahubSettings
from pareis.contracts.records import Message, OutRecord
from pareis.core.impact import Severity
from pareis.datahub.gms.patch import apply_patch
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.rest import GmsRejected, RestWriter
from pareis.datahub.writes.ticket_links import link_patch, note_patch
from pareis.datahub.writes.writer import KafkaWriter, MemoryWriter
from pareis.errors import Retriable
from pareis.roles.effects import EffectsHandler, TicketMirror
from pareis.roles.messages import Effect, TicketClose, TicketComment, TicketOpen
from pareis.store.ledger import MemoryLedger
from pareis.tickets.delivery import Posted, TicketDelivery
from pareis.tickets.memory import MemoryTicketer
from pareis.tickets.port import IncidentTicket, TicketRef
from pareis.tickets.retry import RetryPolicy
from tests.support.fake_gms import FakeGms

INCIDENT = "urn:li:incident:pareis-00000000000000000000000000000001"
SETTINGS = DatahubSettings()
T_OPEN, T_UPDATE, T_RESOLVE = 1_700_000_000_000, 1_700_000_100_000, 1_700_000_200_000
LIFE: list[Effect] = [
    TicketOpen("e0/ticket", IncidentTicket(INCIDENT, "Roll back churn to churn_2", "body", Severity.HIGH), T_OPEN),
    TicketComment("e1/ticket", INCIDENT, "- churn: now PROMOTE churn_4 (was ROLL BACK to churn_2)", T_UPDATE),
    TicketClose("e2/ticket", INCIDENT, "# Postmortem", T_RESOLVE),
]
PERSON = {"message": "I paused the churn retrain", "created": {"time": T_OPEN + 5, "actor": "urn:li:corpuser:oncall"}}
OTHER_PERSON = {"message": "Data team is on it", "created": {"time": T_OPEN + 9, "actor": "urn:li:corpuser:dana"}}


class Role:
    """The effects role over two in-memory tools (each ticket has a URL) and a writer, as compose wires it."""

    def __init__(self, writer: Any, ledger: MemoryLedger | None = None) -> None:
        self.tools = [MemoryTicketer("slack"), MemoryTicketer("jira")]
        self.ledger = ledger or MemoryLedger()
        self.writer = writer

    def deliver(self, values: Sequence[Effect], tools: Sequence[MemoryTicketer] | None = None) -> list[OutRecord]:
        mirror = TicketMirror(self.writer, SETTINGS)
        delivery = TicketDelivery(tools or self.tools, self.ledger, RetryPolicy(attempts=1), mirror=mirror)
        handler = EffectsHandler(delivery, self.ledger, None, mirror=mirror)
        return handler([Message("pareis.effects.v1", 0, i, INCIDENT.encode(), v) for i, v in enumerate(values)])


@pytest.fixture
def gms() -> Iterator[FakeGms]:
    with FakeGms() as server:
        yield server


def links_of(gms: FakeGms) -> list[tuple[str, str, str]]:
    value = gms.aspect(INCIDENT, "incidentExternalLinks")
    assert IncidentExternalLinksClass.from_obj(value).validate()
    return [(link["system"], link["externalId"], link["url"]) for link in value["links"]]


def notes_of(gms: FakeGms) -> list[dict[str, Any]]:
    value = gms.aspect(INCIDENT, "incidentNotes")
    assert IncidentNotesClass.from_obj(value).validate()
    return list(value["notes"])


def test_each_ticket_is_linked_and_each_comment_noted_on_the_incident(gms: FakeGms) -> None:
    role = Role(RestWriter(gms.url))
    assert role.deliver(LIFE) == [], "the REST writer delivers: no records"
    assert links_of(gms) == [("slack", "MEM-1", "memory://slack/MEM-1"), ("jira", "MEM-1", "memory://jira/MEM-1")]
    notes = notes_of(gms)
    assert [(n["source"]["externalId"], n["message"]) for n in notes] == [
        ("e1/ticket/slack", LIFE[1].text),  # type: ignore[union-attr]
        ("e1/ticket/jira", LIFE[1].text),  # type: ignore[union-attr]
        ("e2/ticket/slack/comment", "# Postmortem"),
        ("e2/ticket/jira/comment", "# Postmortem"),
    ]
    assert {n["source"]["sourceType"] for n in notes} == {"EXTERNAL"}
    assert [n["source"]["externalUrl"] for n in notes[:2]] == ["memory://slack/MEM-1", "memory://jira/MEM-1"]
    assert [n["created"] for n in notes[:2]] == [{"time": T_UPDATE, "actor": SETTINGS.actor}] * 2, "the intent's time"
    link = gms.aspect(INCIDENT, "incidentExternalLinks")["links"][0]
    assert link["connectionId"] == "pareis-slack" and link["created"]["time"] == T_OPEN and not link["syncEnabled"]


def test_notes_people_wrote_in_datahub_survive_and_a_redelivery_writes_the_same_entries(gms: FakeGms) -> None:
    role = Role(RestWriter(gms.url))
    role.deliver(LIFE[:1])
    gms.edit(INCIDENT, "incidentNotes", {"notes": [PERSON, OTHER_PERSON]})  # two notes with no source
    role.deliver(LIFE[1:])
    before = (links_of(gms), notes_of(gms))
    assert before[1][:2] == [PERSON, OTHER_PERSON] and len(before[1]) == 6
    writes = len(gms.received)
    role.deliver(LIFE)  # the runtime redelivers the whole life: the tickets are not touched again ...
    assert all(len(t.tickets) == 1 and len(t.tickets[0].comments) == 2 for t in role.tools)
    assert len(gms.received) > writes, "... and their copies are written again"
    assert (links_of(gms), notes_of(gms)) == before, "the same entries, by their keys"


def test_keyed_by_the_source_alone_peoples_notes_would_collapse_into_one() -> None:
    """Why the notes' key holds the author and time besides the source: a person's note has no source."""
    mcp = note_patch(SETTINGS, INCIDENT, message="m", external_id="e1/ticket/slack", url=None, at_ms=1, effect_id="x")
    patch = json.loads(mcp.aspect.value)  # type: ignore[union-attr]
    current = {"notes": [PERSON, OTHER_PERSON]}
    assert apply_patch("incidentNotes", current, patch)["notes"] == [PERSON, OTHER_PERSON, patch["patch"][0]["value"]]
    by_source = {**patch, "arrayPrimaryKeys": {"notes": ["source\u241fexternalId"]}}
    assert len(apply_patch("incidentNotes", current, by_source)["notes"]) == 2, "one person's note lost"


def test_the_patches_spell_their_keys_as_gms_reads_them() -> None:
    link = link_patch(
        SETTINGS, INCIDENT, system="jira", external_id="PAR-7", url="https://x/browse/PAR-7", at_ms=5, effect_id="e"
    )
    note = note_patch(SETTINGS, INCIDENT, message="m", external_id="e1/ticket/jira", url=None, at_ms=5, effect_id="e")
    link_doc, note_doc = (json.loads(m.aspect.value) for m in (link, note))  # type: ignore[union-attr]
    assert link.changeType == "PATCH" and link.aspectName == "incidentExternalLinks"
    assert link_doc["arrayPrimaryKeys"] == {"links": ["system", "externalId"]}
    assert link_doc["patch"][0]["path"] == "/links/jira/PAR-7"
    assert note_doc["arrayPrimaryKeys"] == {
        "notes": ["source\u241fexternalId", "created\u241factor", "created\u241ftime"]
    }
    assert note_doc["patch"][0]["path"] == f"/notes/e1~1ticket~1jira/{SETTINGS.actor}/5"
    assert link.systemMetadata is not None and link.systemMetadata.properties == {
        "writer": "pareis",
        "pareisEffectId": "e",
    }


def test_the_fake_gms_refuses_a_patch_that_yields_an_invalid_aspect(gms: FakeGms) -> None:
    mcp = link_patch(SETTINGS, INCIDENT, system="jira", external_id="PAR-7", url="https://x", at_ms=5, effect_id="e")
    doc = json.loads(mcp.aspect.value)  # type: ignore[union-attr]
    del doc["patch"][0]["value"]["url"]  # a link without its (required) URL
    mcp.aspect.value = json.dumps(doc).encode()  # type: ignore[union-attr]
    with pytest.raises(GmsRejected, match="IncidentExternalLinks"):
        RestWriter(gms.url).write([mcp])
    assert gms.aspect(INCIDENT, "incidentExternalLinks") is None


def test_on_the_kafka_path_the_copies_are_records_of_the_mcp_topic() -> None:
    writer = KafkaWriter.from_source(VendoredSchemaSource(), "MetadataChangeProposal_v1")
    records = Role(writer).deliver(LIFE)
    decoder = Decoder(VendoredSchemaSource())
    changes = [decoder.decode_mcp(r.value or b"") for r in records]
    assert {r.topic for r in records} == {"MetadataChangeProposal_v1"} and {r.key for r in records} == {
        INCIDENT.encode()
    }
    assert [(c.aspect_name, c.change_type) for c in changes] == [("incidentExternalLinks", "PATCH")] * 2 + [
        ("incidentNotes", "PATCH")
    ] * 4
    aspect: dict[str, Any] | None = None
    for change in changes[2:]:
        aspect = apply_patch("incidentNotes", aspect, change.aspect_json())
    assert aspect is not None and IncidentNotesClass.from_obj(aspect).validate() and len(aspect["notes"]) == 4


def test_a_crash_after_delivery_before_the_records_left_is_repaired_by_the_redelivery() -> None:
    """Kafka path: the records of a batch whose outputs never left are made again when the batch is redone."""
    writer = KafkaWriter.from_source(VendoredSchemaSource(), "MetadataChangeProposal_v1")
    role = Role(writer)
    first = role.deliver(LIFE)  # delivered; suppose the process died before producing these
    again = role.deliver(LIFE)
    assert [r.value for r in again] == [r.value for r in first]
    assert all(len(t.tickets) == 1 for t in role.tools)


def test_a_server_without_these_aspects_refuses_the_copy_and_the_ticket_stands(gms: FakeGms) -> None:
    role = Role(RestWriter(gms.url))
    gms.fail_next(422, times=2, after=1, message="Unknown aspect incidentExternalLinks for entity incident")
    role.deliver(LIFE[:1])  # not raised: the tickets are delivered and recorded
    assert all(len(t.tickets) == 1 for t in role.tools)
    assert role.ledger.seen("e0/ticket/slack") and role.ledger.seen("e0/ticket/jira")
    assert gms.aspect(INCIDENT, "incidentExternalLinks") is None


def test_gms_down_redelivers_and_the_link_is_written_then(gms: FakeGms) -> None:
    role = Role(RestWriter(gms.url))
    gms.fail_next(503, times=2, after=1)  # both tools' copies
    with pytest.raises(Retriable):
        role.deliver(LIFE[:1])
    assert not role.ledger.seen("e0/ticket/slack"), "the copy failed: the tool's delivery is not recorded"
    role.deliver(LIFE[:1])
    assert all(len(t.tickets) == 1 for t in role.tools), "no second ticket"
    assert links_of(gms) == [("slack", "MEM-1", "memory://slack/MEM-1"), ("jira", "MEM-1", "memory://jira/MEM-1")]


def test_a_ticket_without_a_url_is_delivered_without_a_link() -> None:
    writer = MemoryWriter()
    mirror = TicketMirror(writer, SETTINGS)
    mirror(Posted(INCIDENT, TicketRef("slack", "C1/1.0"), "e0/ticket/slack", None, T_OPEN))
    assert writer.proposals == []
    mirror(Posted(INCIDENT, TicketRef("slack", "C1/1.0"), "e1/ticket/slack", "text", T_UPDATE))
    (note,) = writer.proposals
    assert note.aspectName == "incidentNotes"
