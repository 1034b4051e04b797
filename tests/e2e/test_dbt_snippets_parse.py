"""The dbt tests ``pareis protect`` suggests are valid dbt: ``dbt parse`` of the demo's dbt project with them
pasted in (DESIGN §2.5).

The project (``deploy/demo/dbt``) is copied to a temporary directory; the snippets are merged into its
``schema.yml``/``sources.yml`` as a person pastes them (a node already described gets the new columns and tests;
a new node is appended); the local ``dbt_utils`` package (``deploy/demo/dbt/local_packages/dbt_utils``: dbt hub is
unreachable here) is declared in ``packages.yml`` and installed with ``dbt deps`` (a local package needs no
network). dbt comes from ``.venv-demo`` (``make dbt-install``), or ``PAREIS_TEST_DBT``.

Snippets: the gaps protect finds on the demo recording, plus one of each rule's tests on real demo columns, in
dbt ≥ 1.10's form and in the legacy form; and the gaps protect finds on the excel golden with a model reading two of
its sheet's columns: a relation whose name is no dbt name (``[business_report.xlsx]Business Report`` in the folder
``tests/integration/excel/data``) and a column with a space (``Q1 Sales``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from pareis.core.dbt_tests import ColumnFacts, DbtNode, choose, schema_yml
from pareis.core.protect import assess, survey
from pareis.lineage_loader import load_files
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.goldens import golden, overlay

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "deploy" / "demo" / "dbt"
RECORDED = ROOT / "deploy" / "demo" / "recorded"
CHURN = [f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_{v},PROD)" for v in (1, 2, 3, 4)]
DIM_CUSTOMERS = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.analytics.dim_customers,PROD)"
FEATURES = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.analytics.customer_features,PROD)"
SHEET = ("tests/integration/excel/data", "[business_report.xlsx]Business Report")
"""The excel golden's dataset as a relation: (schema, identifier)."""


def dbt_binary() -> str:
    path = os.environ.get("PAREIS_TEST_DBT") or str(ROOT / ".venv-demo" / "bin" / "dbt")
    if not Path(path).exists():
        pytest.fail(f"dbt not found at {path}: run `make dbt-install` (or set PAREIS_TEST_DBT)", pytrace=False)
    return path


def merge(project: Path, snippet: str) -> None:
    """Paste ``snippet`` (a schema.yml document) into the project's property files."""
    files = sorted((project / "models").rglob("*.yml"))
    docs = {f: yaml.safe_load(f.read_text()) for f in files}
    extra: dict[str, Any] = {"version": 2}
    for kind, nodes in yaml.safe_load(snippet).items():
        if kind == "version":
            continue
        for node in nodes:
            if not _merge_node(docs, kind, node):
                extra.setdefault(kind, []).append(node)
    for f, doc in docs.items():
        f.write_text(yaml.safe_dump(doc, sort_keys=False))
    if len(extra) > 1:
        n = len(list((project / "models").glob("pareis_*.yml")))
        (project / "models" / f"pareis_{n}.yml").write_text(yaml.safe_dump(extra, sort_keys=False))


def _merge_node(docs: dict[Path, Any], kind: str, node: dict[str, Any]) -> bool:
    for doc in docs.values():
        for existing in doc.get(kind, []):
            if existing["name"] != node["name"]:
                continue
            if kind == "sources":
                for table in node["tables"]:
                    target = next((t for t in existing["tables"] if t["name"] == table["name"]), None)
                    if target is None:
                        existing["tables"].append(table)
                    else:
                        _merge_columns(target, table["columns"])
            else:
                _merge_columns(existing, node["columns"])
            return True
    return False


def _merge_columns(existing: dict[str, Any], columns: list[dict[str, Any]]) -> None:
    known = {c["name"]: c for c in existing.setdefault("columns", [])}
    for column in columns:
        key = "tests" if "tests" in column else "data_tests"
        if column["name"] in known:
            target = known[column["name"]]
            other = "data_tests" if key == "tests" else "tests"
            key_in = other if other in target else key  # dbt refuses both keys on one column
            listed = target.setdefault(key_in, [])
            listed.extend(t for t in column[key] if t not in listed)  # the same test pasted twice is one test
        else:
            existing["columns"].append(column)


