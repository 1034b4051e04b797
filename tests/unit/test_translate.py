"""Dataset-side aspects → lineage facts, on aspects built with acryl-datahub's classes and serialised as on the wire."""

from __future__ import annotations

import json
import re
from typing import Any

import datahub.metadata.schema_classes as dh
import pytest
from datahub.emitter.mce_builder import make_assertion_urn, make_dataset_urn, make_schema_field_urn
from datahub.emitter.serialization_helper import pre_json_transform
from datahub.ingestion.source.dbt.dbt_tests import _make_custom_assertion_info

from pareis.core.graph import Attr, Rel
from pareis.datahub.translate.lineage import LINEAGE_ASPECTS, lineage_update, stamp_of
from pareis.errors import DecodeError, Poison
from pareis.store.lineage import Facts, LineageUpdate, Stamp

RAW = make_dataset_urn("postgres", "shop.public.orders")
STG = make_dataset_urn("snowflake", "analytics.stg_orders")
DBT = make_dataset_urn("dbt", "analytics.stg_orders")
JOB = "urn:li:dataJob:(urn:li:dataFlow:(airflow,etl,prod),load)"
ASSERTION = make_assertion_urn("a1")
STAMP = Stamp(3, 1000)


def wire(aspect: Any) -> dict[str, Any]:
    return pre_json_transform(aspect.to_obj())  # type: ignore[no-any-return]


def facts(entity: str, aspect: Any, name: str | None = None) -> Facts:
    update = lineage_update(entity, name or aspect.ASPECT_NAME, "UPSERT", wire(aspect), STAMP)
    assert update is not None and update.facts is not None
    return update.facts


def col(dataset: str, path: str) -> str:
    return make_schema_field_urn(dataset, path)


def fgl(up_type: str, ups: list[str], downs: list[str]) -> dh.FineGrainedLineageClass:
    return dh.FineGrainedLineageClass(upstreamType=up_type, downstreamType="FIELD", upstreams=ups, downstreams=downs)


def test_lineage_aspects_are_those_of_the_design() -> None:
    # §1's list, plus mlPrimaryKeyProperties (feature-table keys, §2.1).
    design = """upstreamLineage schemaMetadata siblings dataJobInputOutput mlFeatureProperties mlPrimaryKeyProperties
        mlFeatureTableProperties mlModelProperties mlModelGroupProperties versionProperties
        dataProcessInstanceProperties dataProcessInstanceInput dataProcessInstanceOutput assertionInfo status
        deprecation"""
    # plus what DESIGN §2.5's test suggestions and evidence need: the dbt node and the latest profile
    protect = {"datasetProperties", "datasetProfile"}
    # plus §3's owners: who owns the failing dataset and the models, and the users' emails
    owners = {"ownership", "corpUserInfo", "corpUserEditableInfo"}
    # plus §2.3's serving versions: a deployment's status (the models' deployments and aliases are in the above)
    serving = {"mlModelDeploymentProperties"}
    # plus §2.1's logical datasets (DataHub's logical/physical model)
    logical = {"logicalParent"}
    assert set(design.split()) | protect | owners | serving | logical == LINEAGE_ASPECTS


def test_upstream_lineage_links_datasets_and_each_upstream_column_to_each_downstream() -> None:
    aspect = dh.UpstreamLineageClass(
        upstreams=[dh.UpstreamClass(dataset=RAW, type="TRANSFORMED")],
        fineGrainedLineages=[fgl("FIELD_SET", [col(RAW, "amount"), col(RAW, "fx")], [col(STG, "a"), col(STG, "b")])],
    )
    got = facts(STG, aspect)
    column_edges = {(Rel.COLUMN, col(RAW, u), col(STG, d)) for u in ("amount", "fx") for d in ("a", "b")}
    assert got == Facts.of({(Rel.DATASET, RAW, STG), (Rel.COVERED, RAW, STG), *column_edges})


