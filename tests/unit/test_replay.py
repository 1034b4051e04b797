"""Replay's GMS emulation: PATCH application, no-op suppression, RESTATE, DELETE, versions, routing, pacing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCPW
from datahub.emitter.serialization_helper import post_json_transform
from datahub.ingestion.sink.file import write_metadata_file
from datahub.metadata.schema_classes import (
    AssertionResultClass,
    AssertionRunEventClass,
    DatasetPropertiesClass,
    FineGrainedLineageClass,
    GlobalTagsClass,
    MetadataChangeLogClass,
    StatusClass,
    SystemMetadataClass,
    TagAssociationClass,
    UpstreamClass,
    UpstreamLineageClass,
)
from datahub.specific.dataset import DatasetPatchBuilder

from pareis.datahub.files.metadata_file import MetadataFileError, read_proposals
from pareis.datahub.gms.emulator import ChangeLogEmulator
from pareis.datahub.gms.patch import PatchError, apply_patch
from pareis.datahub.wire.aspects import is_timeseries
from pareis.datahub.wire.codec import Decoder, Encoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.kafka.memory import MemoryBroker
from pareis.replay import Replayer, proposal_clock

DS = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.public.orders,PROD)"
UP = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.stg_orders,PROD)"
ASSERTION = "urn:li:assertion:abc"
TOPICS = {"versioned": "v", "timeseries": "t"}


def field(ds: str, name: str) -> str:
    return f"urn:li:schemaField:({ds},{name})"


def write(tmp_path: Path, records: list[object]) -> Path:
    path = tmp_path / "metadata.json"
    write_metadata_file(path, records)  # type: ignore[arg-type]
    return path


def replay(tmp_path: Path, records: list[object], **kwargs: object) -> MemoryBroker:
    broker = MemoryBroker()
    source = VendoredSchemaSource("t")
    replayer = Replayer(
        ChangeLogEmulator(is_timeseries), Encoder(source), broker, TOPICS, proposal_clock(1_000), **kwargs
    )  # type: ignore[arg-type]
    replayer.run_files([write(tmp_path, records)])
    return broker


def decoded(broker: MemoryBroker, topic: str) -> list[MetadataChangeLogClass]:
    decoder = Decoder(VendoredSchemaSource("t"))
    out = []
    for record in broker.records(topic):
        assert record.value is not None
        change = decoder.decode_mcl(record.value)
        assert record.key == (change.entity_urn or "").encode()
        out.append(change)
    return out


def test_patch_with_array_primary_keys_adds_and_removes() -> None:
    add = DatasetPatchBuilder(DS).add_tag(TagAssociationClass("urn:li:tag:b")).build()[0]
    remove = DatasetPatchBuilder(DS).remove_tag("urn:li:tag:a").build()[0]
    current = {"tags": [{"tag": "urn:li:tag:a"}]}
    added = apply_patch("globalTags", current, json.loads(add.aspect.value))  # type: ignore[union-attr]
    assert [t["tag"] for t in added["tags"]] == ["urn:li:tag:a", "urn:li:tag:b"]
    removed = apply_patch("globalTags", added, json.loads(remove.aspect.value))  # type: ignore[union-attr]
    assert [t["tag"] for t in removed["tags"]] == ["urn:li:tag:b"]
    assert current == {"tags": [{"tag": "urn:li:tag:a"}]}, "the current value is never mutated"


def test_upstream_lineage_patch_follows_the_gms_template() -> None:
    fgl = FineGrainedLineageClass(
        upstreamType="FIELD_SET",
        downstreamType="FIELD",
        upstreams=[field(UP, "price"), field(UP, "qty")],
        downstreams=[field(DS, "total")],
    )
    mcps = (
        DatasetPatchBuilder(DS)
        .add_upstream_lineage(UpstreamClass(dataset=UP, type="TRANSFORMED"))
        .add_fine_grained_lineage(fgl)
        .build()
    )
    value: dict[str, object] | None = None
    for mcp in mcps:
        value = apply_patch("upstreamLineage", value, json.loads(mcp.aspect.value))  # type: ignore[union-attr]
    typed = UpstreamLineageClass.from_obj(post_json_transform(value))
    assert typed.validate()
    assert [u.dataset for u in typed.upstreams] == [UP]
    [entry] = typed.fineGrainedLineages or []
    assert sorted(entry.upstreams or []) == [field(UP, "price"), field(UP, "qty")]
    assert entry.downstreams == [field(DS, "total")]
    assert entry.upstreamType == "FIELD_SET"


def test_unsupported_patch_operation_is_a_patch_error() -> None:
    with pytest.raises(PatchError, match="move"):
        apply_patch("globalTags", None, [{"op": "move", "path": "/tags/x", "from": "/tags/y"}])


def test_routing_keys_previous_values_and_versions(tmp_path: Path) -> None:
    props1, props2 = DatasetPropertiesClass(description="one"), DatasetPropertiesClass(description="two")
    run = AssertionRunEventClass(
        timestampMillis=5,
        runId="r",
        asserteeUrn=DS,
        assertionUrn=ASSERTION,
        status="COMPLETE",
        result=AssertionResultClass(type="FAILURE"),
    )
    broker = replay(
        tmp_path,
        [
            MCPW(entityUrn=DS, aspect=props1, systemMetadata=SystemMetadataClass(lastObserved=10, runId="a")),
            MCPW(entityUrn=DS, aspect=props2, systemMetadata=SystemMetadataClass(lastObserved=20, runId="b")),
            MCPW(entityUrn=ASSERTION, aspect=run, systemMetadata=SystemMetadataClass(lastObserved=30, runId="c")),
        ],
    )
    first, second = decoded(broker, "v")
    assert (first.aspect_name, first.change_type, first.previous_aspect) == ("datasetProperties", "UPSERT", None)
    assert second.previous_aspect == first.aspect
    assert second.aspect_json()["description"] == "two"
    assert (first.system_metadata or {})["version"] == "1" and (second.system_metadata or {})["version"] == "2"
    assert (second.system_metadata or {})["runId"] == "b"
    assert (second.created or {})["time"] == 20
    [ts] = decoded(broker, "t")
    assert (ts.aspect_name, ts.entity_urn, ts.previous_aspect) == ("assertionRunEvent", ASSERTION, None)


def test_noop_writes_log_nothing_except_lineage_restate(tmp_path: Path) -> None:
    status = StatusClass(removed=False)
    lineage = UpstreamLineageClass(upstreams=[UpstreamClass(dataset=UP, type="COPY")])
    broker = replay(
        tmp_path,
        [MCPW(entityUrn=DS, aspect=a) for a in (status, status, lineage, lineage)],
    )
    changes = [(c.entity_urn, c.aspect_name, c.change_type) for c in decoded(broker, "v")]
    assert changes == [
        (DS, "status", "UPSERT"),
        (DS, "upstreamLineage", "UPSERT"),
        # GMS's sibling hook: a table whose one dbt upstream is UP is UP's sibling (written once).
        (UP, "siblings", "UPSERT"),
        (DS, "siblings", "UPSERT"),
        (DS, "upstreamLineage", "RESTATE"),
    ]


def test_delete_logs_previous_value_and_no_aspect(tmp_path: Path) -> None:
    tags = GlobalTagsClass(tags=[TagAssociationClass("urn:li:tag:x")])
    delete = MCPW(entityUrn=DS, aspect=tags, changeType="DELETE")
    broker = replay(tmp_path, [MCPW(entityUrn=DS, aspect=tags), delete])
    _, deleted = decoded(broker, "v")
    assert deleted.change_type == "DELETE" and deleted.aspect is None
    assert json.loads(deleted.previous_aspect or b"") == {"tags": [{"tag": "urn:li:tag:x"}]}


def test_patch_proposals_are_logged_as_merged_upserts(tmp_path: Path) -> None:
    tags = GlobalTagsClass(tags=[TagAssociationClass("urn:li:tag:x")])
    patch = DatasetPatchBuilder(DS).add_tag(TagAssociationClass("urn:li:tag:y")).build()
    broker = replay(tmp_path, [MCPW(entityUrn=DS, aspect=tags), *patch])
    _, merged = decoded(broker, "v")
    assert merged.change_type == "UPSERT"
    assert [t["tag"] for t in merged.aspect_json()["tags"]] == ["urn:li:tag:x", "urn:li:tag:y"]


def test_speed_paces_on_the_proposals_own_clock(tmp_path: Path) -> None:
    slept: list[float] = []
    records = [
        MCPW(entityUrn=DS, aspect=StatusClass(removed=r), systemMetadata=SystemMetadataClass(lastObserved=t))
        for r, t in ((False, 1_000), (True, 5_000), (False, 6_000))
    ]
    replay(tmp_path, records, speed=2.0, sleep=slept.append)
    assert slept == [2.0, 0.5]


def test_unreadable_files_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(MetadataFileError, match=r"bad\.json"):
        list(read_proposals([bad]))
    with pytest.raises(MetadataFileError, match="no such file"):
        list(read_proposals([tmp_path / "missing.json"]))


def test_a_folder_stands_for_its_json_files_in_name_order(tmp_path: Path) -> None:
    steps = tmp_path / "recorded"
    steps.mkdir()
    for name, removed in (("02-second.json", True), ("01-first.json", False)):
        write_metadata_file(steps / name, [MCPW(entityUrn=DS, aspect=StatusClass(removed=removed))])
    (steps / "README.md").write_text("not metadata")
    proposals = list(read_proposals([steps]))
    assert [p.aspect for p in proposals] == [{"removed": False}, {"removed": True}]
    assert proposals[0].source.endswith("01-first.json#0")
