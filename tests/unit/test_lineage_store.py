"""Contract suite of the lineage index: every implementation gives the same answers (pareis.store.lineage)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from pareis.core.graph import Attr, Outline, Query, Rel, outlines_of
from pareis.errors import Fatal, Retriable
from pareis.store import lineage_redis, redis_servers
from pareis.store.lineage import AspectRecord, Edge, Facts, LineageStore, LineageUpdate, Outcome, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.lineage_redis_encoding import spelled
from tests.support.backends import Backend


@pytest.fixture
def store(backend: Backend) -> LineageStore:
    if backend.client is None:
        return MemoryLineageStore()
    return RedisLineageStore(backend.client)


def key(node: str, suffix: str) -> str:
    """The Redis key ``suffix`` of ``node`` (layout 3, default prefix)."""
    return f"pareis:lineage:{{{spelled(node)}}}{suffix}"


A = "urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD)"
B = "urn:li:dataset:(urn:li:dataPlatform:hive,b,PROD)"
C = "urn:li:dataset:(urn:li:dataPlatform:hive,c,PROD)"
JOB = "urn:li:dataJob:(urn:li:dataFlow:(airflow,dag,prod),task)"


def col(dataset: str, name: str) -> str:
    return f"urn:li:schemaField:({dataset},{name})"


def upd(
    entity: str,
    aspect: str,
    edges: Iterable[Edge] | None = (),
    *,
    version: int | None = None,
    time: int = 0,
    attrs: Mapping[Attr, str] | None = None,
) -> LineageUpdate:
    facts = None if edges is None else Facts.of(edges, attrs)
    return LineageUpdate(entity, aspect, Stamp(version, time), facts)


def down(store: LineageStore, rel: Rel, *nodes: str) -> dict[str, frozenset[str]]:
    return dict(store.lookup([Query(rel, nodes)])[0])


def up(store: LineageStore, rel: Rel, *nodes: str) -> dict[str, frozenset[str]]:
    return dict(store.lookup([Query(rel, nodes, True)])[0])


def test_edges_are_readable_both_ways_and_every_queried_node_is_a_key(store: LineageStore) -> None:
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B), (Rel.DATASET, C, B)])])
    assert down(store, Rel.DATASET, A, C, "urn:li:dataset:nowhere") == {
        A: frozenset({B}),
        C: frozenset({B}),
        "urn:li:dataset:nowhere": frozenset(),
    }
    assert up(store, Rel.DATASET, B) == {B: frozenset({A, C})}
    assert down(store, Rel.COLUMN, A) == {A: frozenset()}


def test_one_lookup_answers_several_queries_in_order(store: LineageStore) -> None:
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B), (Rel.COLUMN, col(A, "x"), col(B, "y"))])])
    answers = store.lookup(
        [Query(Rel.COLUMN, [col(B, "y")], True), Query(Rel.DATASET, [A]), Query(Rel.DATASET, [], True)]
    )
    assert [dict(a) for a in answers] == [{col(B, "y"): frozenset({col(A, "x")})}, {A: frozenset({B})}, {}]


def test_an_update_replaces_that_aspects_edges_as_a_unit(store: LineageStore) -> None:
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=1)])
    assert store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, C, B)], version=2)]) == [Outcome.APPLIED]
    assert up(store, Rel.DATASET, B) == {B: frozenset({C})}
    assert down(store, Rel.DATASET, A) == {A: frozenset()}


def test_redelivery_is_a_no_op_reported_as_repeated(store: LineageStore) -> None:
    # REPEATED, not UNCHANGED: the redo of an attempt that applied the update must deliver its effects again.
    update = upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=3, time=30)
    assert store.apply([update, update]) == [Outcome.APPLIED, Outcome.REPEATED]
    assert store.apply([update]) == [Outcome.REPEATED]
    assert up(store, Rel.DATASET, B) == {B: frozenset({A})}
    assert store.record(B, "upstreamLineage") == AspectRecord(Stamp(3, 30), Facts.of([(Rel.DATASET, A, B)]))
    assert [o.effective for o in Outcome] == [o in (Outcome.APPLIED, Outcome.REPEATED) for o in Outcome]


def test_equal_value_under_a_newer_stamp_is_unchanged_and_keeps_the_stamp(store: LineageStore) -> None:
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=3, time=30)])
    assert store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=3, time=99)]) == [Outcome.UNCHANGED]
    assert store.record(B, "upstreamLineage") == AspectRecord(Stamp(3, 30), Facts.of([(Rel.DATASET, A, B)]))


def test_an_older_version_never_overwrites_a_newer_one(store: LineageStore) -> None:
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, C, B)], version=5, time=10)])
    # Version decides even against a later time.
    assert store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=4, time=99)]) == [Outcome.STALE]
    assert up(store, Rel.DATASET, B) == {B: frozenset({C})}


def test_without_versions_the_time_decides(store: LineageStore) -> None:
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, C, B)], time=20)])
    assert store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=9, time=19)]) == [Outcome.STALE]
    assert store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], time=20)]) == [Outcome.APPLIED]
    assert up(store, Rel.DATASET, B) == {B: frozenset({A})}


def test_a_batch_applies_in_order(store: LineageStore) -> None:
    first = upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=1)
    second = upd(B, "upstreamLineage", [(Rel.DATASET, C, B)], version=2)
    assert store.apply([second, first]) == [Outcome.APPLIED, Outcome.STALE]
    assert up(store, Rel.DATASET, B) == {B: frozenset({C})}
    assert store.apply([]) == []


def test_delete_removes_the_contribution_and_blocks_older_updates(store: LineageStore) -> None:
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=2, time=20)])
    assert store.apply([upd(B, "upstreamLineage", None, version=2, time=30)]) == [Outcome.APPLIED]
    assert up(store, Rel.DATASET, B) == {B: frozenset()}
    assert store.record(B, "upstreamLineage") == AspectRecord(Stamp(2, 30), None)
    # A late copy of the deleted value does not come back ...
    assert store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=2, time=20)]) == [Outcome.STALE]
    assert store.apply([upd(B, "upstreamLineage", None, version=2, time=30)]) == [Outcome.REPEATED]
    assert store.apply([upd(B, "upstreamLineage", None, version=2, time=31)]) == [Outcome.UNCHANGED]
    # ... but a re-creation after the delete does, even if GMS restarted its version count.
    assert store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, C, B)], version=1, time=40)]) == [Outcome.APPLIED]
    assert up(store, Rel.DATASET, B) == {B: frozenset({C})}


def test_delete_of_an_unknown_aspect_leaves_a_tombstone(store: LineageStore) -> None:
    assert store.record(B, "siblings") is None
    assert store.apply([upd(B, "siblings", None, time=50)]) == [Outcome.APPLIED]
    assert store.apply([upd(B, "siblings", [(Rel.SIBLING, B, A)], time=40)]) == [Outcome.STALE]
    assert down(store, Rel.SIBLING, B) == {B: frozenset()}


def test_an_edge_shared_by_two_aspects_lives_until_both_withdraw_it(store: LineageStore) -> None:
    edge = (Rel.COLUMN, col(A, "x"), col(B, "y"))
    store.apply([upd(B, "upstreamLineage", [edge, (Rel.DATASET, A, B)]), upd(JOB, "dataJobInputOutput", [edge])])
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], time=1)])
    assert down(store, Rel.COLUMN, col(A, "x")) == {col(A, "x"): frozenset({col(B, "y")})}
    store.apply([upd(JOB, "dataJobInputOutput", None, time=1)])
    assert down(store, Rel.COLUMN, col(A, "x")) == {col(A, "x"): frozenset()}
    assert up(store, Rel.COLUMN, col(B, "y")) == {col(B, "y"): frozenset()}


def test_attributes_follow_their_aspect(store: LineageStore) -> None:
    model = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,m_1,PROD)"
    store.apply(
        [
            upd(model, "mlModelProperties", [], attrs={Attr.MODEL_CREATED_MS: "5", Attr.MODEL_NAME: "m"}),
            upd(model, "status", [], attrs={Attr.REMOVED: "true"}),
        ]
    )
    assert store.attributes([model, A]) == {
        model: {"model.created_ms": "5", "model.name": "m", "removed": "true"},
        A: {},
    }
    store.apply([upd(model, "mlModelProperties", [], time=1, attrs={Attr.MODEL_CREATED_MS: "6"})])
    store.apply([upd(model, "status", [], time=1)])
    assert store.attributes([model]) == {model: {"model.created_ms": "6"}}
    store.apply([upd(model, "mlModelProperties", None, time=2)])
    assert store.attributes([model]) == {model: {}}


def test_one_attribute_is_read_alone_as_whole_reads_state_it(store: LineageStore) -> None:
    model = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,m_1,PROD)"
    store.apply(
        [
            upd(model, "status", [], attrs={Attr.REMOVED: "true"}),
            upd(A, "schemaMetadata", [], attrs={Attr.SCHEMA_TYPES: '{"x": "string"}'}),
        ]
    )
    nodes = [model, A, B]
    for name in (Attr.REMOVED, Attr.SCHEMA_TYPES, Attr.OWNERS):
        whole = store.attributes(nodes)
        assert store.attribute(nodes, name) == {n: whole[n].get(name) for n in nodes}
    assert store.attribute([model, B], Attr.REMOVED) == {model: "true", B: None}
    assert store.attribute([], Attr.REMOVED) == {}


WITH_COMMA = "urn:li:dataset:with,comma"  # not read whole as a column's parent: no column is spelled as its own
OUTLINED = {
    A: [col(A, n) for n in ("id", "name", "total_spend")],  # flat
    B: [col(B, n) for n in ("id", "s", "s.f", "s.g.h")],  # nested
    C: [col(C, "we%2Cird"), col(C, "[version=2.0].[type=string].v")],  # percent-encoded; a v2 path
    "urn:li:dataset:(urn:li:dataPlatform:hive,nl,PROD)": [
        col("urn:li:dataset:(urn:li:dataPlatform:hive,nl,PROD)", "a\nb"),  # a newline, flat all the same
        col("urn:li:dataset:(urn:li:dataPlatform:hive,nl,PROD)", "c\n\x01d"),
        col("urn:li:dataset:(urn:li:dataPlatform:hive,nl,PROD)", "x[0]"),  # a bracket, not a v2 path: flat too
    ],
    "urn:li:dataset:(urn:li:dataPlatform:hive,foreign,PROD)": [col(A, "id"), col(A, "x")],  # not its own
    WITH_COMMA: [col(WITH_COMMA, "id")],
}


def test_outlines_state_the_whole_schema_or_that_it_is_flat(store: LineageStore) -> None:
    store.apply([upd(d, "schemaMetadata", [(Rel.HAS_COLUMN, d, c) for c in cs]) for d, cs in OUTLINED.items()])
    nl = "urn:li:dataset:(urn:li:dataPlatform:hive,nl,PROD)"
    datasets = [*OUTLINED, "urn:li:dataset:(urn:li:dataPlatform:hive,unknown,PROD)"]
    got = store.outlines(datasets)
    assert got == outlines_of(store, datasets)  # outline_of of the whole schemas, however the store answers
    assert got[A] == Outline(3, frozenset()) and got[A].flat
    assert got[nl] == Outline(3, frozenset())  # the script unsure (a newline, a bracket), the client decided
    for d in (B, C, "urn:li:dataset:(urn:li:dataPlatform:hive,foreign,PROD)", WITH_COMMA):
        assert got[d] == Outline(len(OUTLINED[d]), frozenset(OUTLINED[d])) and not got[d].flat
    assert got["urn:li:dataset:(urn:li:dataPlatform:hive,unknown,PROD)"] == Outline(0, frozenset())
    assert store.outlines([]) == {}


def test_record_returns_the_stamp_and_facts(store: LineageStore) -> None:
    facts = Facts.of([(Rel.HAS_COLUMN, A, col(A, "x"))], {Attr.ASSERTION_TYPE: "FIELD"})
    store.apply([LineageUpdate(A, "schemaMetadata", Stamp(7, 70), facts)])
    assert store.record(A, "schemaMetadata") == AspectRecord(Stamp(7, 70), facts)
    assert store.record(A, "upstreamLineage") is None


def test_records_are_each_record_in_the_order_asked(store: LineageStore) -> None:
    facts = Facts.of([(Rel.HAS_COLUMN, A, col(A, "x"))], {Attr.ASSERTION_TYPE: "FIELD"})
    store.apply(
        [
            LineageUpdate(A, "schemaMetadata", Stamp(7, 70), facts),
            LineageUpdate(B, "schemaMetadata", Stamp(1, 10), Facts.of([(Rel.HAS_COLUMN, B, col(B, "y"))])),
            LineageUpdate(B, "schemaMetadata", Stamp(2, 20), None),
        ]
    )
    keys = [(B, "schemaMetadata"), (A, "upstreamLineage"), (A, "schemaMetadata"), (C, "schemaMetadata")]
    assert store.records(keys) == [store.record(e, a) for e, a in keys]
    assert store.records(keys) == [AspectRecord(Stamp(2, 20), None), None, AspectRecord(Stamp(7, 70), facts), None]
    assert store.records([]) == []


def test_urns_with_reserved_and_unicode_characters_round_trip(store: LineageStore) -> None:
    odd = "urn:li:dataset:(urn:li:dataPlatform:s3,bücket/a b%2C|x:y,PROD)"
    column = col(odd, "we%2Cird%28name%29 ␟ é")
    store.apply([upd(odd, "schemaMetadata", [(Rel.HAS_COLUMN, odd, column)], attrs={Attr.RUN_NAME: "ü:|"})])
    assert down(store, Rel.HAS_COLUMN, odd) == {odd: frozenset({column})}
    assert up(store, Rel.HAS_COLUMN, column) == {column: frozenset({odd})}
    assert store.attributes([odd]) == {odd: {"run.name": "ü:|"}}


def test_stores_are_independent_per_aspect_of_one_entity(store: LineageStore) -> None:
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=9)])
    assert store.apply([upd(B, "siblings", [(Rel.SIBLING, B, C)], version=1)]) == [Outcome.APPLIED]
    assert up(store, Rel.DATASET, B) == {B: frozenset({A})}
    assert down(store, Rel.SIBLING, B) == {B: frozenset({C})}


def test_unreachable_redis_is_retriable() -> None:
    client = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    with pytest.raises(Retriable):
        RedisLineageStore(client).lookup([Query(Rel.DATASET, [A])])
    with pytest.raises(Retriable):
        RedisLineageStore(client).apply([upd(B, "siblings", [])])


@pytest.mark.integration
def test_a_server_error_is_fatal(redis_client: redis.Redis) -> None:
    store = RedisLineageStore(redis_client)
    store.apply([upd(C, "siblings", [])])  # a layout-3 index
    redis_client.set(key(A, f"o:{Rel.DATASET}"), "not a hash")
    with pytest.raises(Fatal, match="WRONGTYPE"):
        store.lookup([Query(Rel.DATASET, [A])])


@pytest.mark.integration
def test_an_index_of_another_layout_is_refused_in_one_line(redis_client: redis.Redis) -> None:
    # layout 1 kept one hash per column and wrote no layout key
    redis_client.hset("pareis:lineage:i:column:\x02postgres,db.t,PROD),a)", "x", 1)
    for store in (RedisLineageStore(redis_client), RedisLineageStore(redis_client)):
        refused = r"has keys but no layout key: .* layout 1, .*; this Pareis reads layout 3"
        with pytest.raises(Fatal, match=refused) as raised:
            store.lookup([Query(Rel.DATASET, [A])])
        assert "\n" not in str(raised.value) and "pareis bootstrap" in str(raised.value)
    with pytest.raises(Fatal, match="no layout key"):
        RedisLineageStore(redis_client).apply([upd(B, "siblings", [])])
    redis_client.flushdb()
    redis_client.set("pareis:lineage:layout", "2")
    with pytest.raises(Fatal, match="has layout 2; this Pareis reads layout 3"):
        RedisLineageStore(redis_client).record(B, "siblings")


@pytest.mark.integration
def test_a_fresh_index_stamped_and_written_while_a_reader_checks_it_is_no_old_layout(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Roles starting together on an empty Redis: a reader finds no layout key, then the lineage role stamps the
    layout and writes, then the reader's scan finds keys. They are no old layout's (a writer stamps first): the
    reader reads the layout again instead of stopping with a Fatal error (a CI run saw the assertions role do so)."""
    reader = RedisLineageStore(redis_client)
    scan = redis_client.scan_iter

    def racing(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(redis_client, "scan_iter", scan)  # the writer checks with the plain client
        RedisLineageStore(redis_client).apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)])])
        return scan(*args, **kwargs)

    monkeypatch.setattr(redis_client, "scan_iter", racing)
    assert up(reader, Rel.DATASET, B) == {B: frozenset({A})}
    assert redis_client.scan_iter is scan, "the race was run"


