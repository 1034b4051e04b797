"""The exposure index (pareis.core.exposure_index, pareis.answers.exposure, pareis.roles.exposure): one pass gives
exactly what the downstream walk gives, and protect and the gate answer the same through it.

The snapshot is compared with :func:`pareis.core.exposure.exposure` column by column on hand-built graphs (one per
linking rule), on every DataHub golden and on the demo recording; protect's JSON and the gate's are compared with
the old path (``use_index=False``) on the demo recording, the goldens, the gate scenarios and a graph whose gap
matches a past incident.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pareis.answers.exposure import ExposureReader, past_incident_columns
from pareis.answers.reliability import past_incidents, protect
from pareis.answers.sources import Sources
from pareis.config import DatahubSettings
from pareis.core.exposure import exposure
from pareis.core.exposure_index import (
    DatasetExposure,
    IncidentColumns,
    decode,
    encode,
    enumerate_inputs,
    exposure_of,
    incident_columns,
    snapshot,
)
from pareis.core.fieldpath import column_parts, parents_of, split_columns
from pareis.core.graph import Memo
from pareis.core.runs import AssertionRun, ResultType
from pareis.core.upstream import model_upstream
from pareis.lineage_loader import load_files
from pareis.roles.exposure import ExposureMaintainer, incident_history, rebuild
from pareis.store.exposure import MemoryExposureIndex
from pareis.store.lineage import LineageUpdate
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.graphs import ASSERTION, Graph, c, ds, feat, incident_graph, model

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = sorted((ROOT / "tests" / "data" / "datahub-goldens").glob("*.json"))
RECORDED = sorted((ROOT / "deploy" / "demo" / "recorded").glob("*.json"))
GATE = sorted((ROOT / "tests" / "data" / "gate").glob("*.json"))
AT = 1_900_000_000_000


def every_column(store: MemoryLineageStore) -> set[str]:
    """Every column the index names, and every column the models' upstream walk names."""
    found = {
        x for (_, node), targets in store._out.items() for x in (node, *targets) if x.startswith("urn:li:schemaField:(")
    }
    for up in model_upstream(Memo(store), store.entities("mlModelProperties")).values():
        found |= up.columns
    return found


def assert_snapshot_is_the_walk(store: MemoryLineageStore, columns: set[str] | None = None) -> None:
    entries = snapshot(store, **enumerate_inputs(store.entities))
    entries = {d: decode(d, encode(e)) for d, e in entries.items()}  # the stored form round-trips
    cols = every_column(store) if columns is None else columns
    walked = exposure(Memo(store), cols)
    read = exposure_of(entries, cols)
    assert dict(read.features) == dict(walked.features)
    assert dict(read.models) == dict(walked.models)


@pytest.fixture
def g() -> Graph:
    return Graph(MemoryLineageStore())


def test_column_edges_cycles_and_fan_in(g: Graph) -> None:
    g.schema("raw", "a", "b").schema("mid", "x").schema("out", "y")
    g.lineage("mid", ["raw"], ([c("raw", "a"), c("raw", "b")], [c("mid", "x")]))
    g.lineage("out", ["mid"], ([c("mid", "x")], [c("out", "y")]))
    g.lineage("raw", ["out"], ([c("out", "y")], [c("raw", "a")]))  # a cycle through raw.a
    g.feature("fy", c("out", "y")).feature("fb", c("raw", "b")).model("m", "fy", "fb", group="urn:li:mlModelGroup:g")
    store = g.store
    assert isinstance(store, MemoryLineageStore)
    assert_snapshot_is_the_walk(store)
    e = exposure_of(snapshot(store, **enumerate_inputs(store.entities)), [c("raw", "b"), c("raw", "a")])
    assert e.features[c("raw", "b")] == (feat("fb"), feat("fy")) and e.models[c("raw", "a")] == (model("m"),)


