"""What GMS does with a proposal before it reaches the change log: apply, version, route, log.

:class:`ChangeLogEmulator` stands in for GMS where none runs (local stacks, backfills, tests, the demo) while the
metadata itself stays real. For each proposal it emits the MetadataChangeLog that GMS would emit:

* PATCH proposals are applied to the last value (GMS logs the merged aspect as UPSERT);
* a write equal to the current value logs nothing, except lineage-bearing aspects, which log RESTATE;
* DELETE logs ``aspect=None`` with the previous value;
* ``previousAspectValue``/``previousSystemMetadata`` come from the last value logged for that entity and aspect
  (never for timeseries aspects), and ``systemMetadata.version`` counts that aspect's versions;
* routing: timeseries aspects go to the timeseries change log, everything else to the versioned one;
* ``created`` is the change's time and actor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from pareis.datahub.metadata_file import JSON_CONTENT_TYPE, Proposal
from pareis.datahub.patch import apply_patch

# Aspects with a lineage relationship: GMS re-logs them on a no-op write as RESTATE (reference §2).
RESTATED_ASPECTS = frozenset(
    {
        "upstreamLineage",
        "dataJobInputOutput",
        "siblings",
        "mlFeatureProperties",
        "mlFeatureTableProperties",
        "mlModelProperties",
        "mlModelGroupProperties",
        "dataProcessInstanceInput",
        "dataProcessInstanceOutput",
        "dataProcessInstanceRelationships",
    }
)
DEFAULT_RUN_ID = "no-run-id-provided"
Log = Literal["versioned", "timeseries"]


@dataclass(frozen=True, slots=True)
class LoggedChange:
    """One MetadataChangeLog as GMS would produce it: which log, its key, and the Avro-shaped record."""

    log: Log
    key: str
    record: dict[str, Any]


@dataclass
class _Current:
    value: dict[str, Any]
    json: bytes
    system_metadata: dict[str, Any]
    version: int


@dataclass
class ChangeLogEmulator:
    """Turns proposals into the change-log records GMS would log, remembering each aspect's current value.

    ``is_timeseries(aspect_name)`` routes aspects; ``actor`` is the default actor of ``created``.
    """

    is_timeseries: Callable[[str], bool]
    actor: str = "urn:li:corpuser:datahub"
    _current: dict[tuple[str, str], _Current] = field(default_factory=dict)

    def apply(self, proposal: Proposal, now_ms: int) -> LoggedChange | None:
        """The change logged for ``proposal`` at ``now_ms``, or None when GMS would log nothing."""
        timeseries = self.is_timeseries(proposal.aspect_name)
        key = (proposal.entity_urn, proposal.aspect_name)
        previous = None if timeseries else self._current.get(key)
        system_metadata = self._system_metadata(proposal, now_ms)
        change_type = "UPSERT"
        if proposal.change_type == "DELETE":
            if previous is None:
                return None
            del self._current[key]
            value, value_json, change_type = None, None, "DELETE"
        else:
            value = (
                apply_patch(proposal.aspect_name, previous.value if previous else None, proposal.aspect)
                if proposal.is_patch
                else proposal.aspect
            )
            value_json = orjson.dumps(value)
            if previous is not None and value == previous.value:
                if proposal.aspect_name not in RESTATED_ASPECTS:
                    return None
                change_type = "RESTATE"
            if not timeseries:
                version = previous.version + (change_type != "RESTATE") if previous else 1
                system_metadata["version"] = str(version)
                self._current[key] = _Current(value, value_json, system_metadata, version)
        record: dict[str, Any] = {
            "entityType": proposal.entity_type,
            "entityUrn": proposal.entity_urn,
            "changeType": change_type,
            "aspectName": proposal.aspect_name,
            "aspect": _generic(value_json),
            "systemMetadata": system_metadata,
            "previousAspectValue": _generic(previous.json) if previous else None,
            "previousSystemMetadata": previous.system_metadata if previous else None,
            "created": {"time": now_ms, "actor": self.actor},
        }
        return LoggedChange("timeseries" if timeseries else "versioned", proposal.entity_urn, record)

    def _system_metadata(self, proposal: Proposal, now_ms: int) -> dict[str, Any]:
        given = dict(proposal.system_metadata or {})
        run_id = given.get("runId") or DEFAULT_RUN_ID
        out: dict[str, Any] = {"lastObserved": given.get("lastObserved") or now_ms, "runId": run_id}
        out["lastRunId"] = given.get("lastRunId") or run_id
        for name in ("pipelineName", "registryName", "registryVersion", "properties"):
            if given.get(name) is not None:
                out[name] = given[name]
        return out


def _generic(value_json: bytes | None) -> dict[str, Any] | None:
    return None if value_json is None else {"value": value_json, "contentType": JSON_CONTENT_TYPE}
