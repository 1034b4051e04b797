"""ML aspects → lineage facts, in the shapes DataHub's MLflow and Feast sources write (reference §9)."""

from __future__ import annotations

from typing import Any

import datahub.metadata.schema_classes as dh
import pytest
from datahub.api.entities.dataprocess.dataprocess_instance import DataProcessInstance
from datahub.emitter.mce_builder import (
    make_dataset_urn,
    make_ml_feature_table_urn,
    make_ml_feature_urn,
    make_ml_model_group_urn,
    make_ml_model_urn,
    make_schema_field_urn,
)
from datahub.emitter.serialization_helper import pre_json_transform

from pareis.core.graph import Attr, Rel
from pareis.datahub.translate.lineage import lineage_update
from pareis.errors import DecodeError
from pareis.store.lineage import Facts, Stamp

GROUP = make_ml_model_group_urn("mlflow", "churn", "PROD")
MODEL = make_ml_model_urn("mlflow", "churn_3", "PROD")
RUN = str(DataProcessInstance(id="4f2a", orchestrator="mlflow").urn)
VERSION_SET = "urn:li:versionSet:(8d2f8a4c5e0b4e1f9a6d3c2b1a0f9e8d,mlModel)"
ORDERS = make_dataset_urn("snowflake", "analytics.orders")
AMOUNT = make_ml_feature_urn("churn_view", "amount")


def facts(entity: str, aspect: Any) -> Facts:
    update = lineage_update(entity, aspect.ASPECT_NAME, "UPSERT", pre_json_transform(aspect.to_obj()), Stamp(1, 0))
    assert update is not None and update.facts is not None
    return update.facts


def test_mlflow_model_version_properties() -> None:
    aspect = dh.MLModelPropertiesClass(
        customProperties={"stage": "prod"},
        created=dh.TimeStampClass(time=1_700_000_000_000, actor="urn:li:platformResource:alice"),
        lastModified=dh.TimeStampClass(time=1_700_000_500_000),
        hyperParams=[dh.MLHyperParamClass(name="lr", value="0.1")],
        tags=["k:v"],
        groups=[GROUP],
        trainingJobs=[RUN],
        mlFeatures=[AMOUNT],
    )
    assert facts(MODEL, aspect) == Facts.of(
        {(Rel.MODEL_GROUP, MODEL, GROUP), (Rel.TRAINS, RUN, MODEL), (Rel.FEATURE_MODEL, AMOUNT, MODEL)},
        {Attr.MODEL_CREATED_MS: "1700000000000"},
    )


def test_model_created_falls_back_to_date_and_keeps_name_and_version() -> None:
    aspect = dh.MLModelPropertiesClass(name="churn", date=42, version=dh.VersionTagClass(versionTag="3"))
    assert facts(MODEL, aspect).attrs == {
        Attr.MODEL_CREATED_MS: "42",
        Attr.MODEL_NAME: "churn",
        Attr.MODEL_VERSION: "3",
    }


def test_mlflow_version_properties() -> None:
    aspect = dh.VersionPropertiesClass(
        versionSet=VERSION_SET,
        version=dh.VersionTagClass(
            versionTag="3",
            metadataAttribution=dh.MetadataAttributionClass(time=1_700_000_000_000, actor="urn:li:corpuser:datahub"),
        ),
        sortId="3".zfill(10),
        aliases=[dh.VersionTagClass(versionTag="champion")],
    )
    assert facts(MODEL, aspect) == Facts.of(
        {(Rel.VERSION_OF, MODEL, VERSION_SET)},
        {
            Attr.VERSION_TAG: "3",
            Attr.VERSION_SORT_ID: "0000000003",
            Attr.VERSION_CREATED_MS: "1700000000000",
            Attr.VERSION_ALIASES: '["champion"]',
        },
    )


def test_version_time_prefers_the_source_then_datahub_then_attribution() -> None:
    def version(**stamps: int) -> dh.VersionPropertiesClass:
        audit = {k: dh.AuditStampClass(time=v, actor="urn:li:corpuser:x") for k, v in stamps.items()}
        tag = dh.VersionTagClass(
            versionTag="1", metadataAttribution=dh.MetadataAttributionClass(time=1, actor="urn:li:corpuser:x")
        )
        return dh.VersionPropertiesClass(versionSet=VERSION_SET, version=tag, sortId="1", **audit)

    created = Attr.VERSION_CREATED_MS
    assert facts(MODEL, version(sourceCreatedTimestamp=3, metadataCreatedTimestamp=2)).attrs[created] == "3"
    assert facts(MODEL, version(metadataCreatedTimestamp=2)).attrs[created] == "2"
    assert facts(MODEL, version()).attrs[created] == "1"


def test_version_properties_without_a_version_set_is_poison() -> None:
    with pytest.raises(DecodeError, match="versionSet: expected a URN"):
        lineage_update(
            MODEL, "versionProperties", "UPSERT", {"version": {"versionTag": "1"}, "sortId": "1"}, Stamp(1, 0)
        )


