"""Small lineage graphs built from change-log aspects through the translator, for the blast-radius and
exposure tests: URN spellers (:func:`ds`, :func:`c`, :func:`feat`, :func:`model`) and :class:`Graph`."""

from __future__ import annotations

from typing import Any

from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.translate.lineage import lineage_update
from pareis.store.lineage import LineageStore, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.runs_memory import MemoryRunHistory


def ds(name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:hive,{name},PROD)"


def c(dataset: str, column: str) -> str:
    """Column ``column`` of dataset ``dataset`` (short name)."""
    return f"urn:li:schemaField:({ds(dataset)},{column})"


def feat(name: str) -> str:
    return f"urn:li:mlFeature:(fv,{name})"


def model(name: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name},PROD)"


ASSERTION = "urn:li:assertion:a1"


class Graph:
    """Builds a lineage index from aspect JSON, through the translator."""

    def __init__(self, store: LineageStore) -> None:
        self.store = store

    def put(self, entity: str, aspect: str, value: dict[str, Any]) -> Graph:
        update = lineage_update(entity, aspect, "UPSERT", value, Stamp(1, 0))
        assert update is not None
        self.store.apply([update])
        return self

    def schema(self, dataset: str, *columns: str) -> Graph:
        return self.put(ds(dataset), "schemaMetadata", {"fields": [{"fieldPath": x} for x in columns]})

    def lineage(
        self, dataset: str, upstreams: list[str], *fgls: tuple[list[str], list[str]], kind: str = "FIELD_SET"
    ) -> Graph:
        """``fgls``: (upstream column URNs, downstream column URNs) pairs."""
        value = {
            "upstreams": [{"dataset": ds(u), "type": "TRANSFORMED"} for u in upstreams],
            "fineGrainedLineages": [
                {"upstreamType": kind, "upstreams": ups, "downstreamType": "FIELD_SET", "downstreams": downs}
                for ups, downs in fgls
            ],
        }
        return self.put(ds(dataset), "upstreamLineage", value)

    def siblings(self, dataset: str, *others: str) -> Graph:
        return self.put(ds(dataset), "siblings", {"siblings": [ds(o) for o in others], "primary": False})

    def feature(self, name: str, *sources: str) -> Graph:
        return self.put(feat(name), "mlFeatureProperties", {"sources": list(sources)})

    def model(self, name: str, *features: str, runs: tuple[str, ...] = (), group: str | None = None) -> Graph:
        value: dict[str, Any] = {"mlFeatures": [feat(f) for f in features], "trainingJobs": list(runs)}
        if group:
            value["groups"] = [group]
        return self.put(model(name), "mlModelProperties", value)

    def run(self, run: str, *inputs: str) -> Graph:
        return self.put(run, "dataProcessInstanceInput", {"inputs": [ds(i) for i in inputs]})

    def assertion(self, dataset: str, *fields: str) -> Graph:
        value = {"type": "DATASET", "datasetAssertion": {"dataset": ds(dataset), "scope": "DATASET_COLUMN",
                                                          "operator": "NOT_NULL", "fields": list(fields)}}  # fmt: skip
        return self.put(ASSERTION, "assertionInfo", value)


def incident_graph() -> tuple[MemoryLineageStore, MemoryRunHistory]:
    """raw.a → mid.x → feature fx → model m; an assertion on raw.a failed once (a past incident) and one on raw.b."""
    g = Graph(MemoryLineageStore())
    g.schema("raw", "a", "b").schema("mid", "x", "w")
    g.lineage("mid", ["raw"], ([c("raw", "a")], [c("mid", "x")]), ([c("raw", "b")], [c("mid", "w")]))
    g.feature("fx", c("mid", "x")).feature("fw", c("mid", "w")).model("m", "fx", "fw")
    g.assertion("raw", c("raw", "a"))
    runs = MemoryRunHistory()
    for t, result in ((1_000, ResultType.SUCCESS), (2_000, ResultType.FAILURE), (3_000, ResultType.SUCCESS)):
        runs.record(AssertionRun(ASSERTION, t, result, ds("raw")))
    store = g.store
    assert isinstance(store, MemoryLineageStore)
    return store, runs