def snippets() -> list[str]:
    store = MemoryLineageStore()
    runs = load_files(store, sorted(RECORDED.glob("*.json"))).runs
    s = survey(store, models=CHURN)
    keys = {key: [r for r in runs if r.assertion in set(cls.assertions)] for key, cls in s.classes.items()}
    _, _, gaps, entries = assess(s, keys, {}, 1_759_968_000_000)
    assert gaps, "the demo has untested model-feeding columns"
    every_rule = ColumnFacts(
        f"urn:li:schemaField:({FEATURES},basket_size)",
        "number",
        primary_key=True,
        foreign=(f"urn:li:schemaField:({DIM_CUSTOMERS},customer_id)",),
        minimum="0",
        maximum="250.5",
    )
    nodes = {DIM_CUSTOMERS: DbtNode("models", "dim_customers")}
    strings = ColumnFacts(f"urn:li:schemaField:({FEATURES},country)", "string", values=("France", "United Kingdom"))
    raw = DbtNode("sources", "transactions", "raw")
    return [
        *excel_snippets(),
        schema_yml(entries),
        schema_yml([(DbtNode("models", "customer_features"), "basket_size", choose(every_rule, nodes))]),
        schema_yml([(DbtNode("models", "customer_features"), "country", choose(strings, nodes))]),
        schema_yml([(raw, "customer_id", choose(every_rule, nodes))], legacy=True),
        schema_yml([(DbtNode("models", "dim_products"), "avg_unit_price", choose(every_rule, nodes))], legacy=True),
    ]


def excel_snippets() -> list[str]:
    from pareis.answers.reliability import protect
    from pareis.compose.sources import open_sources

    sources = open_sources(
        metadata=[golden("excel__excel_file_test_golden"), overlay("excel_model_on_spreadsheet_columns")]
    )
    answer = protect(sources, at_ms=1_780_272_000_000, legacy=True)
    assert len(answer.gaps) == 2, "Region and Q1 Sales feed the model untested"
    return [answer.yaml]


def test_the_suggested_tests_parse_in_the_demo_project(tmp_path: Path) -> None:
    dbt = dbt_binary()
    project = tmp_path / "retail"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("target", "dbt_packages", "logs"))
    local = project / "local_packages" / "dbt_utils"
    (project / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(local)}]}))
    pasted = snippets()
    for snippet in pasted:
        merge(project, snippet)
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1"}
    common = ["--project-dir", str(project), "--profiles-dir", str(project)]
    for args in (["deps"], ["parse", "--no-partial-parse"]):
        done = subprocess.run([dbt, *args, *common], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, f"dbt {args[0]} failed:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    manifest = json.loads((project / "target" / "manifest.json").read_text())
    tests = [n for n in manifest["nodes"].values() if n["resource_type"] == "test"]
    names = {(t["test_metadata"]["namespace"], t["test_metadata"]["name"], t.get("column_name")) for t in tests}
    assert ("dbt_utils", "accepted_range", "basket_size") in names
    assert (None, "relationships", "basket_size") in names
    assert (None, "unique", "basket_size") in names
    assert (None, "accepted_values", "country") in names
    assert (None, "not_null", "customer_id") in names  # on the source, legacy form
    assert ("dbt_utils", "accepted_range", "avg_unit_price") in names  # legacy form
    (sheet,) = (s for s in manifest["sources"].values() if (s["schema"], s["identifier"]) == SHEET)
    on_sheet = {t.get("column_name") for t in tests if sheet["unique_id"] in t["depends_on"]["nodes"]}
    assert on_sheet == {"Region", '"Q1 Sales"'}, "the tests name the real sheet and its columns (quoted)"
    range_test = next(
        t for t in tests if t["test_metadata"]["name"] == "accepted_range" and t.get("column_name") == "basket_size"
    )
    assert range_test["test_metadata"]["kwargs"]["max_value"] == 250.5
