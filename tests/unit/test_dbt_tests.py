"""Test choice rules and the schema.yml snippets (DESIGN §2.5, pareis.core.dbt_tests)."""

from __future__ import annotations

import yaml

from pareis.core.dbt_tests import ColumnFacts, DbtNode, DbtTest, choose, dbt_node, relation_of, schema_yml
from tests.support.goldens import golden, overlay

SRC = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.raw.orders,PROD)"
DIM = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.analytics.dim_customers,PROD)"
COL = f"urn:li:schemaField:({SRC},x)"
NODES = {DIM: DbtNode("models", "dim_customers")}


def names(facts: ColumnFacts) -> list[str]:
    return [t.name for t in choose(facts, NODES)]


def test_a_primary_key_gets_not_null_and_unique() -> None:
    assert names(ColumnFacts(COL, "number", primary_key=True)) == ["not_null", "unique"]


def test_a_foreign_key_gets_relationships_to_the_referenced_node() -> None:
    tests = choose(ColumnFacts(COL, "number", foreign=(f"urn:li:schemaField:({DIM},customer_id)",)), NODES)
    assert tests == [DbtTest("relationships", (("to", "ref('dim_customers')"), ("field", "customer_id")))]


def test_a_foreign_key_to_a_table_dbt_does_not_know_refers_to_a_source() -> None:
    other = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.crm.accounts,PROD)"
    tests = choose(ColumnFacts(COL, "number", foreign=(f"urn:li:schemaField:({other},id)",)), NODES)
    assert tests[0].arguments == (("to", "source('crm', 'accounts')"), ("field", "id"))


def test_a_key_that_is_also_foreign_gets_every_matching_test() -> None:
    facts = ColumnFacts(COL, "number", primary_key=True, foreign=(f"urn:li:schemaField:({DIM},customer_id)",))
    assert names(facts) == ["not_null", "unique", "relationships"]


def test_a_low_cardinality_profiled_string_gets_accepted_values() -> None:
    tests = choose(ColumnFacts(COL, "string", values=("UK", "FR", "DE")), NODES)
    assert tests == [DbtTest("accepted_values", (("values", ["DE", "FR", "UK"]),))]


def test_a_high_cardinality_string_falls_back_to_not_null() -> None:
    assert names(ColumnFacts(COL, "string", values=tuple(str(i) for i in range(21)))) == ["not_null"]


def test_a_profiled_number_gets_accepted_range() -> None:
    tests = choose(ColumnFacts(COL, "number", minimum="0", maximum="999.5"), NODES)
    assert tests == [DbtTest("dbt_utils.accepted_range", (("min_value", 0), ("max_value", 999.5), ("inclusive", True)))]


def test_without_metadata_the_test_is_not_null() -> None:
    assert names(ColumnFacts(COL)) == ["not_null"]
    assert names(ColumnFacts(COL, "number")) == ["not_null"]  # numeric, but no profile


def test_dbt_nodes_from_unique_ids() -> None:
    assert dbt_node(SRC, "model.retail.customer_features") == DbtNode("models", "customer_features")
    assert dbt_node(SRC, "source.retail.raw.transactions") == DbtNode("sources", "transactions", "raw")
    assert dbt_node(SRC, "seed.retail.countries") == DbtNode("seeds", "countries")
    assert dbt_node(SRC, None) == DbtNode("sources", "orders", "raw")


def test_the_snippet_uses_arguments_by_default_and_inline_arguments_when_legacy() -> None:
    node = DbtNode("models", "customer_features")
    tests = [DbtTest("not_null"), DbtTest("dbt_utils.accepted_range", (("min_value", 0), ("inclusive", True)))]
    modern = yaml.safe_load(schema_yml([(node, "basket_size", tests)]))
    assert modern == {
        "version": 2,
        "models": [
            {
                "name": "customer_features",
                "columns": [
                    {
                        "name": "basket_size",
                        "data_tests": [
                            "not_null",
                            {"dbt_utils.accepted_range": {"arguments": {"min_value": 0, "inclusive": True}}},
                        ],
                    }
                ],
            }
        ],
    }
    legacy = yaml.safe_load(schema_yml([(node, "basket_size", tests)], legacy=True))
    column = legacy["models"][0]["columns"][0]
    assert column["tests"][1] == {"dbt_utils.accepted_range": {"min_value": 0, "inclusive": True}}