@pytest.mark.integration
def test_a_new_index_is_stamped_with_its_layout_on_the_first_write(redis_client: redis.Redis) -> None:
    store = RedisLineageStore(redis_client)
    assert store.lookup([Query(Rel.DATASET, [A])]) == [{A: frozenset()}]
    assert redis_client.get("pareis:lineage:layout") is None  # a read writes nothing
    assert store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)])]) == [Outcome.APPLIED]
    assert redis_client.get("pareis:lineage:layout") == b"3"
    assert RedisLineageStore(redis_client).apply([upd(B, "siblings", [])]) == [Outcome.APPLIED]
    assert up(RedisLineageStore(redis_client), Rel.DATASET, B) == {B: frozenset({A})}


@pytest.mark.integration
def test_redis_store_works_with_decoded_responses(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    store = RedisLineageStore(client, prefix="decoded:")
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=1, attrs={Attr.RUN_NAME: "r"})])
    assert up(store, Rel.DATASET, B) == {B: frozenset({A})}
    assert store.attributes([B]) == {B: {"run.name": "r"}}
    assert store.record(B, "upstreamLineage") == AspectRecord(
        Stamp(1, 0), Facts.of([(Rel.DATASET, A, B)], {Attr.RUN_NAME: "r"})
    )
    client.close()


