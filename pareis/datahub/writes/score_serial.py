"""The reliability-score patch (``io.pareis.reliability_score``, DESIGN §2.5) built straight in its serial form
(:class:`~pareis.datahub.writes.writer.SerialMcp`), for the Kafka write path: the bytes of the acryl-datahub patch
:func:`pareis.roles.score_writes.score_mcps` builds (the reference: ``tests/unit/test_score_serial.py`` compares
them), as :mod:`pareis.datahub.writes.incident_serial` builds the incidents' proposals; acryl's patch builder and
``to_obj`` were most of their cost."""

from __future__ import annotations

import json

from pareis.config import DatahubSettings
from pareis.datahub.writes.definitions import RELIABILITY_SCORE
from pareis.datahub.writes.incident_serial import (
    JSON_PATCH,
    PROPERTIES_KEYS,
    pointer_component,
    proposal,
    system_metadata,
)
from pareis.datahub.writes.writer import SerialMcp

_PROPERTY = f"urn:li:structuredProperty:{RELIABILITY_SCORE}"
_PATH = f"/properties/{pointer_component(_PROPERTY)}/"


def score_patch(urn: str, score: float, at_ms: int, effect_id: str, settings: DatahubSettings) -> SerialMcp:
    """The ``structuredProperties`` PATCH setting ``urn``'s score to ``score``, with Pareis's marks for
    ``effect_id`` at ``at_ms``."""
    value = {"propertyUrn": _PROPERTY, "values": [{"double": score}]}
    doc = json.dumps({"arrayPrimaryKeys": PROPERTIES_KEYS, "patch": [{"op": "add", "path": _PATH, "value": value}]})
    return proposal(urn, "structuredProperties", "PATCH", doc, JSON_PATCH, system_metadata(settings, effect_id, at_ms))