def test_v2_and_percent_encoded_field_paths_come_out_canonical() -> None:
    v2 = f"urn:li:schemaField:({RAW},[version=2.0].[type=Order].[type=Money].price.[type=double].net)"
    lower_hex = f"urn:li:schemaField:({STG},net%2cprice)"
    raw_reserved = f"urn:li:schemaField:({STG},f(x))"
    aspect = dh.UpstreamLineageClass(
        upstreams=[], fineGrainedLineages=[fgl("FIELD_SET", [v2], [lower_hex, raw_reserved])]
    )
    assert facts(STG, aspect).edges == {
        (Rel.COLUMN, col(RAW, "price.net"), col(STG, "net,price")),
        (Rel.COLUMN, col(RAW, "price.net"), col(STG, "f(x)")),
        (Rel.COVERED, RAW, STG),
    }
    assert col(STG, "net,price") == f"urn:li:schemaField:({STG},net%2Cprice)"


def test_a_dataset_upstream_feeds_the_downstream_column_and_none_feeds_nothing() -> None:
    aspect = dh.UpstreamLineageClass(
        upstreams=[dh.UpstreamClass(dataset=RAW, type="TRANSFORMED")],
        fineGrainedLineages=[fgl("DATASET", [RAW], [col(STG, "n")]), fgl("NONE", [], [col(STG, "const")])],
    )
    assert facts(STG, aspect).edges == {
        (Rel.DATASET, RAW, STG),
        (Rel.DATASET_COLUMN, RAW, col(STG, "n")),
        (Rel.COVERED, RAW, STG),
    }


def test_table_level_only_lineage_is_not_covered() -> None:
    aspect = dh.UpstreamLineageClass(upstreams=[dh.UpstreamClass(dataset=RAW, type="COPY")])
    assert facts(STG, aspect).edges == {(Rel.DATASET, RAW, STG)}


def test_data_job_input_output_reads_writes_and_column_lineage() -> None:
    aspect = dh.DataJobInputOutputClass(
        inputDatasets=[RAW],
        outputDatasets=[],
        outputDatasetEdges=[dh.EdgeClass(destinationUrn=STG)],
        fineGrainedLineages=[fgl("FIELD_SET", [col(RAW, "id")], [col(STG, "order_id")])],
    )
    assert facts(JOB, aspect).edges == {
        (Rel.READS, RAW, JOB),
        (Rel.WRITES, JOB, STG),
        (Rel.COLUMN, col(RAW, "id"), col(STG, "order_id")),
        (Rel.COVERED, RAW, STG),
    }


def _schema(*paths: str) -> dh.SchemaMetadataClass:
    fields = [
        dh.SchemaFieldClass(
            fieldPath=p, type=dh.SchemaFieldDataTypeClass(type=dh.StringTypeClass()), nativeDataType="s"
        )
        for p in paths
    ]
    return dh.SchemaMetadataClass(
        schemaName="orders", platform="urn:li:dataPlatform:kafka", version=0, hash="",
        platformSchema=dh.OtherSchemaClass(rawSchema=""), fields=fields,
    )  # fmt: skip


def test_schema_metadata_lists_simple_columns() -> None:
    order = "[version=2.0].[type=Order]"
    aspect = _schema(f"{order}.[type=Addr].addr", f"{order}.[type=Addr].addr.[type=string].zip", order, "id", "a,b")
    assert facts(RAW, aspect).edges == {
        (Rel.HAS_COLUMN, RAW, col(RAW, "addr")),
        (Rel.HAS_COLUMN, RAW, col(RAW, "addr.zip")),
        (Rel.HAS_COLUMN, RAW, col(RAW, "id")),
        (Rel.HAS_COLUMN, RAW, col(RAW, "a,b")),
    }


def test_siblings_link_dbt_node_and_warehouse_table() -> None:
    assert facts(DBT, dh.SiblingsClass(siblings=[STG, DBT], primary=True)).edges == {(Rel.SIBLING, DBT, STG)}


