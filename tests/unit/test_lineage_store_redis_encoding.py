"""The Redis lineage store's compact encodings (pareis.store.lineage_redis): record facts and hash fields."""

from __future__ import annotations

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pareis.core.graph import Attr, Query, Rel
from pareis.store.lineage import AspectRecord, Facts, LineageUpdate, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import (
    FIELD_PREFIXES,
    RedisLineageStore,
    bucket_entries,
    bucket_of,
    decode_facts,
    encode_facts,
    field_of,
    key_of,
    node_of,
)
from pareis.store.lineage_redis_encoding import field_nodes

DS = "urn:li:dataset:(urn:li:dataPlatform:postgres,bench.schema_012.table_012345,PROD)"
UP = "urn:li:dataset:(urn:li:dataPlatform:postgres,bench.schema_012.table_004115,PROD)"
JOB = "urn:li:dataJob:(urn:li:dataFlow:(airflow,dag,prod),task)"


def col(dataset: str, name: str) -> str:
    return f"urn:li:schemaField:({dataset},{name})"


bases = st.sampled_from([DS, UP, JOB, "urn:li:mlFeature:(ns,f)", "urn:li:corpuser:x", "x", ""])
texts = st.text(st.characters(min_codepoint=0, max_codepoint=0x2FF), max_size=8)
urns = (
    bases
    | st.builds(col, bases, texts)
    | st.builds(lambda prefix, rest: prefix + rest, st.sampled_from([x for _, x in FIELD_PREFIXES]), texts)
    | texts
)


@given(urns, urns)
def test_fields_round_trip(urn: str, node: str) -> None:
    assert node_of(field_of(urn, node), node) == urn


@given(st.lists(urns, max_size=6), urns, st.booleans())
def test_a_hash_read_as_bytes_or_text_names_the_nodes_of_its_fields(listed: list[str], node: str, raw: bool) -> None:
    fields = [field_of(u, node) for u in listed]
    read: list[object] = [f.encode() for f in fields] if raw else list(fields)
    assert field_nodes(read, node) == set(listed)


@given(urns, urns)
def test_keys_are_one_to_one_and_spell_datasets_as_is(urn: str, other: str) -> None:
    assert (key_of(urn) == key_of(other)) == (urn == other)
    assert key_of(DS) == DS
    assert key_of(col(DS, "x")) == "\x02postgres,bench.schema_012.table_012345,PROD),x)"


def test_fields_of_bench_shaped_urns_fit_a_listpack() -> None:
    assert field_of(col(DS, "col_07"), DS) == "\x01col_07"
    assert len(field_of(col(UP, "col_07"), col(DS, "col_07"))) <= 64
    assert field_of("\x02odd", DS) == "\x00\x02odd"


edges = st.tuples(st.sampled_from(list(Rel)), urns, urns)
attrs = st.dictionaries(st.sampled_from(list(Attr)), texts, max_size=3)


@given(st.lists(edges, max_size=12), attrs)
def test_record_facts_round_trip_and_are_canonical(listed: list[tuple[Rel, str, str]], named: dict[Attr, str]) -> None:
    facts = Facts.of(listed, named)
    text = encode_facts(facts)
    assert decode_facts(text) == facts
    assert encode_facts(Facts.of(reversed(listed), dict(reversed(list(named.items()))))) == text


def test_a_column_is_stored_as_its_parent_and_path() -> None:
    text = encode_facts(Facts.of([(Rel.COLUMN, col(UP, "a"), col(DS, "a"))]))
    assert text.count("bench.schema_012") == 2
    assert "schemaField" not in text and '"a"' in text


@pytest.mark.integration
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])  # flushed per example
@given(st.lists(edges, min_size=1, max_size=6))
def test_the_script_writes_the_fields_field_of_describes(redis_url: str, listed: list[tuple[Rel, str, str]]) -> None:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    store = RedisLineageStore(client, prefix="enc:")
    store.apply([LineageUpdate(JOB, "dataJobInputOutput", Stamp(None, 1), Facts.of(listed))])
    for rel, src, dst in set(listed):
        forward = bucket_of(src)
        if forward is None:
            assert client.hget(f"enc:o:{rel}:{key_of(src)}".encode(), field_of(dst, src).encode()) == b"1"
        else:
            value = client.hget(f"enc:oc:{rel}:{key_of(forward[0])}".encode(), forward[1].encode())
            assert field_of(dst, forward[0]) in bucket_entries(value.decode())
        assert store.lookup([Query(rel, [src]), Query(rel, [dst], True)]) == [
            {src: frozenset(d for r, s, d in listed if (r, s) == (rel, src))},
            {dst: frozenset(s for r, s, d in listed if (r, d) == (rel, dst))},
        ]
    store.apply([LineageUpdate(JOB, "dataJobInputOutput", Stamp(None, 2), None)])
    assert client.keys("enc:[oi]*") == []
    client.close()


