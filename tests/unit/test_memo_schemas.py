"""Schema reads without re-parsing (issues 15 and 17): a dataset's ``has_column`` neighbours spelled as its own are
read with string comparisons (:func:`pareis.core.fieldpath.split_schema`), with the same answers as parsing each
(:func:`~pareis.core.fieldpath.split_column`), and a removed dataset's columns are still gone from every answer."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from hypothesis import given
from hypothesis import strategies as st

from pareis.core import fieldpath
from pareis.core.containment import Containment
from pareis.core.fieldpath import COLUMN_PREFIX, column_urn, dotted_paths, is_flat, own_head, split_column, split_schema
from pareis.core.graph import Adjacency, Attr, Memo, Outline, Query, Rel, columns_of, outlines_of


class View:
    """A plain LineageView: forward edges and attributes in dictionaries."""

    def __init__(self, edges: Mapping[tuple[Rel, str], set[str]], attrs: Mapping[str, Mapping[str, str]]) -> None:
        self.edges, self.attrs = edges, attrs
        self.attribute_reads = 0

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        out: list[Adjacency] = []
        for q in queries:
            assert not q.reverse
            out.append({n: frozenset(self.edges.get((q.rel, n), ())) for n in q.nodes})
        return out

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        self.attribute_reads += 1
        return {n: self.attrs.get(n, {}) for n in nodes}

    def attribute(self, nodes: Collection[str], name: Attr) -> Mapping[str, str | None]:
        self.attribute_reads += 1
        return {n: self.attrs.get(n, {}).get(name) for n in nodes}

    def outlines(self, datasets: Collection[str]) -> Mapping[str, Outline]:
        return outlines_of(self, datasets)


def ds(name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:hive,{name},PROD)"


parents = st.one_of(
    st.sampled_from(
        [
            ds("db.t"),
            ds("a(b)"),
            "urn:li:dataset:plain",
            "urn:li:dataset:with,comma",
            "urn:li:dataset:(unbalanced",
            "urn:li:dataset:(a)(b)",
            "urn:li:dataset:(a,b)x",
            "urn:li:dataset",
            "not-a-urn",
            "urn:li:mlFeature:(ns,f)",
            f"{COLUMN_PREFIX}{ds('t')},struct)",
        ]
    ),
    st.text(alphabet="urn:li(),.%a2C8[]=", max_size=24),
)
paths = st.one_of(
    st.sampled_from(["id", "a.b", "a.b.c", "", ".x", "a%2Cb", "a%2cb.c", "[version=2.0].[type=struct].a", "x)", "(y"]),
    st.text(alphabet="ab.,()%2C8[]=", max_size=12),
)


@given(parents, st.lists(paths, max_size=6), st.lists(st.text(alphabet="urn:li(),.%ab", max_size=30), max_size=3))
def test_own_columns_read_without_parsing_agree_with_split_column(
    parent: str, names: list[str], others: list[str]
) -> None:
    columns = {f"{COLUMN_PREFIX}{parent},{p})" for p in names} | set(others)
    foreign, dotted = split_schema(parent, columns)
    assert set(foreign) <= columns
    for c in columns - set(foreign):
        assert split_column(c) == (parent, dotted.get(c) or split_column(c)[1])
        assert (c in dotted) == ("." in split_column(c)[1])
    try:
        expected = {c: p for c in columns if "." in (p := split_column(c)[1])}
    except ValueError:
        return
    assert dotted_paths(parent, columns) == expected


def test_own_head_is_the_prefix_split_column_reads_whole() -> None:
    assert own_head(ds("db.t")) == f"{COLUMN_PREFIX}{ds('db.t')},"
    assert own_head("urn:li:dataset:(a)(b)") is None
    assert own_head("urn:li:dataset:with,comma") is None
    assert own_head("not-a-urn") is None


def schema_view(datasets: int, columns: int, removed: set[str]) -> View:
    edges: dict[tuple[Rel, str], set[str]] = {}
    for k in range(datasets):
        d = ds(f"t{k}")
        edges[(Rel.HAS_COLUMN, d)] = {f"{COLUMN_PREFIX}{d},c{j})" for j in range(columns)} | {
            f"{COLUMN_PREFIX}{d},s.f{j})" for j in range(2)
        }
        edges[(Rel.COLUMN, f"{COLUMN_PREFIX}{d},c0)")] = {f"{COLUMN_PREFIX}{ds(f't{k + 1}')},c0)"}
    return View(edges, {d: {Attr.REMOVED: "true"} for d in removed})


def test_a_schema_lookup_and_its_containment_parse_no_own_column() -> None:
    view = schema_view(200, 40, set())
    datasets = [ds(f"t{k}") for k in range(200)]
    fieldpath.split_column.cache_clear()
    memo = Memo(view)
    contained = Containment(memo)
    contained.load(datasets)
    # before: every one of the 8,400 columns was parsed (for its owner, then for its path)
    assert fieldpath.split_column.cache_info().misses == 0
    struct = f"{COLUMN_PREFIX}{ds('t3')},s)"
    assert contained.nested([struct])[struct] == {f"{COLUMN_PREFIX}{ds('t3')},s.f{j})" for j in range(2)}
    assert view.attribute_reads == 1  # removal still checked in one read per walk step


def test_a_removed_datasets_columns_are_gone_from_every_answer() -> None:
    gone = ds("t1")
    view = schema_view(3, 3, {gone})
    memo = Memo(view)
    schemas = columns_of(memo, [ds("t0"), gone])
    assert schemas[gone] == frozenset()
    assert len(schemas[ds("t0")]) == 5
    walked = memo.lookup([Query(Rel.COLUMN, [f"{COLUMN_PREFIX}{ds('t0')},c0)", f"{COLUMN_PREFIX}{gone},c0)"])])[0]
    assert walked == {f"{COLUMN_PREFIX}{ds('t0')},c0)": frozenset(), f"{COLUMN_PREFIX}{gone},c0)": frozenset()}
    fresh = Memo(view)
    both = fresh.lookup(
        [Query(Rel.COLUMN, [f"{COLUMN_PREFIX}{ds('t0')},c0)"]), Query(Rel.HAS_COLUMN, [gone, ds("t2")])]
    )
    assert both[0][f"{COLUMN_PREFIX}{ds('t0')},c0)"] == frozenset()
    assert both[1][gone] == frozenset() and len(both[1][ds("t2")]) == 5


OUTLINE_PATHS = ["id", "a", "a.b", "a.b.c", "s", "s.f", "x%2Cy", "x%2Cy.z", "[version=2.0].[type=struct].a"]
TABLES = [ds("t0"), ds("t1"), ds("t2")]


def containment_oracle(
    schemas: Mapping[str, set[str]], columns: list[str]
) -> tuple[dict[str, list[tuple[str, str]]], dict[str, frozenset[str]], dict[tuple[str, str], str | None]]:
    """Containment stated from whole schemas (the module docstring of :mod:`pareis.core.containment`)."""
    enclosing: dict[str, list[tuple[str, str]]] = {}
    for c in columns:
        parent, path = split_column(c)
        schema = schemas.get(parent, set())
        cuts = [i for i, ch in enumerate(path) if ch == "."][::-1]
        structs = [(column_urn(parent, path[:i]), path[i:]) for i in cuts if i > 0]
        enclosing[c] = [(s, rest) for s, rest in structs if not schema or s in schema]
    nested = {
        c: frozenset(
            x for x in schemas.get(split_column(c)[0], ()) if split_column(x)[1].startswith(split_column(c)[1] + ".")
        )
        for c in columns
    }
    inside: dict[tuple[str, str], str | None] = {}
    for s, rest in [pair for found in enclosing.values() for pair in found] + [(c, ".f") for c in columns]:
        parent, path = split_column(s)
        found = column_urn(parent, path + rest)
        schema = schemas.get(parent, set())
        inside[(s, rest)] = found if not schema or found in schema else None
    return enclosing, nested, inside


@given(
    st.dictionaries(st.sampled_from(TABLES), st.sets(st.sampled_from(OUTLINE_PATHS), max_size=5), max_size=3),
    st.sets(st.tuples(st.sampled_from(TABLES), st.sampled_from(OUTLINE_PATHS))),
)
def test_containment_over_outlines_answers_as_the_whole_schemas_say(
    named: dict[str, set[str]], asked: set[tuple[str, str]]
) -> None:
    """A flat schema outlined (its size only) gives every containment answer the whole schema gives, a dotted column
    that lineage names in it included (its enclosing struct may be there: the schema is then read whole)."""
    schemas = {d: {column_urn(d, p) for p in paths} for d, paths in named.items()}
    columns = sorted(column_urn(d, p) for d, p in asked)
    contained = Containment(Memo(View({(Rel.HAS_COLUMN, d): cols for d, cols in schemas.items()}, {})))
    enclosing, nested, inside = containment_oracle(schemas, columns)
    assert contained.enclosing(columns) == enclosing
    assert contained.nested(columns) == nested
    assert {(s, rest): contained.inside(s, rest) for s, rest in inside} == inside


def test_a_flat_schema_is_outlined_by_its_size_and_read_whole_only_for_a_dotted_column_named_in_it() -> None:
    d = ds("t0")
    view = View({(Rel.HAS_COLUMN, d): {column_urn(d, p) for p in ("id", "a")}}, {})
    memo = Memo(view)
    assert memo.outlines([d]) == {d: Outline(2, frozenset())}
    contained = Containment(memo)
    contained.load([d])
    assert contained.nested([column_urn(d, "a")]) == {column_urn(d, "a"): frozenset()}
    assert contained.inside(column_urn(d, "a"), ".b") is None
    # a.b is in no flat schema, but its struct a is in this one: enclosing reads the schema whole to find it
    assert contained.enclosing([column_urn(d, "a.b")]) == {column_urn(d, "a.b"): [(column_urn(d, "a"), ".b")]}


def test_fieldpath_flat_is_own_columns_with_plain_paths() -> None:
    d = ds("db.t")
    assert is_flat(d, [column_urn(d, "id"), column_urn(d, "name")])
    assert not is_flat(d, [])
    assert not is_flat(d, [column_urn(d, "id"), column_urn(d, "s.f")])
    assert not is_flat(d, [column_urn(d, "we,ird")])  # percent-encoded in the URN
    assert not is_flat(d, [column_urn(ds("other"), "id")])
    assert not is_flat("urn:li:dataset:with,comma", ["urn:li:schemaField:(urn:li:dataset:with,comma,id)"])
