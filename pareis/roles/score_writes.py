"""The scores role's DataHub writes: one value of ``io.pareis.reliability_score`` per entity
(:class:`ScoreWrite`), as proposals (:func:`score_mcps`, through acryl-datahub's patch builder) or in serial form
(:func:`score_serial`, the same bytes without acryl's classes). The role decides what to write
(:mod:`pareis.roles.scores`); its output port carries these (:mod:`pareis.roles.output`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pareis.config import DatahubSettings
from pareis.datahub.writes.definitions import RELIABILITY_SCORE
from pareis.datahub.writes.incident_writes import EntityPatch
from pareis.datahub.writes.marks import system_metadata
from pareis.datahub.writes.score_serial import score_patch
from pareis.datahub.writes.writer import Mcp, SerialMcp


@dataclass(frozen=True)
class ScoreWrite:
    """One value to write: the entity, the score, when, and the class whose run caused it (the record key)."""

    urn: str
    score: float
    at_ms: int
    cause: str

    @property
    def effect_id(self) -> str:
        """Deterministic, and distinct for distinct values (the effects role's ledger dedupes by it)."""
        return f"score/{self.urn}/{self.at_ms}/{self.score!r}"


def score_mcps(writes: Sequence[ScoreWrite], settings: DatahubSettings) -> list[Mcp]:
    """One ``structuredProperties`` PATCH per write, with Pareis's marks."""
    out: list[Mcp] = []
    for w in writes:
        patch = EntityPatch(w.urn, system_metadata=system_metadata(settings, w.effect_id, w.at_ms))
        patch.set_structured_property(RELIABILITY_SCORE, w.score)
        out += patch.build()
    return out


def score_serial(writes: Sequence[ScoreWrite], settings: DatahubSettings) -> list[SerialMcp]:
    """:func:`score_mcps` in serial form, for a writer that takes it (:mod:`pareis.datahub.writes.score_serial`: the
    same bytes)."""
    return [score_patch(w.urn, w.score, w.at_ms, w.effect_id, settings) for w in writes]
