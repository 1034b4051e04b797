"""The lineage role's handler and pipeline: translation into the store, idempotence, own writes, poison, errors,
and equality with the offline loader on the bundled sample."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis

from pareis.compose.decoding import changelog_decoder
from pareis.compose.ports import Verified
from pareis.compose.roles import lineage_process, role_spec
from pareis.config import DatahubSettings, KafkaSettings, Settings, Topics
from pareis.contracts.records import Message, RawMessage
from pareis.core.blast import blast_radius
from pareis.core.graph import Query, Rel
from pareis.datahub.files.metadata_file import MetadataFileError, read_proposals
from pareis.datahub.gms.emulator import ChangeLogEmulator
from pareis.datahub.translate.lineage import LINEAGE_ASPECTS
from pareis.datahub.wire.aspects import is_timeseries
from pareis.datahub.wire.changelog import ChangeLog
from pareis.datahub.wire.codec import Encoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.errors import DecodeError, Fatal, Origin, Retriable
from pareis.kafka.batch import BatchProcessor
from pareis.kafka.memory import MemoryBroker
from pareis.kafka.role import Pipeline
from pareis.lineage_loader import load_files
from pareis.replay import Replayer, proposal_clock
from pareis.roles.lineage import LineageHandler, update_of
from pareis.store.lineage import AspectRecord, Outcome, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore

SAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "sample" / "timeline.json"
UP = "urn:li:dataset:(urn:li:dataPlatform:postgres,raw.orders,PROD)"
DOWN = "urn:li:dataset:(urn:li:dataPlatform:dbt,stg.orders,PROD)"
TOPICS = {"versioned": "versioned", "timeseries": "timeseries"}


def col(ds: str, name: str) -> str:
    return f"urn:li:schemaField:({ds},{name})"


def lineage_aspect(up_col: str = "amount", down_col: str = "amount") -> dict[str, Any]:
    return {
        "upstreams": [{"dataset": UP, "type": "TRANSFORMED", "auditStamp": {"time": 0, "actor": "urn:li:corpuser:x"}}],
        "fineGrainedLineages": [
            {
                "upstreamType": "FIELD_SET",
                "downstreamType": "FIELD",
                "upstreams": [col(UP, up_col)],
                "downstreams": [col(DOWN, down_col)],
            }
        ],
    }


def change(
    aspect: Any,
    *,
    version: int = 1,
    time: int = 1_000,
    change_type: str = "UPSERT",
    entity: str | None = DOWN,
    aspect_name: str = "upstreamLineage",
    system: dict[str, Any] | None = None,
    actor: str = "urn:li:corpuser:datahub",
) -> ChangeLog:
    return ChangeLog(
        entity_type="dataset",
        entity_urn=entity,
        change_type=change_type,
        aspect_name=aspect_name,
        aspect=None if aspect is None else orjson.dumps(aspect),
        previous_aspect=None,
        system_metadata={"version": str(version), "runId": "r", **(system or {})},
        created={"time": time, "actor": actor},
        headers=None,
        schema_id=0,
    )


def batch(*changes: ChangeLog) -> list[Message[ChangeLog]]:
    return [Message("versioned", 0, i, (c.entity_urn or "").encode(), c) for i, c in enumerate(changes)]


def children(store: MemoryLineageStore, column: str) -> frozenset[str]:
    return store.lookup([Query(Rel.COLUMN, [column])])[0][column]


def test_a_batch_is_translated_and_applied_in_order() -> None:
    store = MemoryLineageStore()
    handler = LineageHandler(store, DatahubSettings())
    out = handler(batch(change(lineage_aspect()), change(lineage_aspect(down_col="total"), version=2, time=2_000)))
    assert list(out) == []
    assert children(store, col(UP, "amount")) == {col(DOWN, "total")}
    assert handler.outcomes == {Outcome.APPLIED: 2}


def test_a_redone_batch_changes_nothing() -> None:
    store = MemoryLineageStore()
    handler = LineageHandler(store, DatahubSettings())
    messages = batch(change(lineage_aspect()), change(None, change_type="DELETE", version=2, time=2_000))
    handler(messages)
    record = store.record(DOWN, "upstreamLineage")
    handler(messages)
    assert store.record(DOWN, "upstreamLineage") == record
    assert children(store, col(UP, "amount")) == frozenset()
    assert handler.outcomes == {Outcome.APPLIED: 2, Outcome.REPEATED: 1, Outcome.STALE: 1}


def test_an_older_version_arriving_late_does_not_overwrite() -> None:
    store = MemoryLineageStore()
    handler = LineageHandler(store, DatahubSettings())
    handler(batch(change(lineage_aspect(down_col="total"), version=3, time=3_000)))
    handler(batch(change(lineage_aspect(), version=2, time=2_000)))
    assert children(store, col(UP, "amount")) == {col(DOWN, "total")}


@pytest.mark.parametrize(
    "marks",
    [
        {"system": {"pipelineName": "pareis"}},
        {"system": {"properties": {"writer": "pareis"}}},
        {"actor": "urn:li:corpuser:pareis"},
    ],
    ids=["pipeline-name", "writer-property", "actor"],
)
def test_pareis_own_writes_are_ignored(marks: dict[str, Any]) -> None:
    store = MemoryLineageStore()
    handler = LineageHandler(store, DatahubSettings())
    handler(batch(change(lineage_aspect(), **marks)))
    assert store.record(DOWN, "upstreamLineage") is None
    assert handler.outcomes == {}


def test_own_marks_follow_the_settings() -> None:
    store = MemoryLineageStore()
    handler = LineageHandler(store, DatahubSettings(pipeline_name="pareis-prod"))
    handler(batch(change(lineage_aspect(), system={"pipelineName": "pareis"})))
    assert store.record(DOWN, "upstreamLineage") is not None


def test_aspects_outside_the_index_contribute_nothing() -> None:
    store = MemoryLineageStore()
    handler = LineageHandler(store, DatahubSettings())
    handler(batch(change({"description": "x"}, aspect_name="editableDatasetProperties")))
    assert handler.outcomes == {}


def test_update_of_uses_the_stamp_of_the_change() -> None:
    update = update_of(change(lineage_aspect(), version=7, time=9_000))
    assert update is not None and update.stamp == Stamp(7, 9_000)
    assert update_of(change(None, change_type="DELETE")) is not None


def test_a_malformed_aspect_is_poison_located_at_its_message_and_nothing_of_the_batch_is_written() -> None:
    store = MemoryLineageStore()
    handler = LineageHandler(store, DatahubSettings())
    good = change(lineage_aspect())
    bad = change({"upstreams": "not a list"}, entity=UP)
    messages = [Message("versioned", 0, 0, None, good), Message("versioned", 0, 1, None, _at(bad, 1))]
    with pytest.raises(DecodeError) as caught:
        handler(messages)
    assert caught.value.origin == Origin("versioned", 0, 1)
    assert store.record(DOWN, "upstreamLineage") is None


def test_an_entry_without_entity_urn_is_poison() -> None:
    with pytest.raises(DecodeError, match="without an entityUrn"):
        update_of(change(lineage_aspect(), entity=None))


def _at(c: ChangeLog, offset: int) -> ChangeLog:
    return ChangeLog(**{**{f: getattr(c, f) for f in c.__dataclass_fields__}, "origin": Origin("versioned", 0, offset)})


def test_redis_unreachable_is_retriable_for_the_handler_and_the_readiness_check() -> None:
    settings = Settings(redis_url="redis://127.0.0.1:1/0")
    pipeline = lineage_process(settings)
    try:
        with pytest.raises(Retriable):
            list(pipeline.handle(batch(change(lineage_aspect()))))
        with pytest.raises(Retriable):
            pipeline.checks["redis"]()
    finally:
        pipeline.close()


def test_a_redis_server_error_is_fatal() -> None:
    client = redis.Redis.from_url("redis://127.0.0.1:1/0")

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise redis.ResponseError("NOSCRIPT no such script")

    store = RedisLineageStore(client)
    store._redis = type("Broken", (), {"__getattr__": lambda _self, _name: broken})()
    with pytest.raises(Fatal):
        LineageHandler(store, DatahubSettings())(batch(change(lineage_aspect())))


def test_the_pipeline_decodes_only_lineage_aspects() -> None:
    pipeline = lineage_process(Settings(redis_url="redis://127.0.0.1:1/0"))
    pipeline.close()
    assert isinstance(pipeline.handle, Verified) and isinstance(pipeline.handle.handler, LineageHandler)
    assert set(pipeline.checks) == {"redis"}
    assert role_spec("lineage").process is lineage_process
    decode = pipeline.decode
    assert decode(lineage_raw("upstreamLineage")) is not None
    assert decode(lineage_raw("editableDatasetProperties")) is None, "filtered on the header"


def lineage_raw(aspect_name: str) -> RawMessage:
    record = {
        "entityType": "dataset",
        "entityUrn": DOWN,
        "changeType": "UPSERT",
        "aspectName": aspect_name,
        "aspect": {"value": orjson.dumps(lineage_aspect()), "contentType": "application/json"},
        "created": {"time": 1, "actor": "urn:li:corpuser:datahub"},
    }
    value = Encoder(VendoredSchemaSource(Settings().kafka.topics.mcl_timeseries)).encode_mcl(
        record, Settings().kafka.topics.mcl_versioned
    )
    return RawMessage("versioned", 0, 0, DOWN.encode(), value)


# --- the sample, through the real codec and runtime batch processing, equals the offline loader ---------------------
def replayed_sample() -> MemoryBroker:
    broker = MemoryBroker(partitions=3)
    replayer = Replayer(
        ChangeLogEmulator(is_timeseries),
        Encoder(VendoredSchemaSource(TOPICS["timeseries"])),
        broker,
        TOPICS,
        proposal_clock(0),
    )
    replayer.run_files([SAMPLE])
    return broker


def role_store(broker: MemoryBroker, batch_size: int, redo: bool = False) -> MemoryLineageStore:
    settings = Settings(kafka=KafkaSettings(topics=Topics(mcl_timeseries=TOPICS["timeseries"])))
    store = MemoryLineageStore()
    pipeline: Pipeline[ChangeLog] = Pipeline(
        changelog_decoder(settings, LINEAGE_ASPECTS), LineageHandler(store, settings.datahub)
    )
    processor = BatchProcessor("lineage", pipeline, "dlq")
    for partition in range(3):
        records = broker.read(TOPICS["versioned"], partition)
        raws = [RawMessage(r.topic, r.partition, r.offset, r.key, r.value) for r in records]
        for start in range(0, len(raws), batch_size):
            chunk = raws[start : start + batch_size]
            for _ in range(2 if redo else 1):
                result = processor.process(chunk)
                assert result.outputs == [], "no dead letters, no outputs"
    return store


def canonical(record: AspectRecord | None) -> str | None:
    if record is None:
        return None
    return f"{record.stamp}:{record.facts.encode() if record.facts is not None else 'deleted'}"


def snapshot(store: MemoryLineageStore) -> str:
    """Everything a reader can see of the sample's index: each (entity, aspect) record and every blast radius."""
    proposals = list(read_proposals([SAMPLE]))
    keys = sorted({(p.entity_urn, p.aspect_name) for p in proposals if p.aspect_name in LINEAGE_ASPECTS})
    records = {f"{e}|{a}": canonical(store.record(e, a)) for e, a in keys}
    assertions = sorted({p.entity_urn for p in proposals if p.aspect_name == "assertionInfo"})
    datasets = sorted({p.entity_urn for p in proposals if p.entity_type == "dataset"})
    blasts = {a: blast_radius(store, assertions=[a]).to_json() for a in assertions}
    blasts |= {d: blast_radius(store, datasets=[d]).to_json() for d in datasets}
    return json.dumps({"records": records, "blasts": blasts}, sort_keys=True)


