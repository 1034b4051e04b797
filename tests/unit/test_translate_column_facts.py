"""The column metadata the test suggestions need (DESIGN §2.5): field types, primary and foreign keys
(``schemaMetadata``), the dbt node (``datasetProperties``) and the latest profile (``datasetProfile``), translated
into dataset attributes and read back from both store backends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pareis.core.graph import Attr
from pareis.datahub.translate.lineage import lineage_update
from pareis.store.lineage import LineageStore, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from tests.support.backends import Backend

ORDERS = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.public.orders,PROD)"
CUSTOMERS = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.public.customers,PROD)"


def field(path: str, kind: str) -> dict[str, Any]:
    return {"fieldPath": path, "nativeDataType": kind, "type": {"type": {f"com.linkedin.schema.{kind}": {}}}}


SCHEMA = {
    "schemaName": "orders",
    "platform": "urn:li:dataPlatform:postgres",
    "version": 0,
    "hash": "",
    "platformSchema": {"com.linkedin.schema.MySqlDDL": {"tableSchema": ""}},
    "fields": [
        field("id", "NumberType"),
        field("customer_id", "NumberType"),
        field("[version=2.0].[type=struct].address.[type=string].city", "StringType"),
        field("status", "StringType"),
    ],
    "primaryKeys": ["id"],
    "foreignKeys": [
        {
            "name": "fk_customer",
            "foreignFields": [f"urn:li:schemaField:({CUSTOMERS},id)"],
            "sourceFields": [f"urn:li:schemaField:({ORDERS},customer_id)"],
            "foreignDataset": CUSTOMERS,
        }
    ],
}
PROFILE = {
    "timestampMillis": 1_700_000_000_000,
    "rowCount": 1234,
    "columnCount": 4,
    "fieldProfiles": [
        {
            "fieldPath": "status",
            "uniqueCount": 2,
            "distinctValueFrequencies": [{"value": "paid", "frequency": 1000}, {"value": "open", "frequency": 234}],
        },
        {"fieldPath": "id", "min": "1", "max": "1234", "nullCount": 0},
    ],
}


@pytest.fixture
def store(backend: Backend) -> LineageStore:
    if backend.client is None:
        return MemoryLineageStore()
    return RedisLineageStore(backend.client)


def put(store: LineageStore, entity: str, aspect: str, value: dict[str, Any]) -> None:
    update = lineage_update(entity, aspect, "UPSERT", value, Stamp(1, 0))
    assert update is not None
    store.apply([update])


def test_schema_metadata_states_types_and_keys(store: LineageStore) -> None:
    put(store, ORDERS, "schemaMetadata", SCHEMA)
    attrs = store.attributes([ORDERS])[ORDERS]
    assert json.loads(attrs[Attr.SCHEMA_TYPES]) == {
        "id": "number",
        "customer_id": "number",
        "address.city": "string",
        "status": "string",
    }
    assert json.loads(attrs[Attr.SCHEMA_PRIMARY_KEYS]) == ["id"]
    assert json.loads(attrs[Attr.SCHEMA_FOREIGN_KEYS]) == [["customer_id", f"urn:li:schemaField:({CUSTOMERS},id)"]]


def test_a_schema_without_keys_states_no_key_attributes(store: LineageStore) -> None:
    put(store, ORDERS, "schemaMetadata", SCHEMA)
    put(store, ORDERS, "schemaMetadata", {**SCHEMA, "primaryKeys": [], "foreignKeys": []} | {"version": 1})
    attrs = store.attributes([ORDERS])[ORDERS]
    assert Attr.SCHEMA_PRIMARY_KEYS not in attrs and Attr.SCHEMA_FOREIGN_KEYS not in attrs
    assert Attr.SCHEMA_TYPES in attrs


def test_dataset_properties_name_the_dbt_node(store: LineageStore) -> None:
    node = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.public.orders,PROD)"
    put(store, node, "datasetProperties", {"customProperties": {"dbt_unique_id": "model.shop.orders"}})
    put(store, ORDERS, "datasetProperties", {"customProperties": {"owner": "x"}})
    got = store.attributes([node, ORDERS])
    assert got[node] == {Attr.DBT_UNIQUE_ID: "model.shop.orders"}
    assert got[ORDERS] == {}


def test_the_latest_profile_is_kept_per_field(store: LineageStore) -> None:
    put(store, ORDERS, "datasetProfile", PROFILE)
    profile = json.loads(store.attributes([ORDERS])[ORDERS][Attr.PROFILE])
    assert profile == {
        "time_ms": 1_700_000_000_000,
        "rows": 1234,
        "fields": {
            "status": {"unique_count": 2, "values": ["open", "paid"]},
            "id": {"min": "1", "max": "1234", "null_count": 0},
        },
    }
