"""Pareis's DataHub writes: the writer, chosen once from ``datahub.write_path``, and which role uses it.

* ``kafka`` — a :class:`~pareis.datahub.writes.writer.KafkaWriter` behind the incidents and scores roles' output
  ports: the proposals are records of the role's own output (the incidents role's committed exactly once, in its
  Kafka transaction, with the step that caused them);
* ``rest`` — a :class:`~pareis.datahub.writes.rest.RestWriter` in the effects role: the output ports emit
  ``datahub.write`` effects instead, and the effects role delivers them (at-least-once, idempotent writes).

This module is the only reader of ``write_path``: the incidents and scores roles are given their output ports
(:func:`incidents_output`, :func:`scores_output`: one choice), the effects role a writer or None
(:func:`effects_writer`). On either path the effects role copies the tickets it delivers into DataHub through the
path's writer (the links and notes only it can know: :class:`~pareis.roles.effects.TicketMirror`), so on ``kafka`` it
produces to the MCP topic too.
"""

from __future__ import annotations

import structlog
from datahub.emitter.mcp import MetadataChangeProposalWrapper

from pareis.compose.decoding import schema_source
from pareis.compose.replay import kafka_sink
from pareis.config import DatahubSettings, Settings
from pareis.contracts.agent import SKILL_PATH, TOOLS, skill_dir
from pareis.datahub.writes.agent_registry import Skill, registry_mcps
from pareis.datahub.writes.capabilities import probe_ml_incident_types
from pareis.datahub.writes.definitions import definition_mcps
from pareis.datahub.writes.rest import RestWriter
from pareis.datahub.writes.writer import DatahubWriter, KafkaWriter, SerialWriter
from pareis.roles.output import DatahubOutput, McpTopic, RestEffects, ScoreOutput, Written

log = structlog.get_logger(__name__)


def datahub_writer(settings: Settings) -> DatahubWriter:
    """The writer of ``settings.datahub.write_path``; Fatal for ``rest`` with no GMS URL. Connects on first write."""
    if settings.datahub.write_path == "rest":
        return RestWriter.from_settings(settings.datahub)
    return KafkaWriter.from_source(schema_source(settings), settings.kafka.topics.mcp)


def incidents_output(settings: Settings, writer: DatahubWriter, datahub: DatahubSettings) -> DatahubOutput:
    """The incidents role's output port (:mod:`pareis.roles.output`), writing with ``datahub`` (the settings with
    capabilities decided): :func:`_output`."""
    return _output(settings, writer, datahub)


def scores_output(settings: Settings, writer: DatahubWriter) -> ScoreOutput:
    """The scores role's output port (:mod:`pareis.roles.output`), writing with ``settings.datahub``:
    :func:`_output`."""
    return _output(settings, writer, settings.datahub)


def _output(settings: Settings, writer: DatahubWriter, datahub: DatahubSettings) -> McpTopic | RestEffects | Written:
    """On ``rest``, ``datahub.write`` effects for the effects role; on ``kafka``, the MCP topic in serial form when
    ``writer`` takes that (the Kafka writer), else ``writer`` itself (the in-memory one)."""
    if settings.datahub.write_path == "rest":
        return RestEffects(settings.kafka.topics.effects, datahub)
    if isinstance(writer, SerialWriter):
        return McpTopic(writer, datahub)
    return Written(writer, datahub)


def effects_writer(settings: Settings, writer: DatahubWriter) -> DatahubWriter | None:
    """The effects role's writer for ``datahub.write`` effects: ``writer`` on ``rest``; None on ``kafka`` (the
    incidents role's transaction carries the proposals, the effects role has none to deliver)."""
    return writer if settings.datahub.write_path == "rest" else None


def start_up_mcps(settings: Settings) -> list[MetadataChangeProposalWrapper]:
    """The start-up definitions (:func:`~pareis.datahub.writes.definitions.definition_mcps`) then Pareis's entry in
    DataHub's agent registry (:func:`~pareis.datahub.writes.agent_registry.registry_mcps`: its Agent Skill, the MCP
    server's tools, and the server itself when ``datahub.mcp_url`` is set)."""
    skill = Skill.read(skill_dir() / "SKILL.md", path=SKILL_PATH)
    return [*definition_mcps(settings.datahub), *registry_mcps(settings.datahub, tools=TOOLS, skill=skill)]


def write_definitions(settings: Settings, writer: DatahubWriter) -> None:
    """Write the start-up proposals (:func:`start_up_mcps`) once, outside any transaction, through ``writer``;
    the records a Kafka writer returns are published to the MCP topic at once. Idempotent."""
    records = writer.write(start_up_mcps(settings))
    if not records:
        return
    sink = kafka_sink(settings)
    for record in records:
        assert record.value is not None
        sink.publish(record.topic, record.key, record.value)
    sink.flush()


def with_capabilities(settings: Settings, writer: DatahubWriter) -> DatahubSettings:
    """``settings.datahub`` with ``ml_incident_types`` decided: as set; else, on the ``rest`` path, what GMS
    accepts (:func:`~pareis.datahub.writes.capabilities.probe_ml_incident_types`, logged); else none."""
    datahub = settings.datahub
    if datahub.ml_incident_types is not None:
        return datahub
    types: list[str] = []
    if datahub.write_path == "rest":
        types = probe_ml_incident_types(writer, datahub)
        log.info("GMS accepts incidents on", ml_entity_types=types or "no ML entity")
    return datahub.model_copy(update={"ml_incident_types": types})
