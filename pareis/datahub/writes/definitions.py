"""What Pareis defines in DataHub once, at start-up (DESIGN §3, §2.5): three structured properties, a tag, the agent.

:func:`definition_mcps` is idempotent by construction: the aspects are full UPSERTs of constant values with
constant stamps, so writing them again on every start-up leaves DataHub unchanged (GMS logs nothing for a
write equal to the current value).
"""

from __future__ import annotations

from collections.abc import Sequence

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    AIAgentInfoClass,
    AIAgentSourceClass,
    AIAgentSourceTypeClass,
    PropertyCardinalityClass,
    PropertyValueClass,
    StructuredPropertyDefinitionClass,
    TagPropertiesClass,
    _Aspect,
)

from pareis.config import DatahubSettings
from pareis.core.intents import TAG_AT_RISK, RetrainStatus
from pareis.datahub.writes.marks import stamp, system_metadata

RETRAIN_STATUS = "io.pareis.retrain_status"
CONTAMINATION = "io.pareis.contamination"
RETRAIN_STATUS_URN = f"urn:li:structuredProperty:{RETRAIN_STATUS}"
CONTAMINATION_URN = f"urn:li:structuredProperty:{CONTAMINATION}"
RELIABILITY_SCORE = "io.pareis.reliability_score"
RELIABILITY_SCORE_URN = f"urn:li:structuredProperty:{RELIABILITY_SCORE}"
STRING_TYPE = "urn:li:dataType:datahub.string"
NUMBER_TYPE = "urn:li:dataType:datahub.number"
TAG_NAME = TAG_AT_RISK.removeprefix("urn:li:tag:")

DEFINITIONS_VERSION = "1"
"""Bump when a definition below changes, so the new values carry a new run id."""
DEFINITIONS_AT_MS = 1_735_689_600_000
"""2025-01-01T00:00:00Z, the date of definitions version 1: every definition stamp carries this constant time,
because a restart must write byte-identical aspects (and 0 would make acryl's REST emitter fill in the clock)."""
DEFINITIONS_EFFECT = f"definitions-v{DEFINITIONS_VERSION}"

_RETRAIN_VALUES = (
    (RetrainStatus.BLOCKED.value, "An active or unhealed incident poisons this model's inputs: do not retrain."),
    (RetrainStatus.OK.value, "No Pareis incident blocks retraining this model."),
)
_CONTAMINATION_VALUES = (
    ("CONTAMINATED", "Trained inside an incident's blind window on poisoned inputs."),
    ("CLEAN", "Not trained on the poisoned data of any incident Pareis evaluated it for."),
    ("UNKNOWN", "In an incident's blast radius, but its training time is unknown."),
)


def _entity_type(name: str) -> str:
    return f"urn:li:entityType:datahub.{name}"


def _property(
    qualified_name: str,
    display_name: str,
    description: str,
    values: tuple[tuple[str, str], ...],
    entities: list[str],
    value_type: str = STRING_TYPE,
) -> StructuredPropertyDefinitionClass:
    return StructuredPropertyDefinitionClass(
        qualifiedName=qualified_name,
        displayName=display_name,
        description=description,
        valueType=value_type,
        allowedValues=[PropertyValueClass(value=value, description=text) for value, text in values] or None,
        cardinality=PropertyCardinalityClass.SINGLE,
        entityTypes=[_entity_type(entity) for entity in entities],
    )


def definition_mcps(settings: DatahubSettings) -> list[MetadataChangeProposalWrapper]:
    """The start-up definitions, in the order they must be written (properties before anything uses them).

    The agent URN comes from ``settings.agent_urn``; every proposal carries Pareis's marks.
    """
    at = stamp(settings, DEFINITIONS_AT_MS)
    aspects = [
        (
            RETRAIN_STATUS_URN,
            _property(
                RETRAIN_STATUS,
                "Retrain status (Pareis)",
                "Whether Pareis allows retraining this model: BLOCKED while its training data is poisoned.",
                _RETRAIN_VALUES,
                ["mlModel", "mlModelGroup"],
            ),
        ),
        (
            CONTAMINATION_URN,
            _property(
                CONTAMINATION,
                "Contamination (Pareis)",
                "Whether this model version was trained on data poisoned by a Pareis incident.",
                _CONTAMINATION_VALUES,
                ["mlModel"],
            ),
        ),
        (
            RELIABILITY_SCORE_URN,
            _property(
                RELIABILITY_SCORE,
                "Reliability score (Pareis)",
                "0–100 from published components (assertion coverage of the columns feeding models, 7-day pass "
                "rate, 30-day incident history, freshness of runs); for a model, from its upstream datasets' scores. "
                "See `pareis protect` for the components.",
                (),
                ["dataset", "mlModel"],
                NUMBER_TYPE,
            ),
        ),
        (
            TAG_AT_RISK,
            TagPropertiesClass(
                name=TAG_NAME,
                description="Pareis: this asset consumes data poisoned by an active ML data incident.",
                colorHex="#d9480f",
            ),
        ),
        (
            settings.agent_urn,
            AIAgentInfoClass(
                name="Pareis",
                tagline="Turns failing data-quality assertions into ML incidents.",
                description=(
                    "Pareis reads DataHub's change log, computes the blast radius of failing assertions through "
                    "column-level lineage to ML features and models, raises incidents, blocks retrains of "
                    "poisoned models and publishes postmortems."
                ),
                source=AIAgentSourceClass(type=AIAgentSourceTypeClass.EXTERNAL),
                created=at,
                lastModified=at,
            ),
        ),
    ]
    return definition_proposals(settings, aspects)


def definition_proposals(
    settings: DatahubSettings, aspects: Sequence[tuple[str, _Aspect]]
) -> list[MetadataChangeProposalWrapper]:
    """One proposal per (entity URN, aspect), each marked as Pareis's start-up definitions write (a fixed effect
    id and time, so re-running the start-up rewrites the same bytes and is recognised as our own write)."""
    return [
        MetadataChangeProposalWrapper(
            entityUrn=urn,
            aspect=aspect,
            systemMetadata=system_metadata(settings, DEFINITIONS_EFFECT, DEFINITIONS_AT_MS),
        )
        for urn, aspect in aspects
    ]
