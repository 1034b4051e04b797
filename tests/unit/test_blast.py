"""Blast radius (DESIGN §2.2), rule by rule, on small graphs built from change-log aspects.

Every test runs on the in-memory store and on Redis (integration): the same answers from both.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from pareis.core.blast import UnknownAssertion, blast_radius
from pareis.core.impact import BlastRadius, Severity
from pareis.store.lineage import LineageStore
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from tests.support.backends import Backend
from tests.support.graphs import ASSERTION, Graph, c, ds, feat, model


@pytest.fixture
def store(backend: Backend) -> LineageStore:
    if backend.client is None:
        return MemoryLineageStore()
    return RedisLineageStore(backend.client)


@pytest.fixture
def g(store: LineageStore) -> Graph:
    return Graph(store)


def impacts(blast: BlastRadius) -> dict[str, tuple[int, int, str, str]]:
    """model name → (poisoned, total, precision, severity)."""
    return {
        m.urn.split(",")[1]: (len(m.poisoned_features), m.total_features, m.precision, m.severity.value)
        for m in blast.models
    }


# 1. Failing columns


def test_the_assertions_fields_are_the_failing_columns(g: Graph) -> None:
    g.schema("orders", "id", "amount").assertion("orders", c("orders", "amount"))
    blast = blast_radius(g.store, assertions=[ASSERTION])
    assert blast.failing_columns == (c("orders", "amount"),)
    assert blast.columns == (c("orders", "amount"),)
    assert blast.datasets == (ds("orders"),)


def test_a_dataset_scoped_assertion_covers_every_column(g: Graph) -> None:
    g.schema("orders", "id", "amount", "currency").assertion("orders")
    g.feature("currency", c("orders", "currency")).model("m", "currency")
    blast = blast_radius(g.store, assertions=[ASSERTION])
    assert blast.failing_columns == tuple(sorted(c("orders", x) for x in ("id", "amount", "currency")))
    assert blast.features == (feat("currency"),)


def test_a_dataset_without_schema_borrows_its_siblings_columns(g: Graph) -> None:
    g.schema("wh_orders", "id", "amount").siblings("dbt_orders", "wh_orders").assertion("dbt_orders")
    g.feature("amount", c("wh_orders", "amount")).model("m", "amount")
    blast = blast_radius(g.store, assertions=[ASSERTION])
    assert blast.failing_columns == (c("dbt_orders", "amount"), c("dbt_orders", "id"))
    assert impacts(blast) == {"m": (1, 1, "column", "HIGH")}


def test_a_dataset_without_known_schema_fails_at_table_level(g: Graph) -> None:
    g.lineage("mart", ["raw"]).schema("mart", "total").assertion("raw")
    g.feature("total", c("mart", "total")).feature("other", c("elsewhere", "x")).model("m", "total", "other")
    blast = blast_radius(g.store, assertions=[ASSERTION])
    assert blast.failing_columns == ()
    assert blast.columns == ()
    assert blast.datasets == (ds("mart"), ds("raw"))
    assert blast.features == (feat("total"),)
    assert impacts(blast) == {"m": (1, 2, "table", "HIGH")}


def test_an_assertion_unknown_to_the_index_is_an_error(g: Graph) -> None:
    with pytest.raises(UnknownAssertion) as caught:
        blast_radius(g.store, assertions=["urn:li:assertion:nope"])
    assert caught.value.assertion == "urn:li:assertion:nope"


def test_several_failures_are_analysed_together(g: Graph) -> None:
    g.schema("t", "a", "b").feature("a", c("t", "a")).feature("b", c("t", "b")).model("m", "a", "b")
    g.assertion("t", c("t", "a"))
    blast = blast_radius(g.store, assertions=[ASSERTION], columns=[c("t", "b")])
    assert blast.failing_columns == (c("t", "a"), c("t", "b"))
    assert impacts(blast) == {"m": (2, 2, "column", "HIGH")}


def test_column_arguments_are_canonicalised_and_checked(g: Graph) -> None:
    v2 = f"urn:li:schemaField:({ds('t')},[version=2.0].[type=T].[type=string].a)"
    assert blast_radius(g.store, columns=[v2]).failing_columns == (c("t", "a"),)
    with pytest.raises(ValueError, match="not a schemaField URN"):
        blast_radius(g.store, columns=[ds("t")])


# 2. Origins and 3. affected columns


def test_origins_are_the_columns_without_upstream(g: Graph) -> None:
    g.lineage("stg", ["raw"], ([c("raw", "amount")], [c("stg", "amount_usd")]))
    g.lineage("mart", ["stg", "fx"], ([c("stg", "amount_usd"), c("fx", "rate")], [c("mart", "revenue")]))
    blast = blast_radius(g.store, columns=[c("mart", "revenue")])
    assert blast.origin_columns == (c("fx", "rate"), c("raw", "amount"))
    assert blast.columns == tuple(
        sorted([c("raw", "amount"), c("fx", "rate"), c("stg", "amount_usd"), c("mart", "revenue")])
    )


def test_a_column_without_upstream_is_its_own_origin(g: Graph) -> None:
    assert blast_radius(g.store, columns=[c("raw", "amount")]).origin_columns == (c("raw", "amount"),)


def test_re_rooting_finds_a_feature_built_from_the_same_raw_column_by_another_path(g: Graph) -> None:
    g.lineage("stg", ["raw"], ([c("raw", "amount")], [c("stg", "amount_usd")]))
    g.lineage("feats", ["raw"], ([c("raw", "amount")], [c("feats", "spend")]))
    g.feature("spend", c("feats", "spend")).model("m", "spend")
    blast = blast_radius(g.store, columns=[c("stg", "amount_usd")])
    assert c("feats", "spend") in blast.columns
    assert blast.features == (feat("spend"),)
    assert impacts(blast) == {"m": (1, 1, "column", "HIGH")}


def test_columns_beside_the_failing_one_are_not_affected(g: Graph) -> None:
    g.lineage("stg", ["raw"], ([c("raw", "a")], [c("stg", "a")]), ([c("raw", "b")], [c("stg", "b")]))
    g.feature("b", c("stg", "b")).model("m", "b")
    blast = blast_radius(g.store, columns=[c("stg", "a")])
    assert blast.columns == (c("raw", "a"), c("stg", "a"))
    assert blast.features == ()
    assert blast.severity is Severity.NONE


def test_a_whole_dataset_upstream_feeds_every_downstream_column(g: Graph) -> None:
    g.schema("raw", "x", "y").lineage("agg", ["raw"], ([ds("raw")], [c("agg", "n")]), kind="DATASET")
    g.feature("n", c("agg", "n")).model("m", "n")
    down = blast_radius(g.store, columns=[c("raw", "y")])
    assert c("agg", "n") in down.columns
    up = blast_radius(g.store, columns=[c("agg", "n")])
    assert up.origin_columns == (c("raw", "x"), c("raw", "y"))


def test_walks_terminate_on_cycles(g: Graph) -> None:
    g.lineage("a", ["b", "r"], ([c("b", "y"), c("r", "x")], [c("a", "x")]))
    g.lineage("b", ["a"], ([c("a", "x")], [c("b", "y")]))
    g.feature("y", c("b", "y")).model("m", "y")
    blast = blast_radius(g.store, columns=[c("a", "x")])
    assert blast.origin_columns == (c("r", "x"),)
    assert blast.columns == (c("a", "x"), c("b", "y"), c("r", "x"))
    assert blast.features == (feat("y"),)


def test_a_pure_cycle_has_no_origin_but_is_affected(g: Graph) -> None:
    g.lineage("a", ["b"], ([c("b", "y")], [c("a", "x")])).lineage("b", ["a"], ([c("a", "x")], [c("b", "y")]))
    blast = blast_radius(g.store, columns=[c("a", "x")])
    assert blast.origin_columns == ()
    assert blast.columns == (c("a", "x"), c("b", "y"))


def test_job_column_lineage_counts(g: Graph) -> None:
    job = "urn:li:dataJob:(urn:li:dataFlow:(airflow,etl,prod),load)"
    g.put(job, "dataJobInputOutput", {
        "inputDatasets": [ds("raw")], "outputDatasets": [ds("out")],
        "fineGrainedLineages": [{"upstreamType": "FIELD_SET", "upstreams": [c("raw", "a")],
                                 "downstreamType": "FIELD", "downstreams": [c("out", "a")]}],
    })  # fmt: skip
    g.feature("a", c("out", "a")).model("m", "a")
    assert impacts(blast_radius(g.store, columns=[c("raw", "a")])) == {"m": (1, 1, "column", "HIGH")}


# Siblings


def test_sibling_hop_reaches_the_warehouse_columns_of_a_dbt_assertion(g: Graph) -> None:
    g.schema("wh_orders", "ORDER_ID", "amount").schema("dbt_orders", "order_id", "amount")
    g.siblings("dbt_orders", "wh_orders").siblings("wh_orders", "dbt_orders")
    g.assertion("dbt_orders", c("dbt_orders", "order_id"))
    g.feature("oid", c("wh_orders", "ORDER_ID")).model("m", "oid")
    blast = blast_radius(g.store, assertions=[ASSERTION])
    assert blast.columns == (c("dbt_orders", "order_id"), c("wh_orders", "ORDER_ID"))
    assert blast.features == (feat("oid"),)


def test_a_sibling_without_schema_has_the_same_names(g: Graph) -> None:
    g.schema("wh", "amount").siblings("wh", "dbt").feature("amount", c("dbt", "amount")).model("m", "amount")
    blast = blast_radius(g.store, columns=[c("wh", "amount")])
    assert blast.columns == (c("dbt", "amount"), c("wh", "amount"))
    assert blast.features == (feat("amount"),)


def test_sibling_hops_work_upstream_and_a_sibling_class_is_one_origin(g: Graph) -> None:
    # raw ⇄ dbt source (identity COPY) → stg (the failing one)
    g.siblings("src", "raw").lineage("src", ["raw"], ([c("raw", "id")], [c("src", "id")]))
    g.lineage("stg", ["src"], ([c("src", "id")], [c("stg", "id")]))
    # a feature on another model of the same raw table, reached through the sibling
    g.lineage("other", ["raw"], ([c("raw", "id")], [c("other", "id")])).feature("oid", c("other", "id"))
    blast = blast_radius(g.store, columns=[c("stg", "id")])
    assert blast.origin_columns == (c("raw", "id"),)
    assert blast.features == (feat("oid"),)


def test_a_sibling_whose_upstream_lives_on_the_other_side_is_not_an_origin(g: Graph) -> None:
    g.siblings("wh", "dbt").lineage("dbt", ["raw"], ([c("raw", "x")], [c("dbt", "x")]))
    assert blast_radius(g.store, columns=[c("wh", "x")]).origin_columns == (c("raw", "x"),)


# 4. Features


def test_a_dataset_source_links_the_same_name_column_case_insensitively(g: Graph) -> None:
    g.schema("orders", "amount", "id").feature("Amount", ds("orders")).model("m", "Amount")
    assert blast_radius(g.store, columns=[c("orders", "amount")]).features == (feat("Amount"),)
    assert blast_radius(g.store, columns=[c("orders", "id")]).features == ()


def test_a_dataset_source_without_such_column_is_table_precision(g: Graph) -> None:
    g.schema("orders", "amount", "id").feature("churn_score", ds("orders"))
    g.feature("a1", c("x", "1")).feature("a2", c("x", "2")).feature("a3", c("x", "3"))
    g.model("m", "churn_score", "a1", "a2", "a3", "a4", "a5", "a6", "a7")
    blast = blast_radius(g.store, columns=[c("orders", "id")])
    assert blast.features == (feat("churn_score"),)
    assert impacts(blast) == {"m": (1, 8, "table", "HIGH")}


def test_a_column_whose_lineage_reaches_no_feature_gives_severity_none(g: Graph) -> None:
    g.lineage("stg", ["raw"], ([c("raw", "a")], [c("stg", "a")])).feature("b", c("stg", "b")).model("m", "b")
    blast = blast_radius(g.store, columns=[c("raw", "a")])
    assert blast.features == ()
    assert blast.models == ()
    assert blast.severity is Severity.NONE
    assert blast.severity.priority == 3


# 4b. Table-level spread along edges without column lineage


def test_a_dataset_edge_without_column_lineage_carries_the_failure_at_table_level(g: Graph) -> None:
    g.schema("raw", "a", "b").lineage("copy", ["raw"]).lineage("next", ["copy"])
    g.feature("f", c("next", "zzz")).model("m", "f")
    blast = blast_radius(g.store, columns=[c("raw", "a")])
    assert blast.datasets == (ds("copy"), ds("next"), ds("raw"))
    assert impacts(blast) == {"m": (1, 1, "table", "HIGH")}


def test_a_dataset_edge_with_column_lineage_does_not(g: Graph) -> None:
    g.lineage("stg", ["raw"], ([c("raw", "b")], [c("stg", "b")])).feature("f", c("stg", "x")).model("m", "f")
    blast = blast_radius(g.store, columns=[c("raw", "a")])
    assert blast.datasets == (ds("raw"),)
    assert blast.models == ()


# 5. Models and severity


@pytest.mark.parametrize(
    ("total", "poisoned", "severity"),
    [(5, 1, "LOW"), (4, 1, "MEDIUM"), (3, 1, "MEDIUM"), (2, 1, "HIGH"), (8, 4, "HIGH"), (9, 2, "LOW"), (1, 1, "HIGH")],
)
def test_severity_thresholds_at_a_quarter_and_a_half(g: Graph, total: int, poisoned: int, severity: str) -> None:
    g.schema("t", *[f"c{i}" for i in range(total)])
    for i in range(total):
        g.feature(f"f{i}", c("t", f"c{i}"))
    g.model("m", *[f"f{i}" for i in range(total)])
    blast = blast_radius(g.store, columns=[c("t", f"c{i}") for i in range(poisoned)])
    assert impacts(blast) == {"m": (poisoned, total, "column", severity)}
    assert blast.models[0].ratio == poisoned / total
    assert blast.severity.value == severity


def test_a_model_without_features_is_reached_through_its_training_runs(g: Graph) -> None:
    run = "urn:li:dataProcessInstance:r1"
    g.run(run, "orders").model("bare", runs=(run,)).model("featured", "f", runs=(run,))
    g.feature("f", c("orders", "other"))
    blast = blast_radius(g.store, columns=[c("orders", "amount")])
    assert impacts(blast) == {"bare": (0, 0, "table", "HIGH")}
    assert blast.models[0].ratio is None  # no features: no ratio (DESIGN §2.2)


def test_a_model_trained_on_an_upstream_dataset_is_reached_after_re_rooting(g: Graph) -> None:
    run = "urn:li:dataProcessInstance:r1"
    g.lineage("stg", ["raw"], ([c("raw", "a")], [c("stg", "a")])).run(run, "raw").model("bare", runs=(run,))
    assert impacts(blast_radius(g.store, columns=[c("stg", "a")])) == {"bare": (0, 0, "table", "HIGH")}


def test_the_incident_severity_is_the_highest_models(g: Graph) -> None:
    g.schema("t", "a", "b", "c", "d")
    for x in "abcd":
        g.feature(x, c("t", x))
    g.model("low", "a", "b", "c", "d", "e").model("high", "a")
    blast = blast_radius(g.store, columns=[c("t", "a")])
    assert impacts(blast) == {"low": (1, 5, "column", "LOW"), "high": (1, 1, "column", "HIGH")}
    assert blast.severity is Severity.HIGH
    assert blast.severity.priority == 1


def test_model_group_comes_from_groups_else_the_version_set(g: Graph) -> None:
    group = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
    version_set = "urn:li:versionSet:(abc,mlModel)"
    g.feature("f", c("t", "a")).model("grouped", "f", group=group).model("versioned", "f")
    g.put(model("versioned"), "versionProperties", {"versionSet": version_set, "version": {"versionTag": "1"},
                                                    "sortId": "1"})  # fmt: skip
    groups = {m.urn: m.group for m in blast_radius(g.store, columns=[c("t", "a")]).models}
    assert groups == {model("grouped"): group, model("versioned"): version_set}


def test_the_answer_is_deterministic_byte_for_byte() -> None:
    def build(order: list[int]) -> str:
        s = MemoryLineageStore()
        g = Graph(s)
        steps = [
            lambda: g.lineage("stg", ["raw"], ([c("raw", "a"), c("raw", "b")], [c("stg", "x"), c("stg", "y")])),
            lambda: g.feature("fx", c("stg", "x")).feature("fy", c("stg", "y")),
            lambda: g.model("m2", "fy", "fx").model("m1", "fx", "other"),
        ]
        for i in order:
            steps[i]()
        return json.dumps(blast_radius(s, columns=[c("stg", "y")]).to_json(), sort_keys=True)

    first = build([0, 1, 2])
    assert build([2, 1, 0]) == first
    assert json.loads(first)["models"][0]["urn"] == model("m1")


@pytest.mark.integration
def test_a_redis_walk_costs_round_trips_per_level_not_per_node(redis_client: redis.Redis) -> None:
    def round_trips(width: int) -> int:
        redis_client.flushdb()
        store = RedisLineageStore(redis_client)
        g = Graph(store)
        g.lineage("wide", ["raw"], ([c("raw", "a")], [c("wide", f"c{i}") for i in range(width)]))
        for i in range(width):
            g.feature(f"f{i}", c("wide", f"c{i}"))
        g.model("m", *[f"f{i}" for i in range(width)])
        calls = 0
        original = redis.connection.Connection.send_packed_command  # once per pipeline, round trip or command

        def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            return original(self, *args, **kwargs)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(redis.connection.Connection, "send_packed_command", counting)
            blast = blast_radius(store, columns=[c("raw", "a")])
        assert len(blast.features) == width
        return calls

    narrow = round_trips(2)
    assert 0 < narrow < 30
    assert round_trips(40) == narrow
