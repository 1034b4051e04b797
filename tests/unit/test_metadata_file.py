"""Pareis's reader of DataHub file-format metadata (issue 10 point 10): the same proposals' answers as acryl-datahub's
reader on every golden and the demo recording; element by element for large files; clear errors; folders read
recursively in path order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from pareis.datahub.files.acryl_file import acryl_proposals
from pareis.datahub.files.json_array import JsonArrayError, array_elements
from pareis.datahub.files.metadata_file import MetadataFileError, Proposal, expand, read_proposals
from pareis.lineage_loader import load
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.goldens import DEMO, every_golden, golden


def index(proposals: Any) -> tuple[dict[Any, Any], list[Any]]:
    """Every record (stamp and facts) of the index the proposals build, and the assertion runs, sorted."""
    store = MemoryLineageStore()
    loaded = load(store, proposals)
    return dict(store._records), sorted(loaded.runs, key=repr)


@pytest.mark.parametrize("path", [*every_golden(), DEMO], ids=lambda p: p.name)
def test_the_index_and_runs_equal_those_read_through_acryl_datahub(path: Path) -> None:
    records, runs = index(read_proposals([path]))
    assert records  # every golden holds lineage-bearing aspects
    assert (records, runs) == index(acryl_proposals([path]))


def test_a_large_file_is_streamed_element_by_element_with_the_same_elements(tmp_path: Path) -> None:
    path = golden("dbt__dbt_test_events_golden")
    whole = orjson.loads(path.read_bytes())
    assert list(array_elements(path, whole_below=0, chunk=1000)) == whole  # elements cut across many chunks
    assert list(array_elements(path, whole_below=0, chunk=10)) == whole
    bom = tmp_path / "bom.json"
    bom.write_bytes(b'\xef\xbb\xbf  [ {"a": "\\u00e9t\xc3\xa9"} ,{}]  \n')
    assert list(array_elements(bom, whole_below=0, chunk=3)) == [{"a": "été"}, {}]
    assert list(array_elements(bom)) == [{"a": "été"}, {}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1}', "expected a JSON array"),
        ("[{}, ", "unterminated array"),
        ('[{"a": }]', "not JSON"),
        ("[{} {}]", "expected ',' or ']'"),
        ("[{}] []", "data after the array"),
        ("", "expected a JSON array"),
    ],
)
def test_a_file_that_is_not_a_json_array_is_refused_when_streamed(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(JsonArrayError, match=message):
        list(array_elements(path, whole_below=0, chunk=2))
    with pytest.raises(MetadataFileError, match="not DataHub file-format metadata"):
        list(read_proposals([path]))


@pytest.mark.parametrize(
    ("element", "message"),
    [
        (7, "expected an object"),
        ({"foo": 1}, "neither a proposal"),
        ({"aspect": {"json": {}}, "aspectName": "status"}, "without entityUrn or aspectName"),
        (
            {"entityUrn": "urn:li:dataset:x", "aspectName": "status", "changeType": "MERGE", "aspect": {"json": {}}},
            "unknown changeType",
        ),
        (
            {"entityUrn": "urn:li:dataset:x", "aspectName": "status", "aspect": {"value": "{no", "contentType": "x"}},
            "is not JSON",
        ),
        ({"proposedSnapshot": {"a": {"urn": "urn:li:dataset:x", "aspects": [{"com.x.Nope": {}}]}}}, "unknown aspect"),
        ({"proposedSnapshot": {}}, "exactly one snapshot"),
        (
            {"entityUrn": "urn:li:dataset:x", "aspectName": "status", "aspect": {"json": 5}},
            "must be an object, got int",
        ),
        (
            {"entityUrn": "urn:li:dataset:x", "aspectName": "status", "aspect": {"value": "[1]", "contentType": "x"}},
            "aspect status must be an object, got list",
        ),
        (
            {"entityUrn": "urn:li:dataset:x", "aspectName": "status", "changeType": "PATCH", "aspect": {"json": "x"}},
            "patch of status must be a list of operations or an object, got str",
        ),
        (
            {"proposedSnapshot": {"a": {"urn": "urn:li:dataset:x", "aspects": [{"com.linkedin.common.Status": 5}]}}},
            "aspect status must be an object",
        ),
    ],
)
def test_an_element_that_is_not_file_format_is_named(tmp_path: Path, element: Any, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([element]))
    with pytest.raises(MetadataFileError, match=rf"bad\.json#0.*{message}"):
        list(read_proposals([path]))


def test_mce_aspects_become_pegasus_json_proposals() -> None:
    proposals = [p for p in read_proposals([golden("feast__feast_repository_mces_golden")]) if p.aspect_name]
    key = next(p for p in proposals if p.aspect_name == "mlPrimaryKeyProperties")
    assert isinstance(key, Proposal) and key.entity_type == "mlPrimaryKey" and key.change_type == "UPSERT"
    assert key.aspect["sources"] == [
        "urn:li:dataset:(urn:li:dataPlatform:file,data.driver_stats_with_string.parquet,PROD)"
    ]
    schema = next(
        p for p in read_proposals([golden("trino__trino_hive_mces_golden")]) if p.aspect_name == "schemaMetadata"
    )
    assert all(not k.startswith("com.linkedin.pegasus2avro.") for k in json.dumps(schema.aspect).split('"'))


def test_a_folder_is_read_recursively_in_path_order_with_any_case_of_suffix(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ("b/02.JSON", "b/01.json", "a.Json", "c.json", "notes.txt"):
        (tmp_path / name).write_text("[]")
    assert [p.relative_to(tmp_path).as_posix() for p in expand([tmp_path])] == [
        "a.Json",
        "b/01.json",
        "b/02.JSON",
        "c.json",
    ]


def test_an_empty_or_missing_folder_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("no metadata here")
    with pytest.raises(MetadataFileError, match=r"holds no \.json file"):
        expand([tmp_path / "empty"])
    with pytest.raises(MetadataFileError, match="no such file or folder"):
        list(read_proposals([tmp_path / "missing"]))


def test_a_deeply_nested_element_is_refused_when_streamed(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" + "[" * 100_000 + "]" * 100_000 + "]")
    with pytest.raises(JsonArrayError, match="nested too deeply"):
        list(array_elements(path, whole_below=0))
