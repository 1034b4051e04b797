"""Pareis recognises its own writes when they come back on the change log, and only its own."""

from __future__ import annotations

from typing import Any

import pytest

from pareis.config import DatahubSettings
from pareis.datahub.files.metadata_file import JSON_CONTENT_TYPE, PATCH_CONTENT_TYPE, Proposal
from pareis.datahub.gms.emulator import ChangeLogEmulator
from pareis.datahub.wire.aspects import is_timeseries
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.incident_writes import intent_mcps
from pareis.datahub.writes.marks import is_own_write, run_id
from pareis.datahub.writes.writer import KafkaWriter
from tests.support.fake_gms import received_from
from tests.support.writer_scenario import SETTINGS, story

MCPS = intent_mcps(story().open, SETTINGS)
OTHER_RUN = {"lastObserved": 1, "runId": "dbt-2024-05-01", "pipelineName": "dbt-prod", "properties": {}}


@pytest.mark.parametrize(
    ("system_metadata", "created", "own"),
    [
        ({"pipelineName": "pareis"}, None, True),
        ({"properties": {"writer": "pareis"}}, None, True),
        (OTHER_RUN, {"time": 1, "actor": "urn:li:corpuser:pareis"}, True),
        (OTHER_RUN, {"time": 1, "actor": "urn:li:corpuser:datahub"}, False),
        (OTHER_RUN, None, False),
        (None, None, False),
        ({"pipelineName": None, "properties": None}, {}, False),
        ({"runId": "pareis-abc"}, None, False),  # a run id alone proves nothing: anyone may pick it
    ],
)
def test_own_writes_are_recognised_by_pipeline_writer_property_or_actor(
    system_metadata: dict[str, Any] | None, created: dict[str, Any] | None, own: bool
) -> None:
    assert is_own_write(system_metadata, created, SETTINGS) is own


def test_recognition_follows_the_configured_pipeline_and_actor() -> None:
    settings = DatahubSettings(pipeline_name="pareis-staging", actor="urn:li:corpuser:pareis-staging")
    assert is_own_write({"pipelineName": "pareis-staging"}, None, settings)
    assert not is_own_write({"pipelineName": "pareis"}, None, settings)
    assert is_own_write(None, {"actor": "urn:li:corpuser:pareis-staging"}, settings)
    assert not is_own_write(None, {"actor": "urn:li:corpuser:pareis"}, settings)


def test_run_ids_are_a_function_of_the_effect() -> None:
    assert run_id(SETTINGS, "e1") == run_id(SETTINGS, "e1") == "pareis-e1"
    assert run_id(SETTINGS, "e1") != run_id(SETTINGS, "e2")


def test_every_write_is_recognised_in_the_change_log_gms_makes_of_it() -> None:
    gms = ChangeLogEmulator(is_timeseries=is_timeseries, actor="urn:li:corpuser:__datahub_system")
    for mcp in MCPS:
        form = received_from(mcp)
        proposal = Proposal(
            entity_type=form.entity_type,
            entity_urn=form.entity_urn,
            change_type=form.change_type,
            aspect_name=form.aspect_name,
            aspect=form.aspect,
            content_type=PATCH_CONTENT_TYPE if form.change_type == "PATCH" else JSON_CONTENT_TYPE,
            system_metadata=form.system_metadata,
            source="test",
        )
        logged = gms.apply(proposal, now_ms=1_714_600_000_000)
        assert logged is not None
        assert is_own_write(logged.record["systemMetadata"], logged.record["created"], SETTINGS)
        marks = logged.record["systemMetadata"]
        assert (marks["pipelineName"], marks["properties"]["writer"]) == ("pareis", "pareis")


def test_every_write_sent_through_kafka_is_recognised_when_decoded() -> None:
    decoder = Decoder(VendoredSchemaSource())
    for record in KafkaWriter.from_source(VendoredSchemaSource()).write(MCPS):
        assert record.value is not None
        decoded = decoder.decode_mcp(record.value)
        assert is_own_write(decoded.system_metadata, decoded.created, SETTINGS)