def test_the_role_on_the_replayed_sample_equals_the_offline_loader() -> None:
    loaded = MemoryLineageStore()
    load_files(loaded, [SAMPLE])
    expected = snapshot(loaded)
    broker = replayed_sample()
    assert snapshot(role_store(broker, batch_size=500)) == expected
    assert snapshot(role_store(broker, batch_size=3, redo=True)) == expected
    assert any(m["models"] for m in json.loads(expected)["blasts"].values()), "the sample reaches models"


def test_loader_reports_runs_and_rejects_a_malformed_aspect(tmp_path: Path) -> None:
    store = MemoryLineageStore()
    loaded = load_files(store, [SAMPLE])
    assert loaded.proposals == 70 and len(loaded.runs) == 18
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            [
                {
                    "entityType": "dataset",
                    "entityUrn": DOWN,
                    "changeType": "UPSERT",
                    "aspectName": "siblings",
                    "aspect": {"json": {"siblings": ["not a urn"], "primary": True}},
                }
            ]
        )
    )
    with pytest.raises(MetadataFileError, match=r"bad\.json#0"):
        load_files(MemoryLineageStore(), [bad])


def _streamed_batch(bad_at: int, size: int) -> list[Message[ChangeLog]]:
    """``size`` upstreamLineage changes of distinct datasets, the one at ``bad_at`` malformed."""
    out = []
    for i in range(size):
        entity = f"urn:li:dataset:(urn:li:dataPlatform:dbt,stg.t{i},PROD)"
        aspect: Any = {"upstreams": "not a list"} if i == bad_at else lineage_aspect()
        out.append(Message("versioned", 0, i, None, _at(change(aspect, entity=entity), i)))
    return out


