"""The translation's fast paths (pareis.datahub.translate.shape, translate) agree with the general parser."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pareis.core.fieldpath import canonical_column, column_urn, split_column
from pareis.datahub.translate.lineage import _fine_grained, _fine_grained_entry, schema_metadata
from pareis.datahub.translate.shape import Shape, canonical_parent, is_plain_path
from pareis.errors import DecodeError
from pareis.store.lineage import Edge

DS = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)"
parents = st.sampled_from(
    [
        DS,
        "urn:li:dataset:(urn:li:dataPlatform:s3,bücket/a b,PROD)",
        "urn:li:dataJob:(urn:li:dataFlow:(airflow,dag,prod),task)",
        "urn:li:chart:(looker,x)",
        "urn:li:corpuser:jdoe",
        "urn:li:dataset:(urn:li:dataPlatform:x,(a(b)c),PROD)",
    ]
)
paths = st.text(st.sampled_from("ab.,()[]%2C9␟ =version"), min_size=0, max_size=12) | st.sampled_from(
    ["[version=2.0].[type=R].a", "[version=2.0].a", "a%2Cb", "x", "col_01", "[x]"]
)


@given(parents, paths)
def test_fast_column_reading_equals_the_general_one(parent: str, path: str) -> None:
    urn = f"urn:li:schemaField:({parent},{path})"
    fast = canonical_parent(urn)
    if fast is not None:
        assert canonical_column(urn) == urn
        assert split_column(urn)[0] == fast
    try:
        expected: tuple[str, str] | None = (canonical_column(urn), split_column(urn)[0])
    except ValueError:
        expected = None
    shape = Shape("e", "a")
    if expected is None:
        assert fast is None
    else:
        assert shape.column_parts(urn, "") == expected


@given(parents, paths)
def test_plain_paths_are_their_own_canonical_spelling(parent: str, path: str) -> None:
    if is_plain_path(path):
        assert column_urn(parent, path) == f"urn:li:schemaField:({parent},{path})"


def _edges(fgl: dict[str, Any]) -> set[Edge] | str:
    shape, edges = Shape(DS, "upstreamLineage"), set[Edge]()
    try:
        _fine_grained_entry(shape, fgl, "fineGrainedLineages[0]", edges)
    except DecodeError as error:  # compared below
        return str(error)
    return edges


columns = st.builds(lambda p, f: f"urn:li:schemaField:({p},{f})", parents, paths)
urns = columns | parents


@given(
    st.sampled_from(["FIELD_SET", "DATASET", "NONE", "OTHER"]),
    st.sampled_from(["FIELD", "FIELD_SET", "OTHER"]),
    st.lists(urns, max_size=3),
    st.lists(urns | st.just(7), max_size=3),
)
def test_fine_grained_fast_path_adds_what_the_checked_reading_adds(
    up_type: str, down_type: str, ups: list[Any], downs: list[Any]
) -> None:
    fgl = {"upstreamType": up_type, "downstreamType": down_type, "upstreams": ups, "downstreams": downs}
    expected = _edges(fgl)
    shape, edges = Shape(DS, "upstreamLineage"), set[Edge]()
    bad = _fine_grained(shape, {"fineGrainedLineages": [fgl]}, edges)
    if isinstance(expected, str):  # a malformed entry: skipped (nothing of it added) and named
        assert edges == set() and len(bad) == 1
        assert bad[0][0] == "fineGrainedLineages[0]" and expected.endswith(bad[0][1])
    else:
        assert bad == [] and edges == expected


@given(st.lists(paths, max_size=5))
def test_schema_fast_path_equals_column_urn(names: list[str]) -> None:
    shape = Shape(DS, "schemaMetadata")
    try:
        facts = schema_metadata(shape, DS, {"fields": [{"fieldPath": n} for n in names]})
    except DecodeError:  # an empty path fails on both readings
        assert any(not n for n in names) or any(_fails(n) for n in names)
        return
    expected = set()
    for n in names:
        if n.startswith("[version=2.0]") and all(t.startswith("[") or t.endswith("]") for t in n.split(".")):
            continue
        expected.add(column_urn(DS, n))
    assert {d for _, _, d in facts.edges} == expected


def _fails(name: str) -> bool:
    try:
        column_urn(DS, name)
    except ValueError:
        return True
    return False