def test_a_logical_parent_links_like_siblings() -> None:
    """DESIGN §2.1 logical datasets, on values built with acryl-datahub's ``LogicalParentClass``: datasets are
    siblings; a column and its parent column are each other's upstream (whatever their names); a column whose parent
    is a dataset is that dataset's column of its name; no parent, no link; a dataset under a column is refused."""
    contract = make_dataset_urn("odcs", "orders_contract")

    def parent(urn: str | None) -> dh.LogicalParentClass:
        return dh.LogicalParentClass(parent=dh.EdgeClass(destinationUrn=urn) if urn else None)

    assert facts(STG, parent(contract)).edges == {(Rel.SIBLING, STG, contract)}
    physical, logical = col(STG, "amt"), col(contract, "amount")
    assert facts(physical, parent(logical)).edges == {
        (Rel.COLUMN, physical, logical),
        (Rel.COLUMN, logical, physical),
        (Rel.COVERED, STG, contract),
        (Rel.COVERED, contract, STG),
    }
    assert (Rel.COLUMN, physical, col(contract, "amt")) in facts(physical, parent(contract)).edges
    assert facts(STG, parent(None)).edges == frozenset()
    with pytest.raises(DecodeError, match="logical parent of a dataset must be a dataset"):
        facts(STG, parent(logical))
    assert "logicalParent" in LINEAGE_ASPECTS


@pytest.mark.parametrize(
    ("test", "column", "expected_fields", "dimension"),
    [
        ("not_null", "order_id", {"order_id"}, "completeness"),
        ("relationships", "customer_id", {"customer_id"}, "referential integrity"),
        ("unique", None, set(), "uniqueness"),
    ],
)
def test_dbt_custom_assertion_names_its_dataset_and_column(
    test: str, column: str | None, expected_fields: set[str], dimension: str
) -> None:
    fields = [make_schema_field_urn(DBT, column)] if column else []
    scope = "DATASET_COLUMN" if column else "DATASET_ROWS"
    info = _make_custom_assertion_info(
        entity_urn=DBT, scope=scope, operator="_NATIVE_", aggregation="_NATIVE_", fields=fields, native_type=test
    )
    aspect = dh.AssertionInfoClass(type="CUSTOM", customAssertion=info)
    expected = {(Rel.ASSERTS, ASSERTION, DBT)} | {(Rel.ASSERTS_COLUMN, ASSERTION, col(DBT, f)) for f in expected_fields}
    attrs = {Attr.ASSERTION_TYPE: "CUSTOM", Attr.ASSERTION_DIMENSION: dimension}
    assert facts(ASSERTION, aspect) == Facts.of(expected, attrs)


def test_dbt_column_test_without_fields_falls_back_to_native_column_name() -> None:
    info = dh.CustomAssertionInfoClass(type="dbt", entity=DBT, nativeParameters={"column_name": "Amount"})
    assert facts(ASSERTION, dh.AssertionInfoClass(type="CUSTOM", customAssertion=info)).edges == {
        (Rel.ASSERTS, ASSERTION, DBT),
        (Rel.ASSERTS_COLUMN, ASSERTION, col(DBT, "Amount")),
    }


def test_older_dbt_dataset_assertion_fields() -> None:
    aspect = dh.AssertionInfoClass(
        type="DATASET",
        datasetAssertion=dh.DatasetAssertionInfoClass(
            dataset=STG, scope="DATASET_COLUMN", operator="NOT_NULL", fields=[col(STG, "a"), col(STG, "b")]
        ),
    )
    assert facts(ASSERTION, aspect).edges == {
        (Rel.ASSERTS, ASSERTION, STG),
        (Rel.ASSERTS_COLUMN, ASSERTION, col(STG, "a")),
        (Rel.ASSERTS_COLUMN, ASSERTION, col(STG, "b")),
    }


