"""The DataHub output ports: the records that carry the incidents role's writes (an intent's, out of its Kafka
transaction) and the scores role's (the reliability scores') (DESIGN §1, §3).

The composition root hands each role its port (:func:`pareis.compose.datahub.incidents_output`,
:func:`~pareis.compose.datahub.scores_output`: one choice, made where ``datahub.write_path`` is read); the incidents
role asks it for the records of each intent and appends the intent's ticket effect, the scores role for the records
of a batch's score writes. The proposals are the same on every path
(:func:`~pareis.datahub.writes.incident_writes.intent_mcps`, and :mod:`pareis.datahub.writes.incident_serial` gives
their bytes without acryl's classes):

* :class:`McpTopic` — ``kafka``: ``MetadataChangeProposal_v1`` records, built in serial form (in the incidents
  role's transaction, committed exactly once with the step that caused them; the scores role's delivered before its
  offsets are committed);
* :class:`RestEffects` — ``rest``: one ``datahub.write`` effect per proposal on ``pareis.effects.v1``, delivered by
  the effects role, which reads ``incidentInfo`` back and keeps what people edited;
* :class:`Written` — a writer that takes the proposals itself (the in-memory writer of the demo and tests): no
  records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pareis.config import DatahubSettings
from pareis.contracts.records import OutRecord
from pareis.core.intents import Intent, Resolve, Update
from pareis.datahub.writes.incident_serial import intent_serial
from pareis.datahub.writes.incident_writes import intent_mcps
from pareis.datahub.writes.writer import DatahubWriter, Mcp, SerialWriter
from pareis.roles.messages import DatahubWrite, effect_record
from pareis.roles.scores import ScoreWrite, score_mcps, score_serial


class DatahubOutput(Protocol):
    """Where the incidents role's DataHub writes go. It returns the records the role produces in its transaction, in
    write order (none when the writes were handed over); errors are the writer's
    (:class:`~pareis.datahub.writes.writer.DatahubWriter`)."""

    def intent(self, intent: Intent) -> list[OutRecord]:
        """The records of ``intent``'s proposals."""
        ...


class ScoreOutput(Protocol):
    """Where the scores role's DataHub writes go: the records the role produces, in write order (none when the
    writes were handed over); errors are the writer's."""

    def scores(self, writes: Sequence[ScoreWrite]) -> list[OutRecord]:
        """The records of the reliability-score patches ``writes`` (:mod:`pareis.roles.scores`)."""
        ...


@dataclass(frozen=True)
class McpTopic:
    """The proposals as records of the MCP topic, in serial form. A proposal replaces the aspect unread, so an
    Update keeps people's edits of ``incidentInfo`` only by not writing it (``keeps_edits=False``)."""

    writer: SerialWriter
    datahub: DatahubSettings

    def intent(self, intent: Intent) -> list[OutRecord]:
        return list(self.writer.write_serial(intent_serial(intent, self.datahub, keeps_edits=False)))

    def scores(self, writes: Sequence[ScoreWrite]) -> list[OutRecord]:
        return list(self.writer.write_serial(score_serial(writes, self.datahub)))


@dataclass(frozen=True)
class RestEffects:
    """The proposals as ``datahub.write`` effects on ``topic`` (the effects role's input), keyed by the incident
    (a score's by the class whose run caused it)."""

    topic: str
    datahub: DatahubSettings

    def intent(self, intent: Intent) -> list[OutRecord]:
        # Only the REST path reads incidentInfo back before writing it, and so keeps what people edited.
        mcps = intent_mcps(intent, self.datahub, keeps_edits=True)
        return [effect_record(self.topic, write) for write in rest_effects(intent, mcps)]

    def scores(self, writes: Sequence[ScoreWrite]) -> list[OutRecord]:
        mcps = score_mcps(writes, self.datahub)
        return [
            effect_record(self.topic, DatahubWrite(w.effect_id, w.cause, mcp.to_obj()))
            for w, mcp in zip(writes, mcps, strict=True)
        ]


@dataclass(frozen=True)
class Written:
    """The proposals handed to ``writer``, which takes them itself (an in-memory writer keeps them); its records,
    if any, are produced. A proposal replaces the aspect unread, as on the MCP topic."""

    writer: DatahubWriter
    datahub: DatahubSettings

    def intent(self, intent: Intent) -> list[OutRecord]:
        return list(self.writer.write(intent_mcps(intent, self.datahub, keeps_edits=False)))

    def scores(self, writes: Sequence[ScoreWrite]) -> list[OutRecord]:
        return list(self.writer.write(score_mcps(writes, self.datahub)))


def rest_effects(intent: Intent, mcps: Sequence[Mcp]) -> list[DatahubWrite]:
    """One ``datahub.write`` effect per proposal, in write order; ids ``<intent effect id>/datahub/<index>``.

    The ``incidentInfo`` of an Update or Resolve carries the intent's :class:`~pareis.core.intents.PriorFields`
    (``keep``), so the effects role keeps what people edited since (:mod:`pareis.datahub.writes.incident_merge`)."""
    prior = intent.prior if isinstance(intent, Update | Resolve) else None
    return [
        DatahubWrite(
            f"{intent.effect_id}/datahub/{i}",
            intent.facts.urn,
            mcp.to_obj(),
            prior if mcp.aspectName == "incidentInfo" else None,
        )
        for i, mcp in enumerate(mcps)
    ]