@given(st.lists(st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=6), max_size=5))
def test_bucket_entries_round_trip_the_escapes(fields: list[str]) -> None:
    escaped = "".join(
        f.replace("\x1d", "\x1d\x01").replace("\x1e", "\x1d\x02").replace("\x1f", "\x1d\x03") + "\x1e" for f in fields
    )
    assert bucket_entries(escaped) == fields


@pytest.mark.integration
def test_records_and_edge_hashes_stay_compact(redis_client: redis.Redis) -> None:
    store = RedisLineageStore(redis_client, prefix="enc:")
    lineage = Facts.of([(Rel.COLUMN, col(UP, f"col_{j:02d}"), col(DS, f"col_{j:02d}")) for j in range(22)])
    schema = Facts.of([(Rel.HAS_COLUMN, DS, col(DS, f"col_{j:02d}")) for j in range(22)])
    store.apply(
        [
            LineageUpdate(DS, "upstreamLineage", Stamp(1, 5), lineage),
            LineageUpdate(DS, "schemaMetadata", Stamp(1, 5), schema),
        ]
    )
    assert store.record(DS, "upstreamLineage") == AspectRecord(Stamp(1, 5), lineage)
    assert redis_client.type(f"enc:r:upstreamLineage|{DS}") == b"string"
    for key in (f"o:has_column:{DS}", f"ic:column:{DS}", f"oc:column:{UP}"):
        assert redis_client.object("encoding", f"enc:{key}") == b"listpack", key
    assert redis_client.keys("enc:i*:has_column:*") == []
    assert redis_client.keys("enc:[oi]:column:*") == []  # one bucket per dataset, not one hash per column
    assert store.lookup([Query(Rel.HAS_COLUMN, [col(DS, "col_03"), col(UP, "col_03")], True)]) == [
        {col(DS, "col_03"): frozenset({DS}), col(UP, "col_03"): frozenset()}
    ]


# Few, collision-prone nodes: columns of columns, separators and escapes in paths, so edges share buckets.
tricky_paths = st.text(st.sampled_from("a,)\x1d\x1e\x1f\x01"), max_size=3)
tricky_bases = st.sampled_from([DS, UP, "x", "", "\x02odd"])
tricky_columns = st.builds(col, tricky_bases, tricky_paths)
tricky = tricky_bases | tricky_columns | st.builds(col, tricky_columns, tricky_paths)
tricky_edges = st.tuples(st.sampled_from([Rel.COLUMN, Rel.HAS_COLUMN, Rel.DATASET]), tricky, tricky)


@pytest.mark.integration
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(tricky_edges, max_size=8), st.lists(tricky_edges, max_size=8), attrs, attrs)
def test_a_planned_first_write_is_what_the_script_diffs_later(
    redis_url: str,
    first: list[tuple[Rel, str, str]],
    then: list[tuple[Rel, str, str]],
    a1: dict[Attr, str],
    a2: dict[Attr, str],
) -> None:
    """The first write of an aspect goes by the client's plan (encode_update), later ones by the script's own
    diff of the record: after each, and after the delete, the index is the in-memory store's."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    store, memory = RedisLineageStore(client, prefix="enc:"), MemoryLineageStore()
    nodes = sorted({n for _, s, d in first + then for n in (s, d)})
    steps = [Facts.of(first, a1), Facts.of(then, a2), None, Facts.of(then, a1)]
    for version, facts in enumerate(steps, 1):
        update = LineageUpdate(JOB, "dataJobInputOutput", Stamp(version, 1), facts)
        assert store.apply([update]) == memory.apply([update])
        queries = [Query(rel, nodes, reverse) for rel in Rel for reverse in (False, True)]
        assert store.lookup(queries) == memory.lookup(queries), version
        assert store.attributes([JOB]) == memory.attributes([JOB])
    store.apply([LineageUpdate(JOB, "dataJobInputOutput", Stamp(9, 1), None)])
    assert client.keys("enc:[oia]*") == []
    client.close()
