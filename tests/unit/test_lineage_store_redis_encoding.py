"""The Redis lineage store's layout (pareis.store.lineage_redis, layout 3): spellings, hash tags, record bodies, the
client's write plans, and the apply in steps (claim, other homes' moves, finalize) on standalone Redis and Redis
Cluster."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pareis.core.graph import Attr, Query, Rel
from pareis.store.lineage import AspectRecord, Facts, LineageUpdate, Outcome, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.lineage_redis_encoding import (
    FIELD_PREFIXES,
    bucket_entries,
    bucket_of,
    decode_body,
    encode_body,
    field_nodes,
    field_of,
    home_of,
    node_of,
    plan,
    spelled,
)
from pareis.store.redis_servers import Stream, key_slot, slot_of
from tests.support.backends import Backend

DS = "urn:li:dataset:(urn:li:dataPlatform:postgres,bench.schema_012.table_012345,PROD)"
UP = "urn:li:dataset:(urn:li:dataPlatform:postgres,bench.schema_012.table_004115,PROD)"
JOB = "urn:li:dataJob:(urn:li:dataFlow:(airflow,dag,prod),task)"
LINEAGE_ASPECT = "upstreamLineage"


def col(dataset: str, name: str) -> str:
    return f"urn:li:schemaField:({dataset},{name})"


bases = st.sampled_from([DS, UP, JOB, "urn:li:mlFeature:(ns,f)", "urn:li:corpuser:x", "x", "", "}x", "{y}"])
texts = st.text(st.characters(min_codepoint=0, max_codepoint=0x2FF), max_size=8)
urns = (
    bases
    | st.builds(col, bases, texts)
    | st.builds(lambda prefix, rest: prefix + rest, st.sampled_from([x for _, x in FIELD_PREFIXES]), texts)
    | texts
)


@given(urns, urns)
def test_fields_round_trip(urn: str, node: str) -> None:
    base = spelled(node)
    assert node_of(field_of(urn, node, base), node, base) == urn


@given(st.lists(urns, max_size=6), urns, st.booleans())
def test_a_hash_read_as_bytes_or_text_names_the_nodes_of_its_fields(listed: list[str], node: str, raw: bool) -> None:
    fields = [field_of(u, node, spelled(node)) for u in listed]
    read: list[object] = [f.encode() for f in fields] if raw else list(fields)
    assert field_nodes(read, node) == set(listed)


@given(urns, urns, st.sampled_from(["o:column", "ic:column", "a", "r:upstreamLineage", "m"]))
def test_spellings_are_one_to_one_and_a_nodes_keys_share_one_slot(urn: str, other: str, suffix: str) -> None:
    assert (spelled(urn) == spelled(other)) == (urn == other)
    tag = spelled(urn)
    assert tag and not tag.startswith("}")  # an empty tag would hash each whole key: the node's keys scattered
    assert key_slot(f"pareis:lineage:{{{tag}}}{suffix}") == key_slot(f"p:{{{tag}}}o:dataset") == slot_of(tag)


def test_a_bench_shaped_neighbour_is_written_from_where_it_differs() -> None:
    base = spelled(DS)
    assert base == "\x04postgres,bench.schema_012.table_012345,PROD)"
    assert field_of(col(DS, "col_07"), DS, base) == "\x01col_07"
    # the two share "\x04postgres,bench.schema_012.table_0" (34) and "5,PROD)" (7): "0411" is what differs
    assert field_of(col(UP, "col_07"), DS, base) == "\x0f" + chr(32 + 34) + chr(32 + 7) + "0411,col_07"
    assert field_of(UP, DS, base) == "\x0e" + chr(32 + 34) + chr(32 + 7) + "0411"
    assert field_of(JOB, DS, base) == "\x08airflow,dag,prod),task)"  # little shared: the abbreviated URN
    assert home_of(col(UP, "a")) == UP and home_of(JOB) == JOB


edges = st.tuples(st.sampled_from(list(Rel)), urns, urns)
attrs = st.dictionaries(st.sampled_from(list(Attr)), texts, max_size=3)


@given(st.lists(edges, max_size=12), attrs)
def test_record_bodies_round_trip_and_are_canonical(listed: list[tuple[Rel, str, str]], named: dict[Attr, str]) -> None:
    facts = Facts.of(listed, named)
    body = encode_body(facts)
    assert decode_body(body) == (facts.edges, sorted(str(a) for a in named))
    assert encode_body(Facts.of(reversed(listed), dict(reversed(list(named.items()))))) == body
    if named:
        assert encode_body(Facts.of(listed, {**named, Attr.OWNERS: "changed"})) != body  # the digest of the values


def test_a_dataset_pairs_column_edges_are_one_run_in_a_compact_record() -> None:
    pair = Facts.of([(Rel.COLUMN, col(UP, f"col_{j:02d}"), col(DS, f"col_{j:02d}")) for j in range(22)])
    body = encode_body(pair)
    assert body.endswith("\ncolumn:2,24,3,25,-20")
    assert body.count("bench.schema_012") == 2 and "schemaField" not in body
    assert len(body) < 300  # 943 bytes of JSON in layout 2


@given(st.lists(st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=6), max_size=5))
def test_bucket_entries_round_trip_the_escapes(fields: list[str]) -> None:
    escaped = "".join(
        f.replace("\x1d", "\x1d\x01").replace("\x1e", "\x1d\x02").replace("\x1f", "\x1d\x03") + "\x1e" for f in fields
    )
    assert bucket_entries(escaped) == fields


@pytest.fixture
def fresh(redis_backend: Backend) -> Callable[[], Any]:
    """A factory of the client with an empty database or cluster (for examples of one test)."""
    return redis_backend.emptied


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(edges, min_size=1, max_size=6))
def test_the_moves_write_the_fields_field_of_describes(
    fresh: Callable[[], Any], listed: list[tuple[Rel, str, str]]
) -> None:
    client = fresh()
    store = RedisLineageStore(client, prefix="enc:")
    store.apply([LineageUpdate(JOB, "dataJobInputOutput", Stamp(None, 1), Facts.of(listed))])
    for rel, src, dst in set(listed):
        forward = bucket_of(src)
        if forward is None:
            key = f"enc:{{{spelled(src)}}}o:{rel}".encode()
            assert client.hget(key, field_of(dst, src, spelled(src)).encode()) == b"1"
        else:
            value = client.hget(f"enc:{{{spelled(forward[0])}}}oc:{rel}".encode(), forward[1].encode())
            assert field_of(dst, forward[0], spelled(forward[0])) in bucket_entries(value.decode())
        assert store.lookup([Query(rel, [src]), Query(rel, [dst], True)]) == [
            {src: frozenset(d for r, s, d in listed if (r, s) == (rel, src))},
            {dst: frozenset(s for r, s, d in listed if (r, d) == (rel, dst))},
        ]
    store.apply([LineageUpdate(JOB, "dataJobInputOutput", Stamp(None, 2), None)])
    assert [k for k in client.keys("enc:*") if b"}o" in k or b"}i" in k] == []


def test_records_and_edge_hashes_stay_compact(fresh: Callable[[], Any]) -> None:
    client = fresh()
    store = RedisLineageStore(client, prefix="enc:")
    lineage = Facts.of([(Rel.COLUMN, col(UP, f"col_{j:02d}"), col(DS, f"col_{j:02d}")) for j in range(22)])
    schema = Facts.of([(Rel.HAS_COLUMN, DS, col(DS, f"col_{j:02d}")) for j in range(22)])
    store.apply(
        [
            LineageUpdate(DS, "upstreamLineage", Stamp(1, 5), lineage),
            LineageUpdate(DS, "schemaMetadata", Stamp(1, 5), schema),
            LineageUpdate(UP, "upstreamLineage", Stamp(1, 5), lineage.__class__()),  # UP's own record: none of DS's
        ]
    )
    assert store.record(DS, "upstreamLineage") == AspectRecord(Stamp(1, 5), lineage)
    assert client.type(f"enc:{{{spelled(DS)}}}r:upstreamLineage") == b"string"
    for node, suffix in ((DS, "o:has_column"), (DS, "ic:column"), (UP, "oc:column")):
        assert client.object("encoding", f"enc:{{{spelled(node)}}}{suffix}") == b"listpack", suffix
    assert [k for k in client.keys("enc:*") if b"i:has_column" in k or b"}o:column" in k] == []
    assert store.lookup([Query(Rel.HAS_COLUMN, [col(DS, "col_03"), col(UP, "col_03")], True)]) == [
        {col(DS, "col_03"): frozenset({DS}), col(UP, "col_03"): frozenset()}
    ]


# Few, collision-prone nodes: columns of columns, separators and escapes in paths, so edges share buckets.
tricky_paths = st.text(st.sampled_from("a,)\x1d\x1e\x1f\x01}{"), max_size=3)
tricky_bases = st.sampled_from([DS, UP, "x", "", "\x02odd", "}"])
tricky_columns = st.builds(col, tricky_bases, tricky_paths)
tricky = tricky_bases | tricky_columns | st.builds(col, tricky_columns, tricky_paths)
tricky_edges = st.tuples(st.sampled_from([Rel.COLUMN, Rel.HAS_COLUMN, Rel.DATASET]), tricky, tricky)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(tricky_edges, max_size=8), st.lists(tricky_edges, max_size=8), attrs, attrs)
# A column whose parent is spelled empty, read in one query with a node of its own hash: the read plan once took
# the empty parent for "no bucket" (a CI run's hypothesis found it).
@example(first=[], then=[(Rel.COLUMN, col(DS, ""), col("", ""))], a1={}, a2={})
def test_every_replacement_leaves_what_the_memory_store_has(
    fresh: Callable[[], Any],
    first: list[tuple[Rel, str, str]],
    then: list[tuple[Rel, str, str]],
    a1: dict[Attr, str],
    a2: dict[Attr, str],
) -> None:
    """A first write (planned whole on the client), a replacement (planned from the record), a delete and a write
    after the tombstone, by two entities whose edges meet: after each, the index is the in-memory store's."""
    client = fresh()
    store, memory = RedisLineageStore(client, prefix="enc:"), MemoryLineageStore()
    nodes = sorted({n for _, s, d in first + then for n in (s, d)})
    steps = [Facts.of(first, a1), Facts.of(then, a2), None, Facts.of(then, a1)]
    for version, facts in enumerate(steps, 1):
        updates = [
            LineageUpdate(JOB, "dataJobInputOutput", Stamp(version, 1), facts),
            LineageUpdate(DS, "upstreamLineage", Stamp(version, 1), facts),
        ]
        assert store.apply(updates) == memory.apply(updates)
        queries = [Query(rel, nodes, reverse) for rel in Rel for reverse in (False, True)]
        assert store.lookup(queries) == memory.lookup(queries), version
        assert store.attributes([JOB, DS]) == memory.attributes([JOB, DS])
        assert store.record(JOB, "dataJobInputOutput") == memory.record(JOB, "dataJobInputOutput")
    owners = ((JOB, "dataJobInputOutput"), (DS, LINEAGE_ASPECT))
    store.apply([LineageUpdate(e, a, Stamp(9, 1), None) for e, a in owners])
    assert [k for k in client.keys("enc:*") if b"}o" in k or b"}i" in k or k.endswith(b"}a")] == []


