"""The one incident-analysis recipe and its two ends (issue 30): the read side's class timelines (one read of the run
history for every failing class, each key's runs as its own timeline gives them), the URN the recipe derives or
keeps, and the incidents role's output port as the composition root chooses it (the same proposals on every path).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from pareis.answers.sources import Sources
from pareis.answers.timelines import class_timeline, class_timelines, failing_timelines
from pareis.compose.datahub import effects_writer, incidents_output
from pareis.compose.sources import open_sources
from pareis.config import DatahubSettings, Settings
from pareis.core.analysis import analyse, analysis_inputs, incident_facts
from pareis.core.graph import Memo
from pareis.core.incident_urn import incident_urn
from pareis.core.window import incidents
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.writer import KafkaWriter, MemoryWriter
from pareis.roles.effects import proposal
from pareis.roles.messages import decode_effect
from pareis.roles.output import McpTopic, RestEffects, Written
from pareis.store.runs import RunHistory
from tests.support.mission import RECORDED
from tests.support.writer_scenario import SETTINGS, story

MCP = "MetadataChangeProposal_v1"


class CountingRuns:
    """A run history that counts the reads made of it."""

    def __init__(self, runs: RunHistory) -> None:
        self._runs = runs
        self.reads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.reads.append(name)
        return getattr(self._runs, name)


@pytest.fixture(scope="module")
def recording() -> Iterable[Sources]:
    with open_sources(metadata=RECORDED) as sources:
        yield sources


def test_every_failing_class_timeline_is_read_at_once_and_equals_its_own(recording: Sources) -> None:
    view = Memo(recording.lineage)
    counting = CountingRuns(recording.runs)
    timelines = failing_timelines(view, counting)  # type: ignore[arg-type]
    assert counting.reads == ["failed_datasets", "assertions_by_dataset", "timeline"]
    assert timelines, "the recording has failing classes"
    for key, timeline in timelines.items():
        assert class_timeline(view, recording.runs, key) == (key, timeline)
        assert list(timeline) == sorted(timeline, key=lambda r: (r.timestamp_ms, r.assertion))


def test_a_timeline_up_to_a_time_keeps_only_the_runs_until_then(recording: Sources) -> None:
    view = Memo(recording.lineage)
    (key, timeline), *_ = failing_timelines(view, recording.runs).items()
    cut = timeline[len(timeline) // 2].timestamp_ms
    names = {r.assertion for r in timeline}
    assert class_timelines(recording.runs, {key: names}, cut)[key] == tuple(
        r for r in timeline if r.timestamp_ms <= cut
    )
    assert class_timelines(recording.runs, {key: set()}) == {key: ()}


def test_the_recipe_names_an_incident_by_its_key_and_first_failure_unless_it_was_opened_earlier(
    recording: Sources,
) -> None:
    view = Memo(recording.lineage)
    key, timeline = next(iter(failing_timelines(view, recording.runs).items()))
    window = incidents(timeline)[-1]
    facts = incident_facts(view, key, timeline, window)
    assert (facts.urn, facts.dataset, facts.window) == (incident_urn(key, window.first_failure_ms), key, window)
    assert facts.blast.models, "the recording's incident reaches models"
    opened = incident_urn(key, window.first_failure_ms + 1)
    kept = analyse(key, window, analysis_inputs(view, timeline, window.runs), urn=opened)
    assert kept.urn == opened
    assert kept.to_json() | {"incident": facts.urn, "decisions": None} == facts.to_json() | {"decisions": None}
    assert {tuple(d.incidents) for d in kept.decisions} == {(opened,)}, "the decision names the incident by its URN"


def test_the_composition_root_hands_the_incidents_role_one_output_per_write_path() -> None:
    kafka, memory = KafkaWriter.from_source(VendoredSchemaSource(), MCP), MemoryWriter()
    on_kafka = Settings(datahub=DatahubSettings(write_path="kafka"))
    on_rest = Settings(datahub=DatahubSettings(write_path="rest", gms_url="http://gms:8080"))
    assert incidents_output(on_kafka, kafka, SETTINGS) == McpTopic(kafka, SETTINGS)
    assert incidents_output(on_kafka, memory, SETTINGS) == Written(memory, SETTINGS)
    assert incidents_output(on_rest, kafka, SETTINGS) == RestEffects(on_rest.kafka.topics.effects, SETTINGS)
    assert (effects_writer(on_kafka, memory), effects_writer(on_rest, memory)) == (None, memory)


def test_every_output_carries_the_same_proposals() -> None:
    """The MCP topic's records, the writer's proposals and the REST effects' proposals are the same, intent for
    intent (the REST path alone keeps people's edits of incidentInfo, so an Update may write it there)."""
    kafka, memory = KafkaWriter.from_source(VendoredSchemaSource(), MCP), MemoryWriter()
    decoder = Decoder(VendoredSchemaSource())
    tale = story()
    for intent in (tale.open, tale.resolve):
        records = McpTopic(kafka, SETTINGS).intent(intent)
        assert Written(memory, SETTINGS).intent(intent) == []
        written, memory.proposals = memory.proposals, []
        assert [r.value for r in records] == [r.value for r in kafka.write(written)]
        effects = [decode_effect(r.value or b"") for r in RestEffects("fx", SETTINGS).intent(intent)]
        sent = [decoder.decode_mcp(r.value or b"") for r in records]
        assert [(p.entityUrn, p.aspectName) for p in map(proposal, effects)] == [
            (m.entity_urn, m.aspect_name) for m in sent
        ]
