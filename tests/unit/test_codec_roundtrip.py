"""The codec against acryl-datahub's own Kafka path, both directions, and typed round trips of every aspect Pareis
reads or writes.

DataHub's path is reproduced with its real pieces: confluent's AvroSerializer/AvroDeserializer on the in-process
mock registry, ``to_obj(tuples=True)`` (DatahubKafkaEmitter) and ``from_obj(value, tuples=True)`` (Actions).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.mcp_patch_builder import MetadataPatchProposal
from datahub.metadata import schema_classes as sc
from datahub.metadata.schemas import getMetadataChangeProposalSchema
from datahub.specific.dataset import DatasetPatchBuilder

from pareis.datahub.wire import schemas
from pareis.datahub.wire.aspects import is_timeseries, pegasus_json, typed_aspect
from pareis.datahub.wire.codec import Decoder, Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.wire.schema_registry import RegistrySchemaSource

VERSIONED = "MetadataChangeLog_Versioned_v1"
TIMESERIES = "MetadataChangeLog_Timeseries_v1"
MCP_TOPIC = "MetadataChangeProposal_v1"
T = 1_700_000_000_000
ACTOR = "urn:li:corpuser:datahub"


def ds(name: str, platform: str = "snowflake") -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},db.s.{name},PROD)"


def col(table: str, column: str) -> str:
    return f"urn:li:schemaField:({ds(table)},{column})"


STAMP = sc.AuditStampClass(time=T, actor=ACTOR)
MODEL = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_3,PROD)"
GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
RUN = "urn:li:dataProcessInstance:0123456789abcdef0123456789abcdef"
FEATURE = "urn:li:mlFeature:(churn,tenure_days)"
ASSERTION = "urn:li:assertion:2e9117138dcc9facda66f1efd55a8cd7"


def _field(path: str, kind: Any, native: str) -> sc.SchemaFieldClass:
    return sc.SchemaFieldClass(
        fieldPath=path, type=sc.SchemaFieldDataTypeClass(type=kind), nativeDataType=native, nullable=True
    )


# (entity urn, aspect) for every aspect in the codec's contract; schemaMetadata exercises record unions.
SAMPLES: dict[str, tuple[str, Any]] = {
    "upstreamLineage": (
        ds("orders"),
        sc.UpstreamLineageClass(
            upstreams=[sc.UpstreamClass(dataset=ds("raw"), type=sc.DatasetLineageTypeClass.TRANSFORMED)],
            fineGrainedLineages=[
                sc.FineGrainedLineageClass(
                    upstreamType=sc.FineGrainedLineageUpstreamTypeClass.FIELD_SET,
                    upstreams=[col("raw", "a"), col("raw", "b")],
                    downstreamType=sc.FineGrainedLineageDownstreamTypeClass.FIELD,
                    downstreams=[col("orders", "ab")],
                    transformOperation="SQL: a || b",
                    confidenceScore=0.9,
                ),
                sc.FineGrainedLineageClass(
                    upstreamType=sc.FineGrainedLineageUpstreamTypeClass.DATASET,
                    upstreams=[ds("dim")],
                    downstreamType=sc.FineGrainedLineageDownstreamTypeClass.FIELD,
                    downstreams=[col("orders", "region")],
                ),
            ],
        ),
    ),
    "schemaMetadata": (
        ds("orders"),
        sc.SchemaMetadataClass(
            schemaName="orders",
            platform="urn:li:dataPlatform:snowflake",
            version=0,
            hash="",
            platformSchema=sc.OtherSchemaClass(rawSchema="create table orders (...)"),
            fields=[
                _field("id", sc.NumberTypeClass(), "NUMBER(38,0)"),
                _field("ab", sc.StringTypeClass(), "VARCHAR"),
                _field("at", sc.TimeTypeClass(), "TIMESTAMP_NTZ"),
                _field("flags", sc.ArrayTypeClass(nestedType=["boolean"]), "ARRAY"),
                _field("ok", sc.BooleanTypeClass(), "BOOLEAN"),
            ],
        ),
    ),
    "siblings": (ds("orders", "dbt"), sc.SiblingsClass(siblings=[ds("orders")], primary=True)),
    "dataJobInputOutput": (
        "urn:li:dataJob:(urn:li:dataFlow:(airflow,etl,prod),load_orders)",
        sc.DataJobInputOutputClass(
            inputDatasets=[ds("raw")],
            outputDatasets=[ds("orders")],
            inputDatasetEdges=[sc.EdgeClass(destinationUrn=ds("raw"), created=STAMP)],
            fineGrainedLineages=[
                sc.FineGrainedLineageClass(
                    upstreamType="FIELD_SET",
                    upstreams=[col("raw", "a")],
                    downstreamType="FIELD",
                    downstreams=[col("orders", "a")],
                )
            ],
        ),
    ),
    "mlFeatureProperties": (
        FEATURE,
        sc.MLFeaturePropertiesClass(
            description="days since signup", dataType=sc.MLFeatureDataTypeClass.CONTINUOUS, sources=[ds("orders")]
        ),
    ),
    "mlFeatureTableProperties": (
        "urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,churn)",
        sc.MLFeatureTablePropertiesClass(mlFeatures=[FEATURE], customProperties={"owner": "ml"}),
    ),
    "mlModelProperties": (
        MODEL,
        sc.MLModelPropertiesClass(
            name="churn",
            created=sc.TimeStampClass(time=T, actor=ACTOR),
            mlFeatures=[FEATURE],
            groups=[GROUP],
            trainingJobs=[RUN],
            hyperParams=[sc.MLHyperParamClass(name="lr", value="0.1")],
            hyperParameters={"lr": 0.1, "optimizer": "adam", "early_stop": True},
            tags=["k:v"],
        ),
    ),
    "mlModelGroupProperties": (
        GROUP,
        sc.MLModelGroupPropertiesClass(
            name="churn", version=sc.VersionTagClass(versionTag="3"), created=sc.TimeStampClass(time=T)
        ),
    ),
    "versionProperties": (
        MODEL,
        sc.VersionPropertiesClass(
            versionSet="urn:li:versionSet:(abc,mlModel)",
            version=sc.VersionTagClass(
                versionTag="3", metadataAttribution=sc.MetadataAttributionClass(time=T, actor=ACTOR)
            ),
            sortId="0000000003",
            aliases=[sc.VersionTagClass(versionTag="champion")],
        ),
    ),
    "dataProcessInstanceProperties": (
        RUN,
        sc.DataProcessInstancePropertiesClass(name="run-1", created=STAMP, type="BATCH_AD_HOC"),
    ),
    "dataProcessInstanceInput": (
        RUN,
        sc.DataProcessInstanceInputClass(inputs=[ds("orders")], inputEdges=[sc.EdgeClass(destinationUrn=ds("orders"))]),
    ),
    "dataProcessInstanceOutput": (
        RUN,
        sc.DataProcessInstanceOutputClass(outputs=[MODEL], outputEdges=[sc.EdgeClass(destinationUrn=MODEL)]),
    ),
    "assertionInfo": (
        ASSERTION,
        sc.AssertionInfoClass(
            type=sc.AssertionTypeClass.CUSTOM,
            customAssertion=sc.CustomAssertionInfoClass(
                type="dbt", entity=ds("orders", "dbt"), field=col("orders", "id"), operator="NOT_NULL"
            ),
            source=sc.AssertionSourceClass(type=sc.AssertionSourceTypeClass.EXTERNAL),
            customProperties={"dbt_unique_id": "test.x.not_null_orders_id"},
        ),
    ),
    "status": (ds("orders"), sc.StatusClass(removed=False)),
    "deprecation": (ds("raw"), sc.DeprecationClass(deprecated=True, note="use orders", actor=ACTOR)),
    "assertionRunEvent": (
        ASSERTION,
        sc.AssertionRunEventClass(
            timestampMillis=T,
            runId="inv-1",
            asserteeUrn=ds("orders", "dbt"),
            status=sc.AssertionRunStatusClass.COMPLETE,
            assertionUrn=ASSERTION,
            result=sc.AssertionResultClass(
                type=sc.AssertionResultTypeClass.FAILURE, severity="HIGH", nativeResults={"failures": "12"}
            ),
        ),
    ),
    "incidentInfo": (
        "urn:li:incident:pareis-0123",
        sc.IncidentInfoClass(
            type=sc.IncidentTypeClass.CUSTOM,
            customType="ML_DATA_QUALITY",
            entities=[ds("orders"), MODEL],
            status=sc.IncidentStatusClass(state=sc.IncidentStateClass.ACTIVE, lastUpdated=STAMP),
            created=STAMP,
            priority=1,
            source=sc.IncidentSourceClass(type=sc.IncidentSourceTypeClass.ASSERTION_FAILURE, sourceUrn=ASSERTION),
        ),
    ),
    "globalTags": (MODEL, sc.GlobalTagsClass(tags=[sc.TagAssociationClass(tag="urn:li:tag:pareis-at-risk")])),
    "structuredProperties": (
        MODEL,
        sc.StructuredPropertiesClass(
            properties=[
                sc.StructuredPropertyValueAssignmentClass(
                    propertyUrn="urn:li:structuredProperty:io.pareis.retrain_status", values=["BLOCKED"]
                ),
                sc.StructuredPropertyValueAssignmentClass(
                    propertyUrn="urn:li:structuredProperty:io.pareis.score", values=[61.5]
                ),
            ]
        ),
    ),
    "documentInfo": (
        "urn:li:document:pareis-postmortem-0123",
        sc.DocumentInfoClass(
            status=sc.DocumentStatusClass(state="PUBLISHED"),
            contents=sc.DocumentContentsClass(text="# Postmortem"),
            created=STAMP,
            lastModified=STAMP,
            title="Postmortem",
            relatedAssets=[sc.RelatedAssetClass(asset=ds("orders"))],
        ),
    ),
}


@pytest.fixture
def mock_registry() -> SchemaRegistryClient:
    return SchemaRegistryClient.new_client({"url": "mock://codec-tests"})


def _system_metadata() -> sc.SystemMetadataClass:
    return sc.SystemMetadataClass(lastObserved=T, runId="run-1", version="2", properties={"clientId": "pareis"})


def _datahub_mcl(urn: str, aspect: Any) -> sc.MetadataChangeLogClass:
    mcpw = MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect, systemMetadata=_system_metadata())
    mcp = mcpw.make_mcp()
    return sc.MetadataChangeLogClass(
        entityType=mcp.entityType,
        entityUrn=urn,
        changeType=sc.ChangeTypeClass.UPSERT,
        aspectName=mcp.aspectName,
        aspect=mcp.aspect,
        systemMetadata=_system_metadata(),
        created=STAMP,
    )


def test_every_listed_aspect_has_a_sample_of_its_class() -> None:
    for name, (_urn, aspect) in SAMPLES.items():
        assert aspect.get_aspect_name() == name
        assert aspect.validate(), name


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_typed_aspect_round_trips_through_an_mcl(name: str) -> None:
    urn, aspect = SAMPLES[name]
    topic = TIMESERIES if is_timeseries(name) else VERSIONED
    frame = Encoder(VendoredSchemaSource()).encode_mcl(
        mcl_record(entity_urn=urn, aspect_name=name, aspect=aspect, created=STAMP), topic
    )
    change = Decoder(VendoredSchemaSource()).decode_mcl(frame)
    assert change.aspect_name == name
    assert change.schema_id == (19 if topic == TIMESERIES else 18)
    typed = typed_aspect(name, change.aspect_json())
    assert type(typed) is type(aspect)
    assert typed == aspect
    assert typed.to_obj() == aspect.to_obj()


def test_schema_metadata_keeps_its_union_field_types() -> None:
    # Without post_json_transform, avrogen would give every field BooleanType (first union branch).
    urn, aspect = SAMPLES["schemaMetadata"]
    frame = Encoder(VendoredSchemaSource(), VERSIONED).encode_mcl(
        mcl_record(entity_urn=urn, aspect_name="schemaMetadata", aspect=aspect)
    )
    typed = typed_aspect("schemaMetadata", Decoder(VendoredSchemaSource()).decode_mcl(frame).aspect_json())
    kinds = [type(f.type.type).__name__ for f in typed.fields]
    assert kinds == ["NumberTypeClass", "StringTypeClass", "TimeTypeClass", "ArrayTypeClass", "BooleanTypeClass"]
    assert type(typed.platformSchema).__name__ == "OtherSchemaClass"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_pareis_mcl_decodes_with_datahubs_own_path(name: str, mock_registry: SchemaRegistryClient) -> None:
    urn, aspect = SAMPLES[name]
    topic = TIMESERIES if is_timeseries(name) else VERSIONED
    original = _datahub_mcl(urn, aspect)
    frame = Encoder(RegistrySchemaSource(mock_registry)).encode_mcl(
        mcl_record(entity_urn=urn, aspect_name=name, aspect=aspect, system_metadata=_system_metadata(), created=STAMP),
        topic,
    )
    value = AvroDeserializer(mock_registry, return_record_name=True)(
        frame, SerializationContext(topic, MessageField.VALUE)
    )
    decoded = sc.MetadataChangeLogClass.from_obj(value, tuples=True)
    # GMS writes compact JSON and DataHub's client json.dumps; compare the aspect by value, the rest exactly.
    assert decoded.aspect is not None and original.aspect is not None
    assert orjson.loads(decoded.aspect.value) == orjson.loads(original.aspect.value)
    decoded.aspect = original.aspect
    assert decoded == original
    wrapper = MetadataChangeProposalWrapper.try_from_mcl(sc.MetadataChangeLogClass.from_obj(value, tuples=True))
    assert isinstance(wrapper, MetadataChangeProposalWrapper)
    assert wrapper.aspect == aspect
    assert wrapper.entityUrn == urn


@pytest.mark.parametrize("name", ["upstreamLineage", "incidentInfo", "globalTags", "structuredProperties"])
def test_pareis_mcp_is_byte_identical_to_datahub_kafka_emitter(name: str, mock_registry: SchemaRegistryClient) -> None:
    urn, aspect = SAMPLES[name]
    mcpw = MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect, systemMetadata=_system_metadata())
    emitter_serializer = AvroSerializer(
        schema_str=getMetadataChangeProposalSchema(),
        schema_registry_client=mock_registry,
        to_dict=lambda m, _ctx: m.to_obj(tuples=True),
    )
    theirs = emitter_serializer(mcpw, SerializationContext(MCP_TOPIC, MessageField.VALUE))
    ours = Encoder(RegistrySchemaSource(mock_registry), MCP_TOPIC).encode_mcp(mcpw)
    assert ours == theirs
    value = AvroDeserializer(mock_registry, return_record_name=True)(
        ours, SerializationContext(MCP_TOPIC, MessageField.VALUE)
    )
    proposal = sc.MetadataChangeProposalClass.from_obj(value, tuples=True)
    assert proposal == mcpw.make_mcp()
    assert MetadataChangeProposalWrapper.try_from_mcpc(proposal) == mcpw


def test_patch_proposal_encodes_as_json_patch(mock_registry: SchemaRegistryClient) -> None:
    patch = DatasetPatchBuilder(ds("orders")).add_tag(sc.TagAssociationClass(tag="urn:li:tag:pareis-at-risk"))
    proposals = list(patch.build())
    assert proposals and isinstance(patch, MetadataPatchProposal)
    source = RegistrySchemaSource(mock_registry)
    for proposal in proposals:
        frame = Encoder(source, MCP_TOPIC).encode_mcp(proposal)
        decoded = Decoder(source).decode_mcp(frame)
        assert decoded.change_type == "PATCH"
        assert decoded.content_type == "application/json-patch+json"
        assert proposal.aspect is not None and decoded.aspect == proposal.aspect.value
        assert decoded.previous_aspect is None and decoded.created is None


@pytest.mark.parametrize("name", ["upstreamLineage", "schemaMetadata", "assertionRunEvent", "documentInfo"])
def test_datahub_emitter_bytes_decode_with_pareis(name: str, mock_registry: SchemaRegistryClient) -> None:
    urn, aspect = SAMPLES[name]
    mcpw = MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect, systemMetadata=_system_metadata())
    serializer = AvroSerializer(
        schema_str=getMetadataChangeProposalSchema(),
        schema_registry_client=mock_registry,
        to_dict=lambda m, _ctx: m.to_obj(tuples=True),
    )
    frame = serializer(mcpw, SerializationContext(MCP_TOPIC, MessageField.VALUE))
    change = Decoder(RegistrySchemaSource(mock_registry)).decode_mcp(frame)
    expected = mcpw.make_mcp()
    assert change.entity_type == expected.entityType
    assert change.entity_urn == urn
    assert change.change_type == "UPSERT"
    assert change.aspect_name == name
    assert expected.aspect is not None and change.aspect == expected.aspect.value
    assert change.content_type == "application/json"
    assert change.system_metadata is not None
    assert sc.SystemMetadataClass.from_obj(change.system_metadata) == _system_metadata()
    assert typed_aspect(name, change.aspect_json()) == aspect


def test_datahub_mcl_bytes_decode_with_pareis(mock_registry: SchemaRegistryClient) -> None:
    # An MCL serialised the way DataHub's Python side does (avrogen to_obj(tuples=True) + AvroSerializer).
    urn, aspect = SAMPLES["upstreamLineage"]
    original = _datahub_mcl(urn, aspect)
    original.previousAspectValue = sc.GenericAspectClass(value=b'{"upstreams":[]}', contentType="application/json")
    serializer = AvroSerializer(
        schema_str=schemas.text(schemas.CURRENT_FILES[schemas.MCL]),
        schema_registry_client=mock_registry,
        to_dict=lambda m, _ctx: m.to_obj(tuples=True),
    )
    frame = serializer(original, SerializationContext(VERSIONED, MessageField.VALUE))
    change = Decoder(RegistrySchemaSource(mock_registry)).decode_mcl(frame)
    assert change.header == (original.entityType, urn, "UPSERT", "upstreamLineage")
    assert original.aspect is not None and change.aspect == original.aspect.value
    assert change.previous_aspect_json() == {"upstreams": []}
    assert change.created is not None and change.system_metadata is not None
    assert sc.AuditStampClass.from_obj(change.created) == STAMP
    assert sc.SystemMetadataClass.from_obj(change.system_metadata) == _system_metadata()
    assert typed_aspect("upstreamLineage", change.aspect_json()) == aspect


def test_pegasus_json_is_what_datahub_puts_in_aspect_value() -> None:
    _urn, aspect = SAMPLES["schemaMetadata"]
    generic = MetadataChangeProposalWrapper(entityUrn=ds("orders"), aspect=aspect).make_mcp().aspect
    assert generic is not None
    assert orjson.loads(pegasus_json(aspect)) == orjson.loads(generic.value)
    assert b"com.linkedin.schema.NumberType" in pegasus_json(aspect)