@pytest.mark.integration
def test_a_poisoned_streamed_batch_redone_singly_reports_the_outcomes_of_an_all_or_nothing_one(
    redis_client: redis.Redis,
) -> None:
    """On Redis the chunks before the malformed aspect are already written when it raises; the redo one message at
    a time (as the runtime does) finds them repeated, whose effects are due as the in-memory store's applied ones
    are (the store tells, not a memory of the failed attempt)."""
    from pareis.roles.lineage import CHUNK

    messages = _streamed_batch(CHUNK + 1, CHUNK + 4)
    first = messages[0].value.entity_urn
    assert first is not None
    seen: dict[str, dict[Outcome, int]] = {}
    for name, store in (("memory", MemoryLineageStore()), ("redis", RedisLineageStore(redis_client))):
        handler = LineageHandler(store, DatahubSettings())
        with pytest.raises(DecodeError) as caught:
            handler(messages)
        assert caught.value.origin == Origin("versioned", 0, CHUNK + 1)
        written = store.record(first, "upstreamLineage") is not None
        assert written is (name == "redis"), "Redis streams the first chunk before the poison is met"
        for message in messages:
            with contextlib.suppress(DecodeError):
                handler([message])
        seen[name] = dict(handler.outcomes)
    assert seen["memory"] == {Outcome.APPLIED: CHUNK + 3}
    assert seen["redis"] == {Outcome.REPEATED: CHUNK, Outcome.APPLIED: 3}


@pytest.mark.integration
def test_a_streamed_batch_applies_every_chunk_in_order(redis_client: redis.Redis) -> None:
    from pareis.roles.lineage import CHUNK

    messages = _streamed_batch(-1, 2 * CHUNK + 7)
    store = RedisLineageStore(redis_client)
    handler = LineageHandler(store, DatahubSettings())
    assert list(handler(messages)) == []
    assert handler.outcomes == {Outcome.APPLIED: 2 * CHUNK + 7}
    memory = MemoryLineageStore()
    LineageHandler(memory, DatahubSettings())(messages)
    for m in messages:
        entity = m.value.entity_urn
        assert entity is not None
        assert store.record(entity, "upstreamLineage") == memory.record(entity, "upstreamLineage")
    handler(messages)
    assert handler.outcomes[Outcome.REPEATED] == 2 * CHUNK + 7