def test_sources_nest_tables_and_entries_merge_by_node_and_column() -> None:
    raw = DbtNode("sources", "transactions", "raw")
    text = schema_yml(
        [
            (raw, "customer_id", [DbtTest("not_null")]),
            (raw, "customer_id", [DbtTest("not_null"), DbtTest("unique")]),
            (raw, "country", [DbtTest("accepted_values", (("values", ["UK", "it's"]),))]),
        ]
    )
    doc = yaml.safe_load(text)
    (source,) = doc["sources"]
    assert source["name"] == "raw"
    (table,) = source["tables"]
    assert table["name"] == "transactions"
    assert table["columns"] == [
        {"name": "customer_id", "data_tests": ["not_null", "unique"]},
        {"name": "country", "data_tests": [{"accepted_values": {"arguments": {"values": ["UK", "it's"]}}}]},
    ]


EXCEL = (
    "urn:li:dataset:(urn:li:dataPlatform:excel,tests/integration/excel/data/[business_report.xlsx]Business Report,PROD)"
)
"""The excel golden's one dataset: a sheet of a workbook on a path, its name holding a dot inside brackets."""


def test_names_are_split_on_the_urns_structure_never_inside_a_name() -> None:
    assert relation_of(EXCEL) == ("tests/integration/excel/data", "[business_report.xlsx]Business Report")
    assert relation_of("urn:li:dataset:(urn:li:dataPlatform:s3,bucket/sales/2026.csv,PROD)") == (
        "bucket/sales",
        "2026.csv",
    )
    assert relation_of(SRC) == ("raw", "orders")
    assert relation_of("urn:li:dataset:(urn:li:dataPlatform:hive,db.[a.b],PROD)") == ("db", "[a.b]")
    assert relation_of('urn:li:dataset:(urn:li:dataPlatform:postgres,db."s.1".t,PROD)') == ('"s.1"', "t")
    assert relation_of("urn:li:dataset:(urn:li:dataPlatform:kafka,orders,PROD)") == ("default", "orders")


def test_a_relation_that_is_no_dbt_name_keeps_its_real_name_as_schema_and_identifier() -> None:
    node = dbt_node(EXCEL, None)
    assert node == DbtNode(
        "sources",
        "business_report_xlsx_Business_Report",
        "tests_integration_excel_data",
        "tests/integration/excel/data",
        "[business_report.xlsx]Business Report",
    )
    assert node.ref() == "source('tests_integration_excel_data', 'business_report_xlsx_Business_Report')"
    assert dbt_node(SRC, None) == DbtNode("sources", "orders", "raw"), "identifiers are written as they are"
    (source,) = yaml.safe_load(schema_yml([(node, "Q1 Sales", [DbtTest("not_null")])]))["sources"]
    assert source == {
        "name": "tests_integration_excel_data",
        "schema": "tests/integration/excel/data",
        "tables": [
            {
                "name": "business_report_xlsx_Business_Report",
                "identifier": "[business_report.xlsx]Business Report",
                "columns": [{"name": "Q1 Sales", "quote": True, "data_tests": ["not_null"]}],
            }
        ],
    }


def test_a_nested_field_path_is_not_quoted() -> None:
    (model,) = yaml.safe_load(schema_yml([(DbtNode("models", "users"), "profile.country", [DbtTest("not_null")])]))[
        "models"
    ]
    assert model["columns"] == [{"name": "profile.country", "data_tests": ["not_null"]}]


def test_protect_on_the_excel_golden_suggests_tests_naming_the_real_sheet() -> None:
    """The excel golden plus a model whose features read two of the sheet's columns (``Region``, ``Q1 Sales``):
    both are gaps; each snippet declares the sheet as a source whose relation is the real one."""
    from pareis.answers.reliability import protect
    from pareis.compose.sources import open_sources

    sources = open_sources(
        metadata=[golden("excel__excel_file_test_golden"), overlay("excel_model_on_spreadsheet_columns")]
    )
    answer = protect(sources, at_ms=1_780_272_000_000)
    assert [g.column for g in answer.gaps] == [
        f"urn:li:schemaField:({EXCEL},Q1 Sales)",
        f"urn:li:schemaField:({EXCEL},Region)",
    ]
    for snippet in [answer.yaml, *(t.yaml for g in answer.gaps for t in g.tests)]:
        (source,) = yaml.safe_load(snippet)["sources"]
        (table,) = source["tables"]
        assert (source["schema"], table["identifier"]) == relation_of(EXCEL)