def test_whole_dataset_edges_siblings_and_names(g: Graph) -> None:
    g.schema("raw", "x", "y").lineage("agg", ["raw"], ([ds("raw")], [c("agg", "n")]), kind="DATASET")
    g.schema("agg", "n")
    g.schema("wh", "amount", "Total").siblings("dbt", "wh")  # the dbt node has no schema of its own
    g.lineage("mart", ["dbt"], ([c("dbt", "amount")], [c("mart", "amount")]))
    g.feature("n", ds("agg")).feature("amount", c("mart", "amount")).feature("total", ds("wh"))
    g.feature("nothing_named_so", ds("raw")).feature("free", ds("schemaless"))
    g.model("m1", "n", "amount").model("m2", "total", "nothing_named_so", "free")
    store = g.store
    assert isinstance(store, MemoryLineageStore)
    assert_snapshot_is_the_walk(store)
    e = exposure_of(snapshot(store, **enumerate_inputs(store.entities)), [c("raw", "y"), c("wh", "amount")])
    assert e.features[c("raw", "y")] == (feat("n"), feat("nothing_named_so"))  # dataset-wide edge; no such column
    assert e.features[c("wh", "amount")] == (feat("amount"),)  # through its dbt twin


def test_table_precision_models_and_removed_entities(g: Graph) -> None:
    g.schema("train", "a").schema("gone", "z").lineage("train", ["gone"], ([c("gone", "z")], [c("train", "a")]))
    g.run("urn:li:dataProcessInstance:r1", "train").model("featureless", runs=("urn:li:dataProcessInstance:r1",))
    g.feature("fz", c("gone", "z")).model("m", "fz")
    g.put(ds("gone"), "status", {"removed": True})
    store = g.store
    assert isinstance(store, MemoryLineageStore)
    assert_snapshot_is_the_walk(store, every_column(store) | {c("gone", "z")})
    e = exposure_of(snapshot(store, **enumerate_inputs(store.entities)), [c("train", "a"), c("gone", "z")])
    assert e.models[c("train", "a")] == (model("featureless"),)
    assert e.features[c("gone", "z")] == () and e.models[c("gone", "z")] == ()  # removed: out of the graph


NESTED = ROOT / "tests" / "data" / "overlays" / "nested_profile_country_fails.json"


@pytest.mark.parametrize("path", [*GOLDENS, NESTED, "recorded"], ids=lambda p: getattr(p, "stem", p))
def test_on_the_goldens_and_the_demo_recording_the_snapshot_is_the_walk(path: Any) -> None:
    """(And on the nested-field overlay: containment is followed alike.)"""
    store = MemoryLineageStore()
    load_files(store, RECORDED if path == "recorded" else [path])
    assert_snapshot_is_the_walk(store)


def live(paths: list[Path]) -> tuple[Sources, Sources]:
    """File sources, and the same with an exposure index the maintainer built."""
    from pareis.compose.sources import open_sources

    plain = open_sources(metadata=paths)
    index = MemoryExposureIndex()
    assert rebuild(plain.lineage, index, plain.runs, 0) is not None
    return plain, dataclasses.replace(plain, exposure=index)


SCENARIOS = [
    ("recorded", RECORDED, 1_759_276_800_000 + 8 * 86_400_000),
    ("goldens", GOLDENS, AT),
    *((p.stem, [GATE[0], p] if p != GATE[0] else [p], AT) for p in GATE if p.stem != "__init__"),
]