def test_entities_lists_live_records_of_an_aspect_sorted_and_drops_deleted_ones(store: LineageStore) -> None:
    weird = "urn:li:dataset:(urn:li:dataPlatform:file,a*[b]?.xlsx,PROD)"
    store.apply(
        [
            upd(C, "schemaMetadata", [(Rel.HAS_COLUMN, C, col(C, "x"))], time=1),
            upd(weird, "schemaMetadata", [], time=1),
            upd(A, "schemaMetadata", [(Rel.HAS_COLUMN, A, col(A, "x"))], time=1),
            upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], time=1),
        ]
    )
    assert store.entities("schemaMetadata") == sorted([A, C, weird])
    assert store.entities("upstreamLineage") == [B]
    assert store.entities("mlModelProperties") == []
    store.apply([upd(C, "schemaMetadata", None, time=2)])
    assert store.entities("schemaMetadata") == sorted([A, weird])


def test_ownership_is_indexed_replaced_and_deleted_like_any_aspect(store: LineageStore) -> None:
    from pareis.core.owners import decode_owners, owners_by_entity
    from pareis.datahub.translate.lineage import lineage_update

    def owned(time: int, *owners: str) -> LineageUpdate:
        aspect = {"owners": [{"owner": o, "type": "DATAOWNER"} for o in owners]}
        update = lineage_update(A, "ownership", "UPSERT", aspect, Stamp(None, time))
        assert update is not None
        return update

    user = "urn:li:corpuser:jdoe"
    email = lineage_update(user, "corpUserInfo", "UPSERT", {"active": True, "email": "jdoe@example.com"}, Stamp(1, 1))
    assert email is not None
    store.apply([owned(1, user, "urn:li:corpGroup:data"), email])
    assert decode_owners(store.attributes([A])[A].get(Attr.OWNERS)) == ("urn:li:corpGroup:data", user)
    assert [o.email for o in owners_by_entity(store, [A], {})[A]] == [None, "jdoe@example.com"]
    assert store.apply([owned(0, "urn:li:corpuser:old")]) == [Outcome.STALE]
    store.apply([owned(2, user)])
    assert decode_owners(store.attributes([A])[A].get(Attr.OWNERS)) == (user,)
    store.apply([LineageUpdate(A, "ownership", Stamp(None, 3), None)])
    assert Attr.OWNERS not in store.attributes([A])[A]