LINEAGE = Facts.of([(Rel.COLUMN, col(UP, f"c{j}"), col(DS, f"c{j}")) for j in range(3)] + [(Rel.DATASET, UP, DS)])


def test_an_apply_cut_short_is_finished_by_the_next_claim_of_its_record(
    fresh: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that dies after its claim, or after the other homes' moves, leaves its apply pending: the same
    update redone, or a later one, finishes it exactly once (no count doubled, none lost)."""
    memory = MemoryLineageStore()
    first = LineageUpdate(DS, "upstreamLineage", Stamp(1, 1), LINEAGE)
    later = LineageUpdate(DS, "upstreamLineage", Stamp(2, 1), Facts.of([(Rel.DATASET, UP, DS)]))
    memory.apply([first])
    nodes = [UP, DS, *(col(n, f"c{j}") for n in (UP, DS) for j in range(3))]
    queries = [Query(rel, nodes, reverse) for rel in (Rel.COLUMN, Rel.DATASET) for reverse in (False, True)]
    real = Stream.send
    for cut, redo in ((2, first), (3, first), (2, later), (3, later)):
        client = fresh()
        store = RedisLineageStore(client, prefix="enc:")
        calls = [0]

        def dying(self: Stream, commands: Any, slots: Any = None, *, at: int = cut, calls: list[int] = calls) -> int:
            calls[0] += 1
            if calls[0] == at:  # the stream's 2nd batch: the other homes' moves; its 3rd: the finalize
                raise ConnectionError("the writer died")
            return real(self, commands, slots)

        monkeypatch.setattr(Stream, "send", dying)
        with pytest.raises(ConnectionError):
            store.apply([first])
        monkeypatch.setattr(Stream, "send", real)
        assert RedisLineageStore(client, prefix="enc:").apply([redo]) == [Outcome.APPLIED]
        expected = MemoryLineageStore()
        expected.apply([first, redo])
        assert store.lookup(queries) == expected.lookup(queries), (cut, redo.stamp)
        assert store.record(DS, "upstreamLineage") == expected.record(DS, "upstreamLineage")
        assert [k for k in client.keys("enc:*") if b"}p:" in k] == []  # nothing left pending


def test_two_writers_finishing_one_apply_move_it_once(fresh: Callable[[], Any]) -> None:
    client = fresh()
    one, two = RedisLineageStore(client, prefix="enc:"), RedisLineageStore(client, prefix="enc:")
    update = LineageUpdate(DS, "upstreamLineage", Stamp(1, 1), LINEAGE)
    stream = one.stream()
    stream.send([update])
    assert two.apply([update]) == [Outcome.APPLIED]  # claims the same pending apply: a redo of it
    assert stream.finish() == [Outcome.APPLIED]
    memory = MemoryLineageStore()
    memory.apply([update])
    queries = [Query(Rel.COLUMN, [col(UP, "c0"), col(DS, "c0")]), Query(Rel.COLUMN, [col(DS, "c0")], True)]
    assert one.lookup(queries) == memory.lookup(queries)
    assert client.hget(f"enc:{{{spelled(UP)}}}oc:column".encode(), b"c0").count(b"\x1f") == 0  # counted once


@given(st.lists(edges, max_size=10))
def test_a_plan_spells_each_move_as_field_of_does(listed: list[tuple[Rel, str, str]]) -> None:
    """The plan's spellings, shared per pair of nodes, are field_of's own."""
    for home, moves in plan(JOB, None, Facts.of(listed)).items():
        base = spelled(home)
        for suffix, fields in moves.counts.items():
            rel = suffix.split(":", 1)[1]
            for field in fields:
                assert any(node_of(field, home, base) == d for r, s, d in listed if str(r) == rel and s == home) or any(
                    node_of(field, home, base) == s for r, s, d in listed if str(r) == rel and d == home
                )
        for suffix, paths in moves.buckets.items():
            for path, entries in paths.items():
                for entry in entries:
                    column = f"urn:li:schemaField:({home},{path})"
                    neighbour = node_of(bucket_entries(entry + "\x1e")[0], home, base)
                    assert any({s, d} == {column, neighbour} for _, s, d in listed), (suffix, column, neighbour)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(tricky_edges, max_size=5), min_size=2, max_size=4), st.integers(0, 3))
def test_updates_of_one_record_in_one_stream_apply_in_order(
    fresh: Callable[[], Any], versions: list[list[tuple[Rel, str, str]]], split: int
) -> None:
    """Several versions of one record in one stream, in one chunk or across chunks (each claim may find the one before
    still pending): the index ends as the memory store's after the same updates in order."""
    client = fresh()
    store, memory = RedisLineageStore(client, prefix="enc:"), MemoryLineageStore()
    updates = [LineageUpdate(DS, LINEAGE_ASPECT, Stamp(i + 1, 1), Facts.of(edges)) for i, edges in enumerate(versions)]
    stream = store.stream()
    cut = min(split, len(updates))
    stream.send(updates[:cut])
    stream.send(updates[cut:])
    assert stream.finish() == memory.apply(updates)
    nodes = sorted({n for edges in versions for _, s, d in edges for n in (s, d)})
    queries = [
        Query(rel, nodes, reverse) for rel in (Rel.COLUMN, Rel.HAS_COLUMN, Rel.DATASET) for reverse in (False, True)
    ]
    assert store.lookup(queries) == memory.lookup(queries)
    assert store.record(DS, LINEAGE_ASPECT) == memory.record(DS, LINEAGE_ASPECT)
