"""Writes the retrain-gate test scenarios (DataHub file format) next to this file:

    .venv/bin/python tests/data/gate/make_scenarios.py

``base.json`` is a small shop: ``shop.raw_orders`` (postgres) feeds ``shop.customer_features`` by column lineage
(``amount`` → ``total_amount``, ``customer_id`` → ``order_count``); two features (``total_amount`` from its column,
``order_count`` from the dataset by name); the model group ``churn`` with versions ``churn_1`` (day 1) and
``churn_2`` (day 3); four assertions (not-null on ``raw_orders.amount``, ``customer_features.total_amount`` and
``.order_count``, a dataset-level row count on ``customer_features``) passing every day at 06:00 from day 0 to
day 4; and the group ``ltv`` whose ``ltv_1`` reads ``shop.sessions.sessions`` — a dataset with table lineage but
no schema and no assertion. The gate is asked at day 4, 07:00 (``AT``).

Every other file is an overlay, loaded after ``base.json``, that makes one check change status (see the test
``tests/unit/test_cli_gate.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DAY, HOUR, MINUTE = 86_400_000, 3_600_000, 60_000
T0 = 1_759_276_800_000  # 2025-10-01T00:00:00Z
AT = T0 + 4 * DAY + 7 * HOUR

PG = "urn:li:dataPlatform:postgres"
RAW = f"urn:li:dataset:({PG},shop.raw_orders,PROD)"
FEATURES = f"urn:li:dataset:({PG},shop.customer_features,PROD)"
SESSIONS = f"urn:li:dataset:({PG},shop.sessions,PROD)"
CHURN = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
LTV = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,ltv,PROD)"


def col(dataset: str, path: str) -> str:
    return f"urn:li:schemaField:({dataset},{path})"


def feature(name: str, table: str = "customer_features") -> str:
    return f"urn:li:mlFeature:({table},{name})"


def version(name: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name},PROD)"


A_RAW_AMOUNT = "urn:li:assertion:raw-amount-not-null"
A_TOTAL = "urn:li:assertion:total-amount-not-null"
A_COUNT = "urn:li:assertion:order-count-not-null"
A_ROWS = "urn:li:assertion:customer-features-rows"


def mcp(entity_type: str, urn: str, aspect: str, value: dict[str, Any], at: int = T0) -> dict[str, Any]:
    return {
        "entityType": entity_type,
        "entityUrn": urn,
        "changeType": "UPSERT",
        "aspectName": aspect,
        "aspect": {"json": value},
        "systemMetadata": {"lastObserved": at, "runId": "gate-scenario"},
    }


def schema(name: str, fields: list[str]) -> dict[str, Any]:
    return {
        "schemaName": name,
        "platform": PG,
        "version": 0,
        "hash": "",
        "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": ""}},
        "fields": [
            {
                "fieldPath": f,
                "nullable": True,
                "nativeDataType": "text",
                "type": {"type": {"com.linkedin.schema.StringType": {}}},
            }
            for f in fields
        ],
    }


def not_null(urn: str, dataset: str, column: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"dataset": dataset, "aggregation": "IDENTITY" if column else "ROW_COUNT"}
    if column:
        body.update(scope="DATASET_COLUMN", fields=[col(dataset, column)], operator="NOT_NULL")
    else:
        body.update(
            scope="DATASET_ROWS", operator="GREATER_THAN", parameters={"value": {"type": "NUMBER", "value": "0"}}
        )
    return mcp("assertion", urn, "assertionInfo", {"type": "DATASET", "datasetAssertion": body})


def run(assertion: str, dataset: str, at: int, result: str | None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "timestampMillis": at,
        "assertionUrn": assertion,
        "asserteeUrn": dataset,
        "runId": f"run-{at}",
        "status": "COMPLETE",
        "partitionSpec": {"partition": "FULL_TABLE_SNAPSHOT", "type": "FULL_TABLE"},
    }
    if result is not None:
        event["result"] = {"type": result, **({"unexpectedCount": 12} if result == "FAILURE" else {})}
    return mcp("assertion", assertion, "assertionRunEvent", event, at)


def model(name: str, group: str, features: list[str], created: int | None, tag: str) -> dict[str, Any]:
    value: dict[str, Any] = {"name": name, "mlFeatures": features, "groups": [group], "version": {"versionTag": tag}}
    if created is not None:
        value["created"] = {"time": created, "actor": "urn:li:corpuser:mlflow"}
    return mcp("mlModel", version(name), "mlModelProperties", value)


ASSERTED = ((A_RAW_AMOUNT, RAW), (A_TOTAL, FEATURES), (A_COUNT, FEATURES), (A_ROWS, FEATURES))
CHURN_FEATURES = [feature("total_amount"), feature("order_count")]


def base() -> list[dict[str, Any]]:
    out = [
        mcp("dataset", RAW, "schemaMetadata", schema("shop.raw_orders", ["customer_id", "amount", "status"])),
        mcp(
            "dataset",
            FEATURES,
            "schemaMetadata",
            schema("shop.customer_features", ["customer_id", "total_amount", "order_count", "country"]),
        ),
        mcp(
            "dataset",
            FEATURES,
            "upstreamLineage",
            {
                "upstreams": [
                    {"dataset": RAW, "type": "TRANSFORMED", "auditStamp": {"time": T0, "actor": "urn:li:corpuser:etl"}}
                ],
                "fineGrainedLineages": [
                    {
                        "upstreamType": "FIELD_SET",
                        "downstreamType": "FIELD",
                        "upstreams": [col(RAW, "amount")],
                        "downstreams": [col(FEATURES, "total_amount")],
                    },
                    {
                        "upstreamType": "FIELD_SET",
                        "downstreamType": "FIELD",
                        "upstreams": [col(RAW, "customer_id")],
                        "downstreams": [col(FEATURES, "order_count"), col(FEATURES, "customer_id")],
                    },
                ],
            },
        ),
        mcp(
            "dataset",
            SESSIONS,
            "upstreamLineage",
            {
                "upstreams": [
                    {"dataset": RAW, "type": "TRANSFORMED", "auditStamp": {"time": T0, "actor": "urn:li:corpuser:etl"}}
                ]
            },
        ),
        mcp("mlFeature", feature("total_amount"), "mlFeatureProperties", {"sources": [col(FEATURES, "total_amount")]}),
        mcp("mlFeature", feature("order_count"), "mlFeatureProperties", {"sources": [FEATURES]}),
        mcp("mlFeature", feature("sessions", "web"), "mlFeatureProperties", {"sources": [col(SESSIONS, "sessions")]}),
        mcp("mlModelGroup", CHURN, "mlModelGroupProperties", {"name": "churn"}),
        mcp("mlModelGroup", LTV, "mlModelGroupProperties", {"name": "ltv"}),
        model("churn_1", CHURN, CHURN_FEATURES, T0 + 1 * DAY + 4 * HOUR, "1"),
        model("churn_2", CHURN, CHURN_FEATURES, T0 + 3 * DAY + 4 * HOUR, "2"),
        model("ltv_1", LTV, [feature("sessions", "web")], T0 + 3 * DAY + 5 * HOUR, "1"),
        not_null(A_RAW_AMOUNT, RAW, "amount"),
        not_null(A_TOTAL, FEATURES, "total_amount"),
        not_null(A_COUNT, FEATURES, "order_count"),
        not_null(A_ROWS, FEATURES, None),
    ]
    for day in range(5):
        for assertion, dataset in ASSERTED:
            out.append(run(assertion, dataset, T0 + day * DAY + 6 * HOUR, "SUCCESS"))
    return out


DAY4 = T0 + 4 * DAY
OVERLAYS: dict[str, list[dict[str, Any]]] = {
    # raw_orders.amount fails at 06:30 on day 4 (after its 06:00 success): an active incident reaching churn.
    "failing.json": [run(A_RAW_AMOUNT, RAW, DAY4 + 6 * HOUR + 30 * MINUTE, "FAILURE")],
    # ... and passes again at 06:45: the incident is healed (load with failing.json).
    "healed.json": [run(A_RAW_AMOUNT, RAW, DAY4 + 6 * HOUR + 45 * MINUTE, "SUCCESS")],
    # churn_3 trained at 06:10 on day 4, inside the blind window (06:00, 06:30]: CONTAMINATED.
    "contaminated.json": [model("churn_3", CHURN, CHURN_FEATURES, DAY4 + 6 * HOUR + 10 * MINUTE, "3")],
    # churn_u: a version of churn with no known training time (its verdict in an incident is UNKNOWN).
    "unknown-time.json": [model("churn_u", CHURN, CHURN_FEATURES, None, "u")],
    # The not-null test of total_amount errors at 06:30 (ERROR says nothing about the data).
    "error.json": [run(A_TOTAL, FEATURES, DAY4 + 6 * HOUR + 30 * MINUTE, "ERROR")],
    # The not-null test of order_count has an INIT run at 06:30 (defined, not evaluated).
    "init.json": [run(A_COUNT, FEATURES, DAY4 + 6 * HOUR + 30 * MINUTE, None)],
    # A new upstream assertion that never ran.
    "never-ran.json": [not_null("urn:li:assertion:customer-id-not-null", RAW, "customer_id")],
    # raw_orders deprecated.
    "deprecated.json": [
        mcp(
            "dataset",
            RAW,
            "deprecation",
            {"deprecated": True, "note": "use shop.orders_v2", "actor": "urn:li:corpuser:etl"},
        )
    ],
    # customer_features loses its total_amount column.
    "dropped-column.json": [
        mcp(
            "dataset",
            FEATURES,
            "schemaMetadata",
            schema("shop.customer_features", ["customer_id", "order_count", "country"]),
            T0 + DAY,
        )
    ],
    # orphan_1 lists an unknown feature, a feature without a source and one sourced from an unknown dataset.
    "unresolved.json": [
        mcp("mlFeature", feature("no_source", "misc"), "mlFeatureProperties", {"sources": []}),
        mcp(
            "mlFeature",
            feature("lost", "misc"),
            "mlFeatureProperties",
            {"sources": [col(f"urn:li:dataset:({PG},shop.nowhere,PROD)", "lost")]},
        ),
        mcp(
            "mlModel",
            version("orphan_1"),
            "mlModelProperties",
            {
                "name": "orphan_1",
                "mlFeatures": [
                    feature("total_amount"),
                    feature("ghost", "misc"),
                    feature("no_source", "misc"),
                    feature("lost", "misc"),
                ],
                "created": {"time": T0 + 2 * DAY, "actor": "urn:li:corpuser:mlflow"},
            },
        ),
    ],
    # bare_1 lists no features and has no training runs: nothing to evaluate.
    "featureless.json": [
        mcp("mlModel", version("bare_1"), "mlModelProperties", {"name": "bare_1", "created": {"time": T0 + DAY}})
    ],
    # customer_features is reloaded at 06:40 on day 4, after its assertions last ran (an ``operation``).
    "modified.json": [
        mcp(
            "dataset",
            FEATURES,
            "operation",
            {
                "timestampMillis": DAY4 + 6 * HOUR + 41 * MINUTE,
                "lastUpdatedTimestamp": DAY4 + 6 * HOUR + 40 * MINUTE,
                "operationType": "INSERT",
                "actor": "urn:li:corpuser:etl",
            },
            DAY4 + 6 * HOUR + 41 * MINUTE,
        )
    ],
}


def main() -> None:
    for name, proposals in {"base.json": base(), **OVERLAYS}.items():
        (HERE / name).write_text(json.dumps(proposals, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