def test_field_assertion_paths_become_columns() -> None:
    values = dh.FieldValuesAssertionClass(
        field=dh.SchemaFieldSpecClass(
            path="[version=2.0].[type=Order].[type=double].total", type="NUMBER", nativeType="d"
        ),
        operator="NOT_NULL",
        failThreshold=dh.FieldValuesFailThresholdClass(type="COUNT", value=0),
        excludeNulls=False,
    )
    aspect = dh.AssertionInfoClass(
        type="FIELD",
        fieldAssertion=dh.FieldAssertionInfoClass(type="FIELD_VALUES", entity=STG, fieldValuesAssertion=values),
    )
    assert facts(ASSERTION, aspect).edges == {
        (Rel.ASSERTS, ASSERTION, STG),
        (Rel.ASSERTS_COLUMN, ASSERTION, col(STG, "total")),
    }


def test_freshness_assertion_covers_its_dataset() -> None:
    schedule = dh.FreshnessAssertionScheduleClass(
        type="FIXED_INTERVAL", fixedInterval=dh.FixedIntervalScheduleClass("DAY", 1)
    )
    aspect = dh.AssertionInfoClass(
        type="FRESHNESS",
        freshnessAssertion=dh.FreshnessAssertionInfoClass(type="DATASET_CHANGE", entity=RAW, schedule=schedule),
    )
    attrs = {Attr.ASSERTION_TYPE: "FRESHNESS", Attr.ASSERTION_DIMENSION: "freshness"}
    assert facts(ASSERTION, aspect) == Facts.of({(Rel.ASSERTS, ASSERTION, RAW)}, attrs)


def test_assertion_without_a_target_is_poison() -> None:
    with pytest.raises(Poison, match="names no dataset"):
        facts(ASSERTION, dh.AssertionInfoClass(type="CUSTOM"))


def test_assertion_falls_back_to_entity_urn() -> None:
    aspect = dh.AssertionInfoClass(type="SQL", entityUrn=RAW)
    assert facts(ASSERTION, aspect).edges == {(Rel.ASSERTS, ASSERTION, RAW)}


def test_status_and_deprecation_are_flags() -> None:
    assert facts(RAW, dh.StatusClass(removed=True)) == Facts.of(attrs={Attr.REMOVED: "true"})
    assert facts(RAW, dh.StatusClass(removed=False)) == Facts.of()
    deprecated = dh.DeprecationClass(deprecated=True, note="", actor="urn:li:corpuser:x", decommissionTime=99)
    assert facts(RAW, deprecated) == Facts.of(attrs={Attr.DEPRECATED: "true", Attr.DECOMMISSION_MS: "99"})
    assert facts(RAW, dh.DeprecationClass(deprecated=False, note="", actor="urn:li:corpuser:x")) == Facts.of()


def test_status_of_entities_outside_the_index_is_ignored() -> None:
    assert lineage_update("urn:li:corpuser:jdoe", "status", "UPSERT", {"removed": True}, STAMP) is None


def test_non_lineage_aspects_are_ignored() -> None:
    assert lineage_update(RAW, "globalTags", "UPSERT", {"tags": []}, STAMP) is None


def test_delete_removes_whatever_the_aspect_was() -> None:
    assert lineage_update(STG, "upstreamLineage", "DELETE", None, STAMP) == LineageUpdate(
        STG, "upstreamLineage", STAMP, None
    )


def test_restate_carries_the_whole_value() -> None:
    aspect = wire(dh.SiblingsClass(siblings=[STG], primary=False))
    update = lineage_update(DBT, "siblings", "RESTATE", aspect, STAMP)
    assert update == LineageUpdate(DBT, "siblings", STAMP, Facts.of({(Rel.SIBLING, DBT, STG)}))


@pytest.mark.parametrize("change_type", ["PATCH", "BOGUS"])
def test_change_types_without_a_whole_value_are_poison(change_type: str) -> None:
    with pytest.raises(DecodeError, match="carries no value"):
        lineage_update(DBT, "siblings", change_type, [{"op": "add"}], STAMP)


