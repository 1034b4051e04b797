"""The class of failure (issue 10 point 11, DESIGN §3): the data-quality dimension each assertion tests, read from
what DataHub's dbt and Great Expectations connectors record (:mod:`pareis.core.dimension`), and shown in the
incident description, the tickets and the postmortem.

Expectations: the dbt test (or GE expectation) each golden assertion is named after — ``not_null`` and
``expect_column_values_to_not_be_null`` test completeness; ``unique`` uniqueness; ``accepted_values``, ranges,
sets, ``is_positive`` and formats validity; ``relationships`` referential integrity; dbt source freshness and a
``…_is_recent`` test freshness; ``expect_table_row_count_…`` volume; ``expect_column_to_exist`` schema.
"""

from __future__ import annotations

import json

import pytest

from pareis.core import catalog
from pareis.core.dimension import dimension
from pareis.core.graph import Memo
from pareis.core.incident_text import description, postmortem
from tests.support.goldens import DEMO, golden, incident, load

EXPECTED_BY_PREFIX = [
    ("not_null", "completeness"),
    ("source_not_null", "completeness"),
    ("expect_column_values_to_not_be_null", "completeness"),
    ("unique", "uniqueness"),
    ("source_unique", "uniqueness"),
    ("accepted_values", "validity"),
    ("dbt_expectations_expect_column_values_to", "validity"),
    ("expect_column_values_to_be_between", "validity"),
    ("expect_column_min_to_be_between", "validity"),
    ("assert_total_payment_amount_is_positive", "validity"),
    ("is_email", "validity"),
    ("relationships", "referential integrity"),
    ("assert_source_actor_last_update_is_recent", "freshness"),
    ("dbt Freshness", "freshness"),
    ("expect_table_row_count_to_be_between", "volume"),
    ("expect_column_to_exist", "schema"),
]


def expected(name: str) -> str:
    matches = [(len(prefix), dim) for prefix, dim in EXPECTED_BY_PREFIX if name.startswith(prefix)]
    assert matches, f"no expectation for {name!r}"
    return max(matches)[1]


@pytest.mark.parametrize(
    "name",
    [
        "dbt__dbt_test_events_golden",
        "dbt__dbt_test_prefer_sql_parser_lineage_golden",
        "dbt__dbt_enabled_with_schemas_mces_golden",
        "gx-plugin__tests__integration__ge_mcps_golden",
        "gx-plugin__tests__integration__ge_mcps_golden_2",
    ],
)
def test_every_golden_assertion_is_classified_by_the_test_it_runs(name: str) -> None:
    items = json.loads(golden(name).read_text())
    infos = {
        x["entityUrn"]: x["aspect"]["json"] if "json" in x["aspect"] else json.loads(x["aspect"]["value"])
        for x in items
        if x.get("aspectName") == "assertionInfo"
    }
    assert infos
    metadata = load(golden(name))
    defs = catalog.assertions(Memo(metadata.store), infos)
    for urn, info in infos.items():
        sub = info.get("datasetAssertion") or info.get("customAssertion") or {}
        test_name = str(sub.get("nativeType") or sub.get("type"))
        assert defs[urn].dimension == dimension(info) == expected(test_name), (urn, test_name)


def test_nothing_that_says_is_other() -> None:
    assert dimension({"type": "CUSTOM", "customAssertion": {"type": "dbt", "entity": "urn:li:dataset:x"}}) == "other"
    assert dimension({}) == "other"
    assert dimension({"type": "VOLUME"}) == "volume"
    assert dimension({"type": "FIELD", "fieldAssertion": {"fieldMetricAssertion": {"metric": "NULL_COUNT"}}}) == (
        "completeness"
    )


def test_the_demo_incident_is_a_completeness_failure_in_description_ticket_and_postmortem() -> None:
    metadata = load(*sorted(DEMO.glob("*.json")))
    raw = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)"
    facts = incident(metadata, raw)
    assert facts.failure_class == "completeness"
    assert "class of failure: completeness; 1 failing assertion(s); failed rows: 254193." in description(facts)
    assert facts.window.healed_ms is not None
    text = postmortem(facts, facts.window.first_failure_ms, facts.window.healed_ms).text
    assert "Class of failure: completeness" in text
