"""The lineage metadata a running DataHub holds now, read through acryl-datahub's ``DataHubGraph``, as the change-log
entries GMS last logged for it — the lineage role's input, for ``pareis bootstrap --datahub``.

Calls (all on GMS):

* ``POST /api/graphql`` — ``scrollAcrossEntities`` (``DataHubGraph.get_urns_by_filter``): every URN of the
  entity types that carry lineage aspects (:data:`ENTITY_ASPECTS`), soft-deleted ones included (their ``status``
  matters to the index);
* ``GET /entitiesV2/<urn>?aspects=List(…)`` (``DataHubGraph.get_entity_raw``): the current value of each of that
  type's lineage aspects, with its ``systemMetadata`` (GMS's aspect ``version``) and ``created`` stamp;
* ``POST /aspects?action=getTimeseriesAspectValues`` (``DataHubGraph.get_timeseries_values``): the
  ``assertionRunEvent`` history of each assertion, newest first, up to ``runs_per_assertion``; and the latest
  ``operations_per_dataset`` ``operation`` aspects of each dataset (when its data changed: the gate's freshness).

Each aspect becomes an UPSERT :class:`~pareis.datahub.wire.changelog.ChangeLog` carrying GMS's own stamps, so loading
it into an index the role already maintains changes nothing that is newer there. Errors are translated as the
REST writer translates them (:func:`pareis.datahub.writes.rest.from_rest_error`): unreachable or 5xx/429 → Retriable,
401 →
Fatal, other refusals → Poison; a value that is not JSON → :class:`~pareis.errors.DecodeError`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson
import requests
from datahub.configuration.common import ConfigurationError, GraphError
from datahub.emitter.serialization_helper import pre_json_transform
from datahub.metadata.schema_classes import AssertionRunEventClass, OperationClass

from pareis.core.runs import AssertionRun, InvalidRun, operation_time, run_from_event
from pareis.datahub.wire.changelog import ChangeLog
from pareis.datahub.writes.rest import from_rest_error
from pareis.errors import DecodeError, PareisError

if TYPE_CHECKING:
    from datahub.ingestion.graph.client import DataHubGraph

ENTITY_ASPECTS: Mapping[str, tuple[str, ...]] = {
    "dataset": (
        "schemaMetadata",
        "datasetProperties",
        "upstreamLineage",
        "siblings",
        "logicalParent",
        "status",
        "deprecation",
        "ownership",
    ),
    "dataJob": ("dataJobInputOutput", "status", "deprecation"),
    "dataProcessInstance": (
        "dataProcessInstanceProperties",
        "dataProcessInstanceInput",
        "dataProcessInstanceOutput",
        "status",
    ),
    "mlFeature": ("mlFeatureProperties", "status", "deprecation", "ownership"),
    "mlPrimaryKey": ("mlPrimaryKeyProperties", "status", "deprecation"),
    "mlFeatureTable": ("mlFeatureTableProperties", "status", "deprecation", "ownership"),
    "mlModelGroup": ("mlModelGroupProperties", "status", "deprecation", "ownership"),
    "mlModel": ("mlModelProperties", "versionProperties", "status", "deprecation", "ownership"),
    "assertion": ("assertionInfo", "status"),
    "corpuser": ("corpUserInfo", "corpUserEditableInfo"),  # owners' emails (pareis.core.owners)
}
"""Per entity type, the lineage aspects (:data:`pareis.datahub.translate.lineage.LINEAGE_ASPECTS`) it can carry."""

COMPLETE_RUNS = {"or": [{"and": [{"field": "status", "values": ["COMPLETE"], "condition": "EQUAL"}]}]}


@dataclass
class GmsSnapshot:
    """Reads of ``graph`` (built and closed by the caller, see :func:`pareis.compose.sources.datahub_graph`)."""

    graph: DataHubGraph
    page_size: int = 1000
    runs_per_assertion: int = 10_000
    operations_per_dataset: int = 10

    def urns(self, entity_type: str) -> Iterator[str]:
        """Every URN of ``entity_type``, soft-deleted or not."""
        with _translated(f"scrollAcrossEntities({entity_type})"):
            yield from self.graph.get_urns_by_filter(entity_types=[entity_type], status=None, batch_size=self.page_size)

    def changes(self, entity_type: str, urn: str) -> list[ChangeLog]:
        """The current lineage aspects of one entity, as change-log entries (none when it has none)."""
        aspects = list(ENTITY_ASPECTS[entity_type])
        with _translated(f"GET /entitiesV2/{urn}"):
            found = self.graph.get_entity_raw(urn, aspects).get("aspects") or {}
        out = []
        for name in aspects:
            envelope = found.get(name)
            if not envelope or envelope.get("value") is None:
                continue
            out.append(
                ChangeLog(
                    entity_type=entity_type,
                    entity_urn=urn,
                    change_type="UPSERT",
                    aspect_name=name,
                    aspect=orjson.dumps(envelope["value"]),
                    previous_aspect=None,
                    system_metadata=envelope.get("systemMetadata"),
                    created=envelope.get("created"),
                    headers=None,
                    schema_id=0,
                )
            )
        return out

    def all_changes(self) -> Iterator[ChangeLog]:
        """:meth:`changes` of every entity of every type in :data:`ENTITY_ASPECTS`."""
        for entity_type in ENTITY_ASPECTS:
            for urn in self.urns(entity_type):
                yield from self.changes(entity_type, urn)

    def runs(self, assertion: str) -> list[AssertionRun]:
        """The COMPLETE runs of ``assertion``, as GMS returns them (newest first)."""
        what = f"getTimeseriesAspectValues(assertionRunEvent of {assertion})"
        with _translated(what):
            events = self.graph.get_timeseries_values(
                assertion, AssertionRunEventClass, COMPLETE_RUNS, limit=self.runs_per_assertion
            )
        try:
            return [run_from_event(pre_json_transform(event.to_obj())) for event in events]
        except InvalidRun as exc:
            raise DecodeError("aspect-shape", f"{what}: {exc}") from exc

    def all_runs(self) -> Iterator[AssertionRun]:
        """:meth:`runs` of every assertion."""
        for urn in self.urns("assertion"):
            yield from self.runs(urn)

    def operations(self, dataset: str) -> list[int]:
        """The change times (:func:`~pareis.core.runs.operation_time`) of ``dataset``'s latest ``operation`` aspects."""
        what = f"getTimeseriesAspectValues(operation of {dataset})"
        with _translated(what):
            events = self.graph.get_timeseries_values(dataset, OperationClass, {}, limit=self.operations_per_dataset)
        try:
            times = [operation_time(pre_json_transform(event.to_obj())) for event in events]
        except InvalidRun as exc:
            raise DecodeError("aspect-shape", f"{what}: {exc}") from exc
        return sorted(t for t in times if t is not None)

    def all_operations(self) -> Iterator[tuple[str, int]]:
        """(dataset, change time) of :meth:`operations` of every dataset."""
        for urn in self.urns("dataset"):
            for changed in self.operations(urn):
                yield urn, changed


@contextmanager
def _translated(what: str) -> Iterator[None]:
    """acryl-datahub / requests errors raised while doing ``what`` → Pareis errors."""
    try:
        yield
    except PareisError:
        raise
    except (GraphError, ConfigurationError, requests.RequestException) as exc:  # OperationalError is a GraphError
        raise from_rest_error(exc, what) from exc
    except ValueError as exc:  # a body that is not JSON
        raise DecodeError("aspect-json", f"{what}: {exc}") from exc
