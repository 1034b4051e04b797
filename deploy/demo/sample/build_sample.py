"""Builds the bundled sample timeline (deploy/demo/sample/timeline.json) with acryl-datahub's own classes.

A small, deterministic stand-in for what DataHub's postgres, dbt and mlflow connectors emit for the retail demo:
a raw transactions table, dbt staging and feature models with column lineage and warehouse siblings, ML features
sourced from feature-table columns, two registered models with versions and training runs, dbt tests as
assertions, and their run events — passing, then failing on NULL unit prices, then passing again. On day 7, while
the incident is active, a new churn version (churn_4) is registered: the demo's step that the lineage role's live
re-evaluation catches before any test runs again.

Run: .venv/bin/python deploy/demo/sample/build_sample.py   (rewrites timeline.json; the output is committed)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from datahub.emitter.mce_builder import (
    make_assertion_urn,
    make_data_platform_urn,
    make_dataset_urn,
    make_ml_feature_urn,
    make_ml_model_group_urn,
    make_ml_model_urn,
    make_schema_field_urn,
)
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCPW
from datahub.ingestion.sink.file import write_metadata_file
from datahub.metadata.schema_classes import (
    AssertionInfoClass,
    AssertionResultClass,
    AssertionRunEventClass,
    AssertionSourceClass,
    AuditStampClass,
    CustomAssertionInfoClass,
    DataProcessInstanceInputClass,
    DataProcessInstancePropertiesClass,
    DatasetLineageTypeClass,
    FineGrainedLineageClass,
    MLFeaturePropertiesClass,
    MLModelGroupPropertiesClass,
    MLModelPropertiesClass,
    NumberTypeClass,
    OtherSchemaClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    SiblingsClass,
    StringTypeClass,
    SystemMetadataClass,
    TimeStampClass,
    UpstreamClass,
    UpstreamLineageClass,
    VersionPropertiesClass,
    VersionTagClass,
)

OUT = Path(__file__).with_name("timeline.json")
DAY = 86_400_000
T0 = 1_759_276_800_000  # 2025-10-01T00:00:00Z: the scenario's first day

RAW_COLUMNS = [
    "invoice",
    "stock_code",
    "description",
    "quantity",
    "invoice_date",
    "unit_price",
    "customer_id",
    "country",
]
NUMERIC = {"quantity", "unit_price", "line_total", "total_spend", "avg_unit_price", "order_count", "recency_days"}
# feature-table column → the staging columns it is computed from
CUSTOMER_FEATURES = {
    "customer_id": ["customer_id"],
    "total_spend": ["line_total"],
    "avg_unit_price": ["unit_price"],
    "order_count": ["invoice"],
    "recency_days": ["invoice_date"],
    "cancel_rate": ["invoice", "quantity"],
    "country_code": ["country"],
    "basket_size": ["quantity"],
}
CHURN_FEATURES = ["total_spend", "avg_unit_price", "order_count", "recency_days", "cancel_rate", "basket_size"]
LTV_FEATURES = ["order_count", "recency_days", "total_spend", "cancel_rate", "basket_size"]


def pg(name: str) -> str:
    return make_dataset_urn("postgres", f"retail.{name}")


def dbt(name: str) -> str:
    return make_dataset_urn("dbt", f"retail.{name}")


def schema(urn: str, columns: list[str], platform: str) -> MCPW:
    fields = [
        SchemaFieldClass(
            fieldPath=c,
            type=SchemaFieldDataTypeClass(type=NumberTypeClass() if c in NUMERIC else StringTypeClass()),
            nativeDataType="numeric" if c in NUMERIC else "text",
            nullable=True,
        )
        for c in columns
    ]
    name = urn.split(",")[1]
    return MCPW(
        entityUrn=urn,
        aspect=SchemaMetadataClass(
            schemaName=name,
            platform=make_data_platform_urn(platform),
            version=0,
            hash="",
            platformSchema=OtherSchemaClass(rawSchema=""),
            fields=fields,
        ),
    )


def lineage(down: str, up: str, mapping: dict[str, list[str]], kind: str = DatasetLineageTypeClass.TRANSFORMED) -> MCPW:
    fgl = [
        FineGrainedLineageClass(
            upstreamType="FIELD_SET",
            downstreamType="FIELD",
            upstreams=[make_schema_field_urn(up, c) for c in ups],
            downstreams=[make_schema_field_urn(down, col)],
        )
        for col, ups in mapping.items()
    ]
    return MCPW(
        entityUrn=down,
        aspect=UpstreamLineageClass(upstreams=[UpstreamClass(dataset=up, type=kind)], fineGrainedLineages=fgl),
    )


def guid(**parts: str) -> str:
    return hashlib.md5(json.dumps(parts, separators=(",", ":"), sort_keys=True).encode()).hexdigest()


def build() -> list[tuple[int, MCPW]]:
    out: list[tuple[int, MCPW]] = []
    add = lambda t, *ms: out.extend((t, m) for m in ms)  # noqa: E731

    raw, stg_w, stg_d, feat_w, feat_d = (
        pg("raw.transactions"),
        pg("analytics.stg_transactions"),
        dbt("analytics.stg_transactions"),
        pg("analytics.customer_features"),
        dbt("analytics.customer_features"),
    )
    stg_cols = [*RAW_COLUMNS, "line_total"]
    identity = lambda cols: {c: [c] for c in cols}  # noqa: E731
    stg_map = identity(RAW_COLUMNS) | {"line_total": ["quantity", "unit_price"]}
    add(
        T0,
        schema(raw, RAW_COLUMNS, "postgres"),
        schema(stg_w, stg_cols, "postgres"),
        schema(stg_d, stg_cols, "dbt"),
        schema(feat_w, list(CUSTOMER_FEATURES), "postgres"),
        schema(feat_d, list(CUSTOMER_FEATURES), "dbt"),
        lineage(stg_d, raw, stg_map),
        lineage(stg_w, stg_d, identity(stg_cols), DatasetLineageTypeClass.COPY),
        lineage(feat_d, stg_w, CUSTOMER_FEATURES),
        lineage(feat_w, feat_d, identity(list(CUSTOMER_FEATURES)), DatasetLineageTypeClass.COPY),
        MCPW(entityUrn=stg_w, aspect=SiblingsClass(siblings=[stg_d], primary=False)),
        MCPW(entityUrn=stg_d, aspect=SiblingsClass(siblings=[stg_w], primary=True)),
        MCPW(entityUrn=feat_w, aspect=SiblingsClass(siblings=[feat_d], primary=False)),
        MCPW(entityUrn=feat_d, aspect=SiblingsClass(siblings=[feat_w], primary=True)),
    )
    for name in sorted(set(CHURN_FEATURES) | set(LTV_FEATURES)):
        add(
            T0,
            MCPW(
                entityUrn=make_ml_feature_urn("customer_features", name),
                aspect=MLFeaturePropertiesClass(
                    description=f"customer {name}", sources=[make_schema_field_urn(feat_w, name)]
                ),
            ),
        )

    tests = {"not_null_unit_price": "unit_price", "not_null_invoice": "invoice", "unique_invoice_line": None}
    assertions = {}
    for test, column in tests.items():
        urn = make_assertion_urn(guid(platform="dbt", name=f"test.retail.{test}"))
        assertions[test] = urn
        add(
            T0,
            MCPW(
                entityUrn=urn,
                aspect=AssertionInfoClass(
                    type="CUSTOM",
                    source=AssertionSourceClass(type="EXTERNAL"),
                    customAssertion=CustomAssertionInfoClass(
                        type="dbt",
                        entity=stg_d,
                        field=make_schema_field_urn(stg_d, column) if column else None,
                        scope="DATASET_COLUMN" if column else "DATASET_ROWS",
                        nativeType=test,
                    ),
                ),
            ),
        )

    def model_version(group: str, features: list[str], version: int, trained: int) -> None:
        run = f"urn:li:dataProcessInstance:{guid(id=f'{group}-run-{version}', orchestrator='mlflow')}"
        group_urn = make_ml_model_group_urn("mlflow", group, "PROD")
        model = make_ml_model_urn("mlflow", f"{group}_{version}", "PROD")
        add(
            trained,
            MCPW(
                entityUrn=run,
                aspect=DataProcessInstancePropertiesClass(
                    name=f"{group}-run-{version}", created=AuditStampClass(time=trained, actor="urn:li:corpuser:ml")
                ),
            ),
            MCPW(entityUrn=run, aspect=DataProcessInstanceInputClass(inputs=[feat_w])),
            MCPW(
                entityUrn=group_urn,
                aspect=MLModelGroupPropertiesClass(name=group, created=TimeStampClass(time=T0)),
            ),
            MCPW(
                entityUrn=model,
                aspect=MLModelPropertiesClass(
                    name=f"{group}_{version}",
                    created=TimeStampClass(time=trained),
                    trainingJobs=[run],
                    groups=[group_urn],
                    mlFeatures=[make_ml_feature_urn("customer_features", f) for f in features],
                ),
            ),
            MCPW(
                entityUrn=model,
                aspect=VersionPropertiesClass(
                    versionSet=f"urn:li:versionSet:({guid(platform='mlflow', name=group)},mlModel)",
                    version=VersionTagClass(versionTag=str(version)),
                    sortId=str(version).zfill(10),
                ),
            ),
        )

    def run_event(test: str, when: int, passed: bool, failures: int = 0) -> None:
        result = AssertionResultClass(
            type="SUCCESS" if passed else "FAILURE",
            nativeResults=None if passed else {"failures": str(failures), "message": f"Got {failures} results"},
        )
        add(
            when,
            MCPW(
                entityUrn=assertions[test],
                aspect=AssertionRunEventClass(
                    timestampMillis=when,
                    runId=f"dbt-{when}",
                    asserteeUrn=stg_d,
                    assertionUrn=assertions[test],
                    status="COMPLETE",
                    result=result,
                ),
            ),
        )

    model_version("churn", CHURN_FEATURES, 1, T0 + 1 * DAY)
    model_version("ltv", LTV_FEATURES, 1, T0 + 1 * DAY + 3_600_000)
    for day in (2, 3, 4):
        for test in tests:
            run_event(test, T0 + day * DAY, passed=True)
    model_version("churn", CHURN_FEATURES, 2, T0 + 3 * DAY + 7_200_000)
    # Day 5: a bad load NULLs unit_price for a range of dates; the nightly churn retrain runs on it (day 5, 06:00),
    # and the tests catch it only at day 6.
    model_version("churn", CHURN_FEATURES, 3, T0 + 5 * DAY + 21_600_000)
    # The weekly LTV retrain runs while the incident is open: contaminated too.
    model_version("ltv", LTV_FEATURES, 2, T0 + 6 * DAY + 43_200_000)
    for day, failures in ((6, 48_213), (7, 48_213)):
        run_event("not_null_unit_price", T0 + day * DAY, passed=False, failures=failures)
        run_event("not_null_invoice", T0 + day * DAY, passed=True)
        run_event("unique_invoice_line", T0 + day * DAY, passed=True)
    # Day 7, 12:00: while the incident is active, a team registers a new churn version trained on the poisoned
    # features. No test runs until day 8: Pareis catches it from the lineage change alone (DESIGN §3, live
    # re-evaluation) — tagged, retrain BLOCKED, CONTAMINATED, and a ticket comment naming it.
    model_version("churn", CHURN_FEATURES, 4, T0 + 7 * DAY + 43_200_000)
    for test in tests:
        run_event(test, T0 + 8 * DAY, passed=True)
    return sorted(out, key=lambda pair: pair[0])


def main() -> None:
    records = []
    for when, mcp in build():
        mcp.systemMetadata = SystemMetadataClass(lastObserved=when, runId=f"sample-{when}")
        records.append(mcp)
    write_metadata_file(OUT, records)
    # Normalise the file so that rebuilding it changes nothing.
    OUT.write_text(json.dumps(json.loads(OUT.read_text()), indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(records)} proposals to {OUT}")


if __name__ == "__main__":
    main()
