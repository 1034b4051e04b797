"""Test choice rules and the schema.yml snippets (DESIGN §2.5, pareis.core.dbt_tests)."""

from __future__ import annotations

import yaml

from pareis.core.dbt_tests import ColumnFacts, DbtNode, DbtTest, choose, dbt_node, schema_yml

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
