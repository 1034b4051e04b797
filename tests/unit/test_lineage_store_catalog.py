"""Typed reads of the index (pareis.core.catalog), on MLflow-shaped metadata, from memory and Redis."""

from __future__ import annotations

from typing import Any

import pytest

from pareis.core import catalog
from pareis.core.contamination import ModelVersion
from pareis.datahub.translate.lineage import lineage_update
from pareis.store.lineage import LineageStore, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from tests.support.backends import Backend

ORDERS = "urn:li:dataset:(urn:li:dataPlatform:snowflake,orders,PROD)"
AMOUNT_COL = f"urn:li:schemaField:({ORDERS},amount)"
AMOUNT = "urn:li:mlFeature:(churn,amount)"
GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
VERSION_SET = "urn:li:versionSet:(abc,mlModel)"
ASSERTION = "urn:li:assertion:nn"


def model(v: int) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_{v},PROD)"


def run(v: int) -> str:
    return f"urn:li:dataProcessInstance:run{v}"


@pytest.fixture
def store(backend: Backend) -> LineageStore:
    s: LineageStore = MemoryLineageStore() if backend.client is None else RedisLineageStore(backend.client)

    def put(entity: str, aspect: str, value: dict[str, Any]) -> None:
        update = lineage_update(entity, aspect, "UPSERT", value, Stamp(1, 0))
        assert update is not None
        s.apply([update])

    put(AMOUNT, "mlFeatureProperties", {"sources": [AMOUNT_COL]})
    put(ASSERTION, "assertionInfo", {"type": "DATASET", "datasetAssertion": {
        "dataset": ORDERS, "scope": "DATASET_COLUMN", "operator": "NOT_NULL", "fields": [AMOUNT_COL]}})  # fmt: skip
    # v1: run start known; v2: only mlModelProperties.created; v3: only versionProperties; v4: nothing
    put(run(1), "dataProcessInstanceProperties", {"name": "r1", "created": {"time": 100, "actor": "urn:li:corpuser:x"}})
    put(run(1), "dataProcessInstanceInput", {"inputs": [ORDERS]})
    put(model(1), "mlModelProperties", {"mlFeatures": [AMOUNT], "groups": [GROUP], "trainingJobs": [run(1)],
                                        "created": {"time": 150}})  # fmt: skip
    put(model(2), "mlModelProperties", {"mlFeatures": [AMOUNT], "groups": [GROUP], "created": {"time": 250}})
    tag = {"versionTag": "3", "metadataAttribution": {"time": 350}}
    put(model(3), "versionProperties", {"versionSet": VERSION_SET, "sortId": "0000000003", "version": tag})
    put(model(3), "mlModelProperties", {"groups": [GROUP], "version": {"versionTag": "ignored"}})
    put(model(4), "mlModelProperties", {"groups": [GROUP]})
    put(model(4), "status", {"removed": True})
    put(ORDERS, "deprecation", {"deprecated": True, "note": "", "actor": "urn:li:corpuser:x"})
    return s


def test_assertion_definitions(store: LineageStore) -> None:
    assert catalog.assertions(store, [ASSERTION, "urn:li:assertion:unknown"]) == {
        ASSERTION: catalog.AssertionDef(ASSERTION, (ORDERS,), (AMOUNT_COL,), "DATASET", "completeness")
    }
    assert catalog.assertions_on(store, [ORDERS]) == {ORDERS: frozenset({ASSERTION})}


def test_feature_sources_and_flags(store: LineageStore) -> None:
    assert catalog.feature_sources(store, [AMOUNT]) == {AMOUNT: frozenset({AMOUNT_COL})}
    assert catalog.flags(store, [ORDERS, model(4), model(1)]) == {
        ORDERS: catalog.Flags(removed=False, deprecated=True),
        model(4): catalog.Flags(removed=True, deprecated=False),
        model(1): catalog.Flags(removed=False, deprecated=False),
    }


def test_models_and_runs(store: LineageStore) -> None:
    info = catalog.models(store, [model(1), model(3)])
    assert info[model(1)].features == (AMOUNT,)
    assert info[model(1)].training_runs == (run(1),)
    assert info[model(1)].group == GROUP
    assert (info[model(3)].version, info[model(3)].version_sets) == ("3", (VERSION_SET,))
    assert catalog.runs(store, [run(1)]) == {run(1): catalog.RunInfo(run(1), 100, (ORDERS,), (), (model(1),))}


def test_training_time_prefers_the_run_then_created_then_the_version(store: LineageStore) -> None:
    versions = catalog.versions_by_group(store, [GROUP])
    assert versions == {
        GROUP: (
            ModelVersion(model(1), GROUP, None, 100),
            ModelVersion(model(2), GROUP, None, 250),
            ModelVersion(model(3), GROUP, "3", 350),
            ModelVersion(model(4), GROUP, None, None),
        )
    }