@pytest.mark.parametrize(("name", "paths", "at"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_protect_answers_the_same_through_the_index(name: str, paths: list[Path], at: int) -> None:
    plain, indexed = live(paths)
    old = protect(plain, at_ms=at, use_index=False)
    new = protect(indexed, at_ms=at)
    assert new.to_json() == old.to_json() and new.yaml == old.yaml
    assert new.exposure is not None and new.exposure["lineage_changes_since"] == 0
    assert old.exposure is None


@pytest.mark.parametrize("path", [p for p in GATE if p.stem != "__init__"], ids=lambda p: p.stem)
def test_the_gate_answers_the_same_through_the_index(path: Path) -> None:
    from pareis.answers.gate import gate
    from tests.data.gate import make_scenarios as sc

    plain, indexed = live([GATE[0], path] if path != GATE[0] else [path])
    for m in (sc.CHURN, sc.LTV):
        old = gate(plain, model=m, at_ms=sc.AT, use_index=False).to_json()
        assert gate(indexed, model=m, at_ms=sc.AT).to_json() == old


def test_past_incidents_from_the_index_match_the_analysed_history() -> None:
    store, runs = incident_graph()
    plain = Sources(store, runs)
    index = MemoryExposureIndex()
    rebuild(store, index, runs, 0)
    indexed = dataclasses.replace(plain, exposure=index)
    view = Memo(store)
    old = {s.urn: frozenset(r.columns) for s, r in past_incidents(plain, view, 10_000)}
    assert len(old) == 1
    assert past_incident_columns(plain, view, 10_000) == old  # computed
    reader = ExposureReader.of(indexed)
    assert past_incident_columns(indexed, view, 10_000, reader) == old  # read
    assert past_incident_columns(indexed, view, 1_999, reader) == {}  # began after `at`
    answer = protect(indexed, at_ms=10_000, model=model("m"))
    assert answer.to_json() == protect(plain, at_ms=10_000, model=model("m"), use_index=False).to_json()
    assert [g["column"] for g in answer.to_json()["gaps"] if g["matches_past_incident"]] == [c("mid", "x")]


def test_an_incident_entry_for_other_assertions_is_not_used() -> None:
    store, runs = incident_graph()
    index = MemoryExposureIndex()
    head = rebuild(store, index, runs, 0)
    assert head is not None
    (urn,) = index.incident_urns()
    wrong = IncidentColumns(urn, ds("raw"), 2_000, ("urn:li:assertion:other",), frozenset({c("raw", "b")}))
    index.add_incidents(head.version, [wrong])
    indexed = Sources(store, runs, exposure=index)
    found = past_incident_columns(indexed, Memo(store), 10_000, ExposureReader.of(indexed))
    assert c("raw", "b") not in found[urn] and c("raw", "a") in found[urn]


def test_nothing_published_yet_walks() -> None:
    store, runs = incident_graph()
    indexed = Sources(store, runs, exposure=MemoryExposureIndex())
    answer = protect(indexed, at_ms=10_000, model=model("m"))
    assert answer.exposure is None
    assert answer.to_json() == protect(Sources(store, runs), at_ms=10_000, model=model("m")).to_json()


def test_the_lineage_role_advances_the_generation_on_exposure_aspects_only() -> None:
    import orjson

    from pareis.contracts.records import Message
    from pareis.datahub.wire.changelog import ChangeLog
    from pareis.roles.lineage import LineageHandler

    store, index = MemoryLineageStore(), MemoryExposureIndex()
    handler = LineageHandler(store, DatahubSettings(), exposure=index)

    def batch(*entries: tuple[str, str, dict[str, Any]], version: str = "1") -> list[Message[ChangeLog]]:
        out = []
        for n, (urn, aspect, value) in enumerate(entries):
            change = ChangeLog(
                entity_type=urn.split(":")[2], entity_urn=urn, change_type="UPSERT", aspect_name=aspect,
                aspect=orjson.dumps(value), previous_aspect=None, system_metadata={"version": version},
                created={"time": 1, "actor": "urn:li:corpuser:datahub"}, headers=None, schema_id=0,
            )  # fmt: skip
            out.append(Message("t", 0, n, urn.encode(), change))
        return out

    schema = (ds("a"), "schemaMetadata", {"fields": [{"fieldPath": "x"}]})
    handler(batch(schema, (feat("f"), "mlFeatureProperties", {"sources": [c("a", "x")]})))
    assert index.generation() == 1  # once per batch
    handler(batch(schema, version="2"))
    assert index.generation() == 1  # unchanged (an equal value restated): nothing applied
    handler(batch((ASSERTION, "assertionInfo", {"type": "DATASET", "datasetAssertion": {"dataset": ds("a")}})))
    assert index.generation() == 1  # an assertion changes no exposure
    handler(batch(schema, version="1"))
    # The same update again: the redo of an attempt that applied it and may have stopped before its touch.
    assert index.generation() == 2


def test_the_maintainer_waits_for_quiet_but_not_forever() -> None:
    store, runs = incident_graph()
    index = MemoryExposureIndex()
    m = ExposureMaintainer(store, index, runs, quiet_ms=100, max_delay_ms=1_000, incidents_every_ms=50)
    first = m.step(0)
    assert first is not None and first.generation == 0  # nothing published yet: at once
    assert m.step(10) is None  # up to date
    index.touch()
    assert m.step(20) is None and m.step(110) is None  # not quiet for 100 ms yet (first seen at 20)
    made = m.step(120)
    assert made is not None and made.generation == 1
    for t in range(200, 1_500, 50):  # a steady stream of changes, never quiet for 100 ms
        index.touch()
        found = m.step(t)
        if found is not None:
            break
    assert found is not None and t == 1_200  # published at the max delay after the first change, not starved
    # a new incident between recomputations joins the current version
    runs.record(AssertionRun(ASSERTION, 5_000, ResultType.FAILURE, ds("raw")))
    before = index.incident_urns()
    assert m.step(t + 100) is None
    (added,) = index.incident_urns() - before
    head = next(h for h in incident_history(Memo(store), runs) if h.urn == added)
    assert len(head.assertions) == 1 and index.read([], radii=head.assertions).radii  # its radius, read not walked
    assert index.read([], [added]).incidents[added] == incident_columns(Memo(store), head)  # the walk's columns


def test_a_new_incident_between_recomputations_takes_the_radius_the_version_keeps() -> None:
    """An incident of one assertion that joins the current version takes the radius the version keeps of it instead
    of walking it (a burst's thousand new incidents are no thousand walks): a planted radius is what it takes."""
    store, runs = incident_graph()
    index = MemoryExposureIndex()
    m = ExposureMaintainer(store, index, runs, incidents_every_ms=0)
    assert m.step(0) is not None
    kept = index.read([], radii=[ASSERTION]).radii[ASSERTION]
    planted = dataclasses.replace(kept.radius, columns=tuple(sorted({*kept.radius.columns, c("raw", "planted")})))
    past = index.read([], index.incident_urns()).incidents.values()
    index.publish(index.generation(), 1, {}, past, radii=[dataclasses.replace(kept, radius=planted)])
    before = index.incident_urns()
    runs.record(AssertionRun(ASSERTION, 5_000, ResultType.FAILURE, ds("raw")))
    assert m.step(100) is None
    (added,) = index.incident_urns() - before
    assert index.read([], [added]).incidents[added].columns == frozenset(planted.columns)


def test_a_reader_says_which_snapshot_it_read_and_how_old() -> None:
    store, runs = incident_graph()
    index = MemoryExposureIndex()
    rebuild(store, index, runs, 1_000)
    index.touch()
    index.touch()
    answer = protect(Sources(store, runs, exposure=index), at_ms=4_000, model=model("m"))
    assert answer.exposure == {
        "version": 1, "computed_at_ms": 1_000, "lineage_generation": 0, "lineage_changes_since": 2, "age_ms": 3_000
    }  # fmt: skip


def test_an_entry_round_trips_with_any_column_spelling() -> None:
    odd = "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:x,y,PROD),[version=2.0].a)"
    entry = DatasetExposure(
        ds("a"), {"x%2Cy": ((feat("f"),), ()), "\x00" + odd: ((), (model("m"),))}, {model("m"): "urn:li:mlModelGroup:g"}
    )
    assert decode(ds("a"), encode(entry)) == entry
    with pytest.raises(ValueError, match="malformed exposure entry"):
        decode(ds("a"), '{"f": []}')


@pytest.mark.integration
def test_on_redis_the_maintainer_publishes_and_protect_reads_the_same(redis_client: Any) -> None:
    from pareis.store.exposure_redis import RedisExposureIndex
    from pareis.store.lineage_redis import RedisLineageStore
    from pareis.store.runs_redis import RedisRunHistory

    memory, runs = incident_graph()
    store, history = RedisLineageStore(redis_client), RedisRunHistory(redis_client)
    for aspect in ("schemaMetadata", "upstreamLineage", "mlFeatureProperties", "mlModelProperties", "assertionInfo"):
        for entity in memory.entities(aspect):
            record = memory.record(entity, aspect)
            assert record is not None
            store.apply([LineageUpdate(entity, aspect, record.stamp, record.facts)])
    for r in runs.runs(ASSERTION):
        history.record(r)
    index = RedisExposureIndex(redis_client)
    maintainer = ExposureMaintainer(store, index, history)
    assert maintainer.step(0) is not None
    on_redis = Sources(store, history, exposure=index)
    answer = protect(on_redis, at_ms=10_000, model=model("m"))
    assert answer.exposure is not None
    assert answer.to_json() == protect(Sources(memory, runs), at_ms=10_000, model=model("m"), use_index=False).to_json()


def test_the_lineage_pipeline_over_given_ports_counts_into_their_exposure_index_and_starts_no_thread() -> None:
    import threading

    from pareis.compose.ports import Ports
    from pareis.compose.roles import lineage_pipeline
    from pareis.config import Settings

    ports = Ports.in_memory()
    before = {t.name for t in threading.enumerate()}
    pipeline = lineage_pipeline(Settings(), ports)
    pipeline.start()
    assert getattr(pipeline.handle, "exposure", None) is ports.exposure
    assert "exposure-maintainer" not in {t.name for t in threading.enumerate()} - before
    pipeline.close()


def test_the_maintainer_thread_publishes_and_stops() -> None:
    import threading

    from pareis.roles.exposure import MaintainerThread

    store, runs = incident_graph()
    index = MemoryExposureIndex()
    done = threading.Event()

    class Signalling(ExposureMaintainer):
        def step(self, now_ms: int) -> Any:
            made = super().step(now_ms)
            if index.current() is not None:
                done.set()
            return made

    thread = MaintainerThread(Signalling(store, index, runs), tick_s=0.01)
    thread.start()
    assert done.wait(10)
    thread.stop()
    assert index.current() is not None
    assert "exposure-maintainer" not in {t.name for t in threading.enumerate()}


def _score_writes(index: MemoryExposureIndex | None) -> list[tuple[str, float]]:
    from pareis.contracts.records import Message
    from pareis.roles.messages import RunSignal
    from pareis.roles.scores import ScorePublisher
    from pareis.store.scores import MemoryScoreLedger

    store, runs = incident_graph()
    run = AssertionRun(ASSERTION, 4_000, ResultType.FAILURE, ds("raw"))
    runs.record(run)
    batch = [Message("pareis.signals.v1", 0, 0, None, RunSignal(ds("raw"), run, run.timestamp_ms))]
    if index is not None and index.current() is None:
        rebuild(store, index, runs, 0)
    return [(w.urn, w.score) for w in ScorePublisher(store, runs, MemoryScoreLedger(), index).writes(batch)]


def test_the_score_publisher_reads_what_is_downstream_from_the_index() -> None:
    walked = _score_writes(None)
    assert model("m") in {urn for urn, _ in walked}, "the model downstream of the failing column is scored"
    assert _score_writes(MemoryExposureIndex()) == walked  # read from a snapshot of the same lineage
    empty = MemoryExposureIndex()
    empty.publish(empty.touch(), 0, {})  # a snapshot in which nothing lies downstream of any column
    assert model("m") not in {urn for urn, _ in _score_writes(empty)}, "the index, not a walk, was read"
    empty.touch()  # a lineage change since the snapshot: the publisher walks rather than write a lagging score
    assert _score_writes(empty) == walked


def test_the_score_publisher_reads_which_assertions_ran_on_a_class_once_per_survey_and_the_timelines_at_once() -> None:
    from pareis.contracts.records import Message
    from pareis.roles.messages import RunSignal
    from pareis.roles.scores import ScorePublisher
    from pareis.store.scores import MemoryScoreLedger

    store, runs = incident_graph()
    run = AssertionRun(ASSERTION, 4_000, ResultType.FAILURE, ds("raw"))
    runs.record(run)
    batch = [Message("pareis.signals.v1", 0, 0, None, RunSignal(ds("raw"), run, run.timestamp_ms))]
    calls: dict[str, int] = {}

    class Counting:
        def __getattr__(self, name: str) -> Any:
            calls[name] = calls.get(name, 0) + 1
            return getattr(runs, name)

    counted = ScorePublisher(store, Counting(), MemoryScoreLedger()).writes(batch)  # type: ignore[arg-type]
    assert [(w.urn, w.score) for w in counted] == _score_writes(None)
    assert "assertions_of" not in calls  # one round trip per member was the cost
    assert 1 <= calls["assertions_by_dataset"] <= 2  # the dataset's survey, then its models' survey
    # Every class's timeline (the dataset's, those upstream of its models) in one round trip, not one each.
    assert "timeline" not in calls and calls["timelines"] == 1


def test_the_maintainer_retries_a_retriable_step_and_stops_the_role_on_anything_else() -> None:
    import threading

    from pareis.errors import Fatal, Retriable
    from pareis.roles.exposure import MaintainerThread

    store, runs = incident_graph()
    steps: list[int] = []
    retried = threading.Event()

    class Failing(ExposureMaintainer):
        def step(self, now_ms: int) -> Any:
            steps.append(now_ms)
            if len(steps) < 3:
                raise Retriable("redis: connection reset")
            retried.set()
            raise KeyError("a bug of ours")

    thread = MaintainerThread(Failing(store, MemoryExposureIndex(), runs), tick_s=0.01)
    thread.check()  # nothing failed yet
    thread.start()
    assert retried.wait(10)
    assert thread._thread is not None
    thread._thread.join(10)
    assert not thread._thread.is_alive(), "an unclassified error stops the maintainer"
    assert len(steps) == 3, "Retriable steps were tried again"
    with pytest.raises(Fatal, match="KeyError"):
        thread.check()
    from pareis.roles.lineage import LineageHandler

    with pytest.raises(Fatal, match="maintainer stopped"):  # the role's next batch stops the role
        LineageHandler(store, DatahubSettings(), maintainer_check=thread.check)([])
    thread.stop()


_SPELLINGS = [
    "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD),amount)",
    "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD),a%2Cb)",
    "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD),[version=2.0].[type=string].name)",
    "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD),f(x))",
    "urn:li:schemaField:(urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD),)",
    "urn:li:schemaField:(urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,t),col)",
]


@given(st.lists(st.sampled_from(_SPELLINGS) | st.text(min_size=1), max_size=6))
def test_parents_of_and_split_columns_are_the_one_column_parsers_for_every_column(columns: list[str]) -> None:
    """The batch split answers (or refuses) exactly as :func:`column_parts` does one column at a time, the spellings
    its fast case leaves to the general parser included."""
    expected: dict[str, str] = {}
    refused = False
    for col in columns:
        try:
            expected[col] = column_parts(col)[0]
        except ValueError:
            refused = True
    if refused:
        with pytest.raises(ValueError):
            parents_of(columns)
        with pytest.raises(ValueError):
            split_columns(columns)
    else:
        assert parents_of(columns) == expected
        assert split_columns(columns) == {col: column_parts(col) for col in columns}


def test_exposure_of_is_the_same_with_or_without_the_callers_parents() -> None:
    """Handing :func:`exposure_of` the columns' datasets changes nothing: a dataset with an entry, one whose entry
    is None, one absent, and a column whose path the fast split leaves to the general parser."""
    d = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
    odd = f"urn:li:schemaField:({d},[version=2.0].x)"
    entry = DatasetExposure(d, {"a": (("f1",), ("m1",)), "[version=2.0].x": ((), ("m2",))}, {"m1": "g1"})
    other = "urn:li:dataset:(urn:li:dataPlatform:hive,db.u,PROD)"
    cols = [f"urn:li:schemaField:({d},a)", f"urn:li:schemaField:({d},b)", odd, f"urn:li:schemaField:({other},z)"]
    entries: dict[str, DatasetExposure | None] = {d: entry, other: None}
    plain = exposure_of(entries, cols)
    assert plain == exposure_of(entries, cols, parents_of(cols))
    assert plain.models[cols[0]] == ("m1",) and plain.models[odd] == ("m2",) and plain.groups == {"m1": "g1"}
    assert plain.features[cols[1]] == () and plain.models[cols[3]] == ()