def test_mlflow_model_group_properties() -> None:
    aspect = dh.MLModelGroupPropertiesClass(
        name="churn", created=dh.TimeStampClass(time=10), version=dh.VersionTagClass(versionTag="3")
    )
    assert facts(GROUP, aspect) == Facts.of(attrs={Attr.GROUP_CREATED_MS: "10", Attr.GROUP_NAME: "churn"})
    assert facts(GROUP, dh.MLModelGroupPropertiesClass(createdAt=9)).attrs == {Attr.GROUP_CREATED_MS: "9"}


def test_mlflow_training_run() -> None:
    started = dh.DataProcessInstancePropertiesClass(
        name="bright-owl", created=dh.AuditStampClass(time=1_699_999_000_000, actor="urn:li:platformResource:abc")
    )
    assert facts(RUN, started).attrs == {Attr.RUN_STARTED_MS: "1699999000000", Attr.RUN_NAME: "bright-owl"}
    read = dh.DataProcessInstanceInputClass(inputs=[], inputEdges=[dh.EdgeClass(destinationUrn=ORDERS)])
    assert facts(RUN, read).edges == {(Rel.READS, ORDERS, RUN)}
    wrote = dh.DataProcessInstanceOutputClass(
        outputs=[make_dataset_urn("s3", "artifacts/preds")], outputEdges=[dh.EdgeClass(destinationUrn=MODEL)]
    )
    assert facts(RUN, wrote).edges == {
        (Rel.TRAINS, RUN, MODEL),
        (Rel.WRITES, RUN, make_dataset_urn("s3", "artifacts/preds")),
    }


def test_feast_feature_sources_by_dataset_or_by_column() -> None:
    by_dataset = dh.MLFeaturePropertiesClass(dataType="CONTINUOUS", sources=[ORDERS])
    assert facts(AMOUNT, by_dataset).edges == {
        (Rel.FEATURE_SOURCE, ORDERS, AMOUNT),
        (Rel.FEATURE_DATASET, ORDERS, AMOUNT),
    }
    v2_column = f"urn:li:schemaField:({ORDERS},[version=2.0].[type=Order].[type=double].amount)"
    by_column = dh.MLFeaturePropertiesClass(sources=[v2_column])
    assert facts(AMOUNT, by_column).edges == {
        (Rel.FEATURE_SOURCE, make_schema_field_urn(ORDERS, "amount"), AMOUNT),
        (Rel.FEATURE_DATASET, ORDERS, AMOUNT),
    }


def test_feature_table_lists_its_features_and_keys() -> None:
    table = make_ml_feature_table_urn("feast", "churn_view")
    key = "urn:li:mlPrimaryKey:(churn_view,id)"
    aspect = dh.MLFeatureTablePropertiesClass(mlFeatures=[AMOUNT], mlPrimaryKeys=[key])
    assert facts(table, aspect).edges == {(Rel.TABLE_FEATURE, table, AMOUNT), (Rel.TABLE_KEY, table, key)}


def test_a_primary_key_has_sources_like_a_feature() -> None:
    key = "urn:li:mlPrimaryKey:(churn_view,id)"
    aspect = dh.MLPrimaryKeyPropertiesClass(sources=[ORDERS, make_schema_field_urn(ORDERS, "id")])
    assert facts(key, aspect).edges == {
        (Rel.FEATURE_SOURCE, ORDERS, key),
        (Rel.FEATURE_SOURCE, make_schema_field_urn(ORDERS, "id"), key),
        (Rel.FEATURE_DATASET, ORDERS, key),
    }


def test_ml_shapes_are_checked() -> None:
    with pytest.raises(DecodeError, match=r"mlFeatures\[0\]: expected a URN"):
        lineage_update(MODEL, "mlModelProperties", "UPSERT", {"mlFeatures": [1]}, Stamp(1, 0))
    with pytest.raises(DecodeError, match=r"created\.time: expected an integer"):
        lineage_update(
            RUN, "dataProcessInstanceProperties", "UPSERT", {"name": "r", "created": {"time": "x"}}, Stamp(1, 0)
        )
    with pytest.raises(DecodeError, match=r"inputEdges\[0\].destinationUrn: expected a URN"):
        lineage_update(RUN, "dataProcessInstanceInput", "UPSERT", {"inputs": [], "inputEdges": [{}]}, Stamp(1, 0))


def test_deployments_and_their_status_are_kept_as_given() -> None:
    """A model's deployments are edges (the deployment may never be ingested); a deployment's status is kept as
    given, a value DataHub does not define included (:mod:`pareis.core.serving` judges it)."""
    endpoint = "urn:li:mlModelDeployment:(urn:li:dataPlatform:sagemaker,churn-endpoint,PROD)"
    assert (Rel.DEPLOYED, MODEL, endpoint) in facts(MODEL, dh.MLModelPropertiesClass(deployments=[endpoint])).edges
    status = facts(endpoint, dh.MLModelDeploymentPropertiesClass(status="IN_SERVICE"))
    assert status.attrs == {Attr.DEPLOYMENT_STATUS: "IN_SERVICE"}
    odd = lineage_update(endpoint, "mlModelDeploymentProperties", "UPSERT", {"status": "WARMING_UP"}, Stamp(1, 0))
    assert odd is not None and odd.facts is not None
    assert odd.facts.attrs == {Attr.DEPLOYMENT_STATUS: "WARMING_UP"}
