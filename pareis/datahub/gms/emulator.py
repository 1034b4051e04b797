"""What GMS does with a proposal before it reaches the change log: apply, version, route, log.

:class:`ChangeLogEmulator` stands in for GMS where none runs (local stacks, backfills, tests, the demo) while the
metadata itself stays real. For each proposal it emits the MetadataChangeLog that GMS would emit:

* PATCH proposals are applied to the last value (GMS logs the merged aspect as UPSERT);
* a write equal to the current value logs nothing, except lineage-bearing aspects, which log RESTATE;
* DELETE logs ``aspect=None`` with the previous value;
* ``previousAspectValue``/``previousSystemMetadata`` come from the last value logged for that entity and aspect
  (never for timeseries aspects), and ``systemMetadata.version`` counts that aspect's versions;
* routing: timeseries aspects go to the timeseries change log, everything else to the versioned one;
* ``created`` is the change's time and actor;
* :meth:`ChangeLogEmulator.log` also runs the MCL hook that writes lineage back, DataHub's sibling hook
  (:mod:`pareis.datahub.gms.sibling_hook`), and logs what it writes, right after the change that triggered it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from pareis.datahub.files.metadata_file import JSON_CONTENT_TYPE, Proposal
from pareis.datahub.gms.patch import apply_patch
from pareis.datahub.gms.sibling_hook import HOOK_ACTOR, sibling_proposals

# Aspects with a lineage relationship: GMS re-logs them on a no-op write as RESTATE (reference §2).
RESTATED_ASPECTS = frozenset(
    {
        "upstreamLineage",
        "dataJobInputOutput",
        "siblings",
        "logicalParent",
        "mlFeatureProperties",
        "mlPrimaryKeyProperties",
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
    """What GMS remembers of an aspect: its JSON only (parsed again on the rare reads, PATCH and the sibling hook),
    so that a large load holds one compact copy of each current value."""

    json: bytes
    system_metadata: dict[str, Any]
    version: int


@dataclass
class ChangeLogEmulator:
    """Turns proposals into the change-log records GMS would log, remembering each aspect's current value.

    ``is_timeseries(aspect_name)`` routes aspects; ``actor`` is the default actor of ``created``; ``hooks``: whether
    :meth:`log` runs the sibling hook (GMS runs it unless ``siblings.enabled`` is false).
    """

    is_timeseries: Callable[[str], bool]
    actor: str = "urn:li:corpuser:datahub"
    hooks: bool = True
    _current: dict[tuple[str, str], _Current] = field(default_factory=dict)
    _entities: set[str] = field(default_factory=set)

    def log(self, proposal: Proposal, now_ms: int) -> list[LoggedChange]:
        """Every change GMS logs for ``proposal`` at ``now_ms``: its own (none for a no-op write), then the
        ``siblings`` writes of the sibling hook it triggers."""
        change = self.apply(proposal, now_ms)
        if change is None:
            return []
        out = [change]
        if not self.hooks or change.log != "versioned":
            return out
        written = sibling_proposals(
            proposal.entity_type,
            proposal.entity_urn,
            proposal.aspect_name,
            str(change.record["changeType"]),
            self.current,
            self._entities.__contains__,
        )
        for urn, value in written:
            hook = Proposal("dataset", urn, "UPSERT", "siblings", value, JSON_CONTENT_TYPE, None, proposal.source)
            logged = self.apply(hook, now_ms, actor=HOOK_ACTOR)
            if logged is not None:
                out.append(logged)
        return out

    def current(self, entity: str, aspect_name: str) -> dict[str, Any] | None:
        """The current value of a versioned aspect, None when it has none."""
        found = self._current.get((entity, aspect_name))
        return None if found is None else orjson.loads(found.json)

    def apply(self, proposal: Proposal, now_ms: int, *, actor: str | None = None) -> LoggedChange | None:
        """The change logged for ``proposal`` at ``now_ms`` (by ``actor``, default :attr:`actor`), or None when GMS
        would log nothing. No hook runs (see :meth:`log`)."""
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
                apply_patch(proposal.aspect_name, orjson.loads(previous.json) if previous else None, proposal.aspect)
                if proposal.is_patch
                else proposal.aspect
            )
            value_json = orjson.dumps(value)
            if previous is not None and value_json == previous.json:
                if proposal.aspect_name not in RESTATED_ASPECTS:
                    return None
                change_type = "RESTATE"
            if not timeseries:
                version = previous.version + (change_type != "RESTATE") if previous else 1
                system_metadata["version"] = str(version)
                self._current[key] = _Current(value_json, system_metadata, version)
                self._entities.add(proposal.entity_urn)
        record: dict[str, Any] = {
            "entityType": proposal.entity_type,
            "entityUrn": proposal.entity_urn,
            "changeType": change_type,
            "aspectName": proposal.aspect_name,
            "aspect": _generic(value_json),
            "systemMetadata": system_metadata,
            "previousAspectValue": _generic(previous.json) if previous else None,
            "previousSystemMetadata": previous.system_metadata if previous else None,
            "created": {"time": now_ms, "actor": actor or self.actor},
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