@pytest.mark.parametrize(
    ("aspect_name", "value", "where"),
    [
        ("upstreamLineage", {"upstreams": "x"}, "upstreams: expected an array"),
        ("upstreamLineage", {"upstreams": [{"type": "COPY"}]}, r"upstreams\[0\].dataset: expected a URN"),
        ("upstreamLineage", {}, "upstreams: required array missing"),
        ("schemaMetadata", {"fields": [{"fieldPath": 3}]}, r"fields\[0\].fieldPath: expected a string"),
        ("siblings", [STG], "expected an object"),
        ("status", {"removed": "yes"}, "removed: expected a boolean"),
        ("assertionInfo", {"type": "CUSTOM", "customAssertion": {"entity": DBT, "fields": ["id"]}}, "expected a URN"),
    ],
)  # fmt: skip
def test_malformed_aspects_are_poison_naming_the_path(aspect_name: str, value: Any, where: str) -> None:
    with pytest.raises(DecodeError, match=where) as caught:
        lineage_update(STG, aspect_name, "UPSERT", value, STAMP)
    assert caught.value.reason == "aspect-shape"


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"upstreamType": "FIELD_SET", "downstreamType": "FIELD", "downstreams": [RAW]},
         r"fineGrainedLineages\[1\].downstreams\[0\]: not a schemaField URN"),
        ({"upstreamType": "SOMETHING", "downstreamType": "FIELD"}, "unknown value 'SOMETHING'"),
        ({"upstreamType": "FIELD_SET", "downstreamType": "FIELD", "downstreams": [col(STG, "id")],
          "upstreams": [col(RAW, "id"), 7]}, r"upstreams\[1\]"),
    ],
)  # fmt: skip
def test_a_malformed_fine_grained_entry_is_skipped_and_named_the_valid_ones_indexed(
    bad: dict[str, Any], where: str
) -> None:
    good = {"upstreamType": "FIELD_SET", "downstreamType": "FIELD", "upstreams": [col(RAW, "a")],
            "downstreams": [col(STG, "a")]}  # fmt: skip
    value = {"upstreams": [{"dataset": RAW}], "fineGrainedLineages": [good, bad]}
    update = lineage_update(STG, "upstreamLineage", "UPSERT", value, STAMP)
    assert update is not None and update.facts is not None
    assert (Rel.COLUMN, col(RAW, "a"), col(STG, "a")) in update.facts.edges
    assert (Rel.DATASET, RAW, STG) in update.facts.edges
    assert not any(col(RAW, "id") in edge for edge in update.facts.edges), "nothing of the bad entry"
    ((at, why),) = json.loads(update.facts.attrs[Attr.LINEAGE_INCOMPLETE])
    assert at == "fineGrainedLineages[1]" and re.search(where, why)
    clean = lineage_update(STG, "upstreamLineage", "UPSERT", {**value, "fineGrainedLineages": [good]}, STAMP)
    assert clean is not None and clean.facts is not None and Attr.LINEAGE_INCOMPLETE not in clean.facts.attrs


def test_an_entity_that_is_not_a_urn_is_poison() -> None:
    with pytest.raises(DecodeError, match="not a URN"):
        lineage_update("orders", "siblings", "UPSERT", {"siblings": []}, STAMP)


def test_stamp_prefers_the_system_version_and_the_created_time() -> None:
    assert stamp_of({"version": "4", "lastObserved": 5}, {"time": 7, "actor": "urn:li:corpuser:x"}) == Stamp(4, 7)
    assert stamp_of({"lastObserved": 5, "version": None}, None) == Stamp(None, 5)
    assert stamp_of({"version": "not-a-number"}, {"time": 9}) == Stamp(None, 9)
    assert stamp_of(None, None) == Stamp(None, 0)
