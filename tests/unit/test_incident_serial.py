"""The incidents role's proposals built in serial form (:mod:`pareis.datahub.writes.incident_serial`) are, record for
record
and byte for byte, the ones acryl-datahub's classes give (:func:`pareis.datahub.writes.incident_writes.intent_mcps`), on
every kind of intent and every setting that changes what is written."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pareis.config import DatahubSettings
from pareis.core.intents import Intent, Update
from pareis.core.owners import IncidentOwners, Owner
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.incident_serial import intent_serial
from pareis.datahub.writes.incident_writes import description, intent_mcps
from pareis.datahub.writes.writer import KafkaWriter, SerialMcp
from tests.support.writer_scenario import SETTINGS, story

STORY = story()
WRITER = KafkaWriter.from_source(VendoredSchemaSource(), "MetadataChangeProposal_v1")
S3 = "urn:li:dataset:(urn:li:dataPlatform:s3,lake/raw~2/orders,PROD)"


def variants() -> dict[str, Intent]:
    """The story's intents, and the same with what could trip a serialiser: non-ASCII and JSON-pointer characters
    in the text and URNs, owners to assign, empty text."""
    out: dict[str, Intent] = {}
    for name in ("open", "update", "resolve"):
        intent: Intent = getattr(STORY, name)
        out[name] = intent
        facts = replace(
            intent.facts,
            dataset=S3,
            owners=IncidentOwners(
                dataset=(Owner("urn:li:corpuser:ana", "ana@example.com"), Owner("urn:li:corpGroup:d"))
            ),
        )
        out[f"{name}-odd"] = replace(intent, facts=facts, title='Café ✓ ~/a"b\\', description="ünïcode\n\t\u241f")
        out[f"{name}-untitled"] = replace(intent, title="", description="")
    out["update-quiet"] = replace(STORY.update, changed=("failed_rows",))
    return out


VARIANTS = variants()
SETTINGS_CASES = {
    "plain": SETTINGS,
    "defaults": DatahubSettings(),
    "ml-entities-and-ui": SETTINGS.model_copy(
        update={"ml_incident_types": ["mlModel", "mlFeature"], "ui_url": "https://datahub.example/x~/"}
    ),
}


@pytest.mark.parametrize("settings", list(SETTINGS_CASES.values()), ids=list(SETTINGS_CASES))
@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("keeps_edits", [False, True])
def test_serial_proposals_encode_to_the_bytes_of_acryls(
    name: str, settings: DatahubSettings, keeps_edits: bool
) -> None:
    intent = VARIANTS[name]
    reference = WRITER.write(intent_mcps(intent, settings, keeps_edits=keeps_edits))
    serial = intent_serial(intent, settings, keeps_edits=keeps_edits)
    assert reference  # every intent writes something
    assert WRITER.write_serial(serial) == reference


def test_only_the_postmortem_is_left_to_acryl() -> None:
    kinds = {type(m) is SerialMcp for m in intent_serial(STORY.resolve, SETTINGS)}
    assert kinds == {True, False}
    assert all(type(m) is SerialMcp for m in intent_serial(STORY.open, SETTINGS))


def test_a_quiet_update_writes_no_incident_info_on_the_kafka_path() -> None:
    quiet = VARIANTS["update-quiet"]
    assert isinstance(quiet, Update)
    assert "incidentInfo" not in [m.aspectName for m in intent_serial(quiet, SETTINGS, keeps_edits=False)]


def test_serial_records_are_written_by_the_plain_writer_with_fastavros_bytes() -> None:
    """The serial records take :func:`pareis.datahub.wire.plain_mcp.plain_mcp` (not fastavro's fallback), and its bytes
    are fastavro's; a record it does not know (acryl's, unions tagged as tuples) is left to fastavro."""
    import io

    from fastavro import schemaless_writer

    from pareis.datahub.wire import schemas
    from pareis.datahub.wire.plain_mcp import plain_mcp

    parsed = schemas.current(schemas.MCP).parsed
    records = [
        m.record for intent in VARIANTS.values() for m in intent_serial(intent, SETTINGS) if isinstance(m, SerialMcp)
    ]
    assert records
    for record in records:
        reference = io.BytesIO()
        schemaless_writer(reference, parsed, record)
        assert plain_mcp(record) == reference.getvalue()
    acryl = intent_mcps(STORY.open, SETTINGS)[0].to_obj(tuples=True)
    assert plain_mcp(acryl) is None


@pytest.mark.parametrize("name", ["open", "update", "resolve"])
def test_the_linked_description_comes_from_the_intents_brief_as_from_its_facts(name: str) -> None:
    intent: Intent = getattr(STORY, name)
    settings = SETTINGS_CASES["ml-entities-and-ui"]
    assert intent.brief is not None
    kept = description(intent, settings)
    assert kept == description(replace(intent, brief=None), settings) and "](https://datahub.example/x~/" in kept
