"""Property: on random lineage graphs, blast_radius equals a brute-force oracle of DESIGN §2.2.

The oracle restates the rules over explicit edge sets with Warshall transitive closures (no store, no frontier
walks); the graph under test is built from aspect JSON through the translator. Graphs may contain cycles.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pareis.core.blast import blast_radius
from pareis.core.impact import BlastRadius
from pareis.datahub.translate.lineage import lineage_update
from pareis.store.lineage import LineageStore, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore


def ds(i: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:hive,d{i},PROD)"


def col(i: int, name: str) -> str:
    return f"urn:li:schemaField:({ds(i)},{name})"


def feat(i: int, name: str) -> str:
    return f"urn:li:mlFeature:(fv{i},{name})"


def mdl(i: int) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,m{i},PROD)"


@dataclass
class World:
    widths: list[int]  # dataset i has columns c0..c{w-1}
    fgl: list[tuple[list[str], int, str]]  # (upstream URNs: columns or datasets, downstream dataset, column)
    table_edges: set[tuple[int, int]]  # extra table-only upstreams (upstream, downstream)
    siblings: set[tuple[int, int]]
    features: list[tuple[str, str]]  # (feature URN, source URN)
    models: list[tuple[list[str], list[int]]]  # (feature URNs, datasets read by its training run)
    failing: list[str]
    columns: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.columns = [col(d, f"c{k}") for d, w in enumerate(self.widths) for k in range(w)]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    widths = draw(st.lists(st.integers(1, 3), min_size=1, max_size=5))
    n = len(widths)
    cols = [col(d, f"c{k}") for d, w in enumerate(widths) for k in range(w)]
    pick_col = st.sampled_from(cols)
    upstream = st.one_of(pick_col, pick_col, st.sampled_from([ds(i) for i in range(n)]))
    down = st.sampled_from([(d, f"c{k}") for d, w in enumerate(widths) for k in range(w)])
    fgl = draw(st.lists(st.tuples(st.lists(upstream, min_size=1, max_size=2), down), max_size=8))
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
    table_edges = draw(st.sets(pairs, max_size=2))
    siblings = {p for p in draw(st.sets(pairs, max_size=2)) if p[0] != p[1]}
    names = st.sampled_from(["c0", "C1", "c2", "zz"])
    source = st.one_of(pick_col, st.sampled_from([ds(i) for i in range(n)]))
    features = [
        (feat(i, name), src) for i, (name, src) in enumerate(draw(st.lists(st.tuples(names, source), max_size=5)))
    ]
    fnames = [f for f, _ in features] or [feat(99, "dangling")]
    models = draw(
        st.lists(
            st.tuples(
                st.lists(st.sampled_from(fnames), max_size=4, unique=True), st.lists(st.integers(0, n - 1), max_size=2)
            ),
            max_size=3,
        )
    )
    failing = draw(st.lists(pick_col, min_size=1, max_size=2, unique=True))
    return World(widths, [(u, d, c) for u, (d, c) in fgl], table_edges, siblings, features, models, failing)


def load(world: World, store: LineageStore) -> None:
    def put(entity: str, aspect: str, value: dict[str, Any]) -> None:
        update = lineage_update(entity, aspect, "UPSERT", value, Stamp(1, 0))
        assert update is not None
        store.apply([update])

    for d, w in enumerate(world.widths):
        put(ds(d), "schemaMetadata", {"fields": [{"fieldPath": f"c{k}"} for k in range(w)]})
    for d in range(len(world.widths)):
        into = [(ups, c) for ups, dd, c in world.fgl if dd == d]
        upstreams = {u.split(",")[1] for ups, _ in into for u in ups} | {
            f"d{a}" for a, b in world.table_edges if b == d
        }
        fgls = [{"upstreamType": "FIELD_SET", "upstreams": ups, "downstreamType": "FIELD", "downstreams": [col(d, c)]}
                for ups, c in into]  # fmt: skip
        if upstreams or fgls:
            ups = [{"dataset": ds(int(u[1:])), "type": "TRANSFORMED"} for u in sorted(upstreams)]
            put(ds(d), "upstreamLineage", {"upstreams": ups, "fineGrainedLineages": fgls})
    by_owner: dict[int, set[int]] = {}
    for a, b in world.siblings:
        by_owner.setdefault(a, set()).add(b)
    for a, sibs in by_owner.items():
        put(ds(a), "siblings", {"siblings": [ds(s) for s in sorted(sibs)], "primary": False})
    sources: dict[str, list[str]] = {}
    for f, src in world.features:
        sources.setdefault(f, []).append(src)
    for f, srcs in sources.items():
        put(f, "mlFeatureProperties", {"sources": srcs})
    for i, (features, reads) in enumerate(world.models):
        run = f"urn:li:dataProcessInstance:run{i}"
        put(mdl(i), "mlModelProperties", {"mlFeatures": features, "trainingJobs": [run]})
        put(run, "dataProcessInstanceInput", {"inputs": [ds(r) for r in reads]})


def warshall(nodes: list[str], edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    reach = set(edges)
    for k in nodes:
        into_k = [i for i in nodes if (i, k) in reach]
        from_k = [j for j in nodes if (k, j) in reach]
        reach.update(itertools.product(into_k, from_k))
    return reach


def parent(column: str) -> str:
    return column[len("urn:li:schemaField:(") : column.rindex(",")]


def name(column: str) -> str:
    return column[column.rindex(",") + 1 : -1]


def oracle(w: World) -> dict[str, Any]:
    datasets = [ds(i) for i in range(len(w.widths))]
    schema = {ds(d): [col(d, f"c{k}") for k in range(n)] for d, n in enumerate(w.widths)}
    col_edges: set[tuple[str, str]] = set()
    for ups, d, c in w.fgl:
        for u in ups:
            col_edges.update((x, col(d, c)) for x in schema.get(u, [u]))
    twin_pairs = {(ds(a), ds(b)) for a, b in w.siblings} | {(ds(b), ds(a)) for a, b in w.siblings}
    twins = {
        (x, y) for x in w.columns for y in w.columns if (parent(x), parent(y)) in twin_pairs and name(x) == name(y)
    }
    reach = warshall(w.columns, col_edges | twins)
    failing = set(w.failing)
    anc = failing | {a for a in w.columns for f in failing if (a, f) in reach}
    affected = anc | {y for a in anc for y in w.columns if (a, y) in reach}
    # origins: sibling classes without a lineage parent outside the class
    same_class = warshall(sorted(anc), {p for p in twins if p[0] in anc and p[1] in anc})
    origins: set[str] = set()
    for x in anc:
        members = {x} | {y for y in anc if (x, y) in same_class}
        parents = {u for u, v in col_edges if v in members}
        if parents <= members:
            roots = {m for m in members if not any(v == m for _, v in col_edges)}
            origins |= roots or members
    # table level
    with_cols = {parent(c) for c in affected}
    dataset_edges = {
        (parent(u) if u.startswith("urn:li:schemaField") else u, ds(d)) for ups, d, _ in w.fgl for u in ups
    }
    covered = set(dataset_edges)
    dataset_edges |= {(ds(a), ds(b)) for a, b in w.table_edges}
    start = {b for a, b in dataset_edges - covered if a in with_cols}
    table_reach = warshall(datasets, dataset_edges | twin_pairs)
    table = start | {y for s in start for y in datasets if (s, y) in table_reach}
    # features
    precision: dict[str, str] = {}
    for f, src in w.features:
        evidence = set()
        if src in schema:
            fname = f[f.rindex(",") + 1 : -1]
            named = [c for c in schema[src] if name(c) == fname] or [
                c for c in schema[src] if name(c).lower() == fname.lower()
            ]
            if set(named) & affected:
                evidence.add("column")
            elif not named and src in with_cols:
                evidence.add("table")
            if src in table:
                evidence.add("table")
        else:
            if src in affected:
                evidence.add("column")
            if parent(src) in table:
                evidence.add("table")
        if evidence:
            best = "column" if "column" in evidence or precision.get(f) == "column" else "table"
            precision[f] = best
    models = {}
    for i, (features, reads) in enumerate(w.models):
        poisoned = sorted(set(features) & precision.keys())
        if poisoned:
            p = "table" if any(precision[f] == "table" for f in poisoned) else "column"
            models[mdl(i)] = (poisoned, len(features), p)
        elif not features and any(ds(r) in with_cols | table for r in reads):
            models[mdl(i)] = ([], 0, "table")
    return {
        "failing": sorted(failing),
        "origins": sorted(origins),
        "columns": sorted(affected),
        "datasets": sorted(with_cols | table),
        "features": sorted(precision),
        "models": models,
    }


def observed(blast: BlastRadius) -> dict[str, Any]:
    return {
        "failing": list(blast.failing_columns),
        "origins": list(blast.origin_columns),
        "columns": list(blast.columns),
        "datasets": list(blast.datasets),
        "features": list(blast.features),
        "models": {m.urn: (list(m.poisoned_features), m.total_features, m.precision) for m in blast.models},
    }


@pytest.mark.slow  # hundreds of Hypothesis examples: `make test` runs it, `make unit` does not
@settings(max_examples=300, deadline=None)
@given(worlds())
def test_blast_radius_matches_the_oracle(world: World) -> None:
    store = MemoryLineageStore()
    load(world, store)
    assert observed(blast_radius(store, columns=world.failing)) == oracle(world)


def acyclic(world: World) -> World:
    """The world without siblings and without column edges that point backwards in (dataset, column) order."""

    def key(urn: str) -> tuple[int, int]:
        if urn.startswith("urn:li:schemaField:"):
            return int(parent(urn).split(",")[1][1:]), int(name(urn)[1:])
        return int(urn.split(",")[1][1:]), 99  # a whole dataset comes after each of its columns

    fgl = [([u for u in ups if key(u) < key(col(d, c))], d, c) for ups, d, c in world.fgl]
    fgl = [(ups, d, c) for ups, d, c in fgl if ups]
    return World(world.widths, fgl, world.table_edges, set(), world.features, world.models, world.failing)


@pytest.mark.slow  # hundreds of Hypothesis examples: `make test` runs it, `make unit` does not
@settings(max_examples=200, deadline=None)
@given(worlds())
def test_in_a_dag_the_affected_columns_are_the_origins_and_their_descendants(world: World) -> None:
    dag = acyclic(world)
    store = MemoryLineageStore()
    load(dag, store)
    blast = blast_radius(store, columns=dag.failing)
    assert blast.origin_columns
    assert blast_radius(store, columns=blast.origin_columns).columns == blast.columns


@pytest.mark.integration
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(world=worlds())
def test_redis_and_memory_give_the_same_answer(world: World, redis_client: redis.Redis) -> None:
    redis_client.flushdb()
    memory, remote = MemoryLineageStore(), RedisLineageStore(redis_client)
    load(world, memory)
    load(world, remote)
    assert blast_radius(remote, columns=world.failing) == blast_radius(memory, columns=world.failing)