@pytest.mark.integration
def test_a_script_the_server_lost_is_loaded_again_and_the_batch_applied(redis_client: redis.Redis) -> None:
    store = RedisLineageStore(redis_client)
    store.apply([upd(C, "siblings", [])])
    redis_client.script_flush()  # as after a server restart or a failover: its script cache is empty
    assert store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)], version=1)]) == [Outcome.APPLIED]
    assert up(store, Rel.DATASET, B) == {B: frozenset({A})}


@pytest.mark.integration
def test_a_frontier_reads_its_column_buckets_in_one_script_call(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisLineageStore(redis_client)
    names = [f"c{i:02d}" for i in range(30)]
    store.apply([upd(B, "upstreamLineage", [(Rel.COLUMN, col(A, n), col(B, n)) for n in names])])
    store.apply([upd(C, "upstreamLineage", [(Rel.COLUMN, col(A, "c00"), col(C, "x"))])])
    sent: list[int] = []
    pack = redis_servers.pack_command  # what the read path packs each command with

    def counted(command: tuple[object, ...]) -> bytes:
        sent.append(1)
        return pack(command)  # type: ignore[arg-type]

    monkeypatch.setattr(redis_servers, "pack_command", counted)
    frontier = [col(A, n) for n in names] + [col(A, "nowhere"), JOB]
    got = store.lookup([Query(Rel.COLUMN, frontier), Query(Rel.COLUMN, [col(B, "c01")], True)])
    # The read script for JOB, and one call of the fields script for both buckets (A's and B's, one slot): it was one
    # HGET per column, then one HMGET per bucket.
    assert sum(sent) == 2
    assert got[0] == {
        **{col(A, n): frozenset({col(B, n)}) for n in names[1:]},
        col(A, "c00"): frozenset({col(B, "c00"), col(C, "x")}),
        col(A, "nowhere"): frozenset(),
        JOB: frozenset(),
    }
    assert got[1] == {col(B, "c01"): frozenset({col(A, "c01")})}


@pytest.mark.integration
def test_wide_buckets_and_many_fields_are_read_whole_across_calls(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bucket asked for more fields than one ``HMGET`` of the fields script takes (Lua's ``unpack`` is bounded), and
    more fields than one call takes in all (:data:`~pareis.store.lineage_redis.READ_FIELDS`, lowered here)."""
    store = RedisLineageStore(redis_client)
    wide = [f"w{i:04d}" for i in range(2500)]
    store.apply([upd(B, "upstreamLineage", [(Rel.COLUMN, col(A, n), col(B, n)) for n in wide[::2]])])
    narrow = [f"n{i}" for i in range(5)]
    other = "urn:li:dataset:(urn:li:dataPlatform:hive,other,PROD)"
    store.apply([upd(C, "upstreamLineage", [(Rel.COLUMN, col(other, n), col(C, n)) for n in narrow])])
    monkeypatch.setattr(lineage_redis, "READ_FIELDS", 7)
    got = store.lookup([Query(Rel.COLUMN, [col(A, n) for n in wide] + [col(other, n) for n in narrow])])[0]
    assert got == {
        **{col(A, n): frozenset({col(B, n)}) if i % 2 == 0 else frozenset() for i, n in enumerate(wide)},
        **{col(other, n): frozenset({col(C, n)}) for n in narrow},
    }


@pytest.mark.integration
def test_an_error_reply_is_raised_after_every_reply_is_read(redis_client: redis.Redis) -> None:
    store = RedisLineageStore(redis_client)
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, A, B)])])
    redis_client.set(key(C, f"o:{Rel.DATASET}"), "not a hash")
    with pytest.raises(Fatal, match="WRONGTYPE"):
        store.lookup([Query(Rel.DATASET, [C, A]), Query(Rel.DATASET, [B], True)])
    assert store.lookup([Query(Rel.DATASET, [A])]) == [{A: frozenset({B})}]  # the connection is in step


@pytest.mark.integration
def test_many_node_hashes_are_read_by_the_read_script_in_chunks_and_reloaded_when_lost(
    redis_client: redis.Redis,
) -> None:
    store = RedisLineageStore(redis_client)
    sources = [f"urn:li:dataset:(urn:li:dataPlatform:hive,s{i},PROD)" for i in range(2500)]
    store.apply([upd(B, "upstreamLineage", [(Rel.DATASET, s, B) for s in sources[::2]])])
    assert down(store, Rel.DATASET, *sources) == {
        s: frozenset({B}) if i % 2 == 0 else frozenset() for i, s in enumerate(sources)
    }
    store.apply([upd(s, "schemaMetadata", [(Rel.HAS_COLUMN, s, col(s, "id"))]) for s in sources[:1500]])
    outlined = store.outlines(sources)  # the outline script, in chunks too
    assert outlined == {s: Outline(1 if i < 1500 else 0, frozenset()) for i, s in enumerate(sources)}
    redis_client.script_flush()  # as after a restart: the server lacks the read scripts
    assert down(store, Rel.DATASET, sources[0], sources[1]) == {sources[0]: frozenset({B}), sources[1]: frozenset()}
    assert store.outlines(sources[1499:1501]) == {
        sources[1499]: Outline(1, frozenset()),
        sources[1500]: Outline(0, frozenset()),
    }
