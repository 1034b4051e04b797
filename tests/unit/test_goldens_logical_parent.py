"""Logical datasets (issue 31 item 7, DESIGN §2.1): ``logicalParent`` links a physical dataset or column to its
logical parent (a data contract's dataset) like siblings.

On the demo recording, the overlay ``demo_contract_logical_parent`` adds a data contract's logical dataset
(``odcs`` ``retail_customer_features_contract``, columns ``total_spend`` and ``spend_per_item``), makes it the
logical parent of the warehouse table ``retail.analytics.customer_features`` (dataset level only), makes the contract's
``spend_per_item`` the logical parent of the table's ``avg_unit_price`` (column level, another name), and fails a
not-null test on each contract column.

Answers, by DESIGN (the recording's dbt model: ``total_spend = sum(quantity × unit_price)``, ``avg_unit_price =
avg(unit_price)``, ``basket_size`` from ``quantity``; churn reads all six features, ltv all but
``avg_unit_price``):

* the contract's ``total_spend`` is the table's ``total_spend`` (same name, datasets linked): its origins are the raw
  ``quantity`` and ``unit_price``, so the features ``total_spend``, ``avg_unit_price`` and ``basket_size`` are
  poisoned, and every churn and ltv version is reached;
* the contract's ``spend_per_item`` is the table's ``avg_unit_price``: origin ``unit_price``, features
  ``avg_unit_price`` and ``total_spend``, every churn and ltv version (ltv through ``total_spend``);
* both ways: a test on the table's column reaches the contract's.
"""

from __future__ import annotations

import pytest

from pareis.core.blast import blast_radius
from pareis.core.graph import Memo
from tests.support.goldens import DEMO, Metadata, load, overlay

CONTRACT = "urn:li:dataset:(urn:li:dataPlatform:odcs,retail_customer_features_contract,PROD)"
TABLE = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.analytics.customer_features,PROD)"
VERSIONS = [f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{m}_{v},PROD)" for m in ("churn", "ltv") for v in (1, 2, 3, 4)]


def feature(name: str) -> str:
    return f"urn:li:mlFeature:(customer_features,{name})"


def assertion(name: str) -> str:
    return f"urn:li:assertion:pareis-overlay-contract-{name}-not-null"


@pytest.fixture(scope="module")
def demo() -> Metadata:
    return load(*sorted(DEMO.glob("*.json")), overlay("demo_contract_logical_parent"))


@pytest.mark.parametrize(
    ("test", "features"),
    [
        ("total-spend", ["avg_unit_price", "basket_size", "total_spend"]),
        ("spend-per-item", ["avg_unit_price", "total_spend"]),
    ],
)
def test_a_test_on_the_contract_reaches_the_features_built_on_the_tables(
    demo: Metadata, test: str, features: list[str]
) -> None:
    radius = blast_radius(Memo(demo.store), assertions=[assertion(test)])
    assert sorted(radius.features) == [feature(f) for f in features]
    assert [m.urn for m in radius.models] == VERSIONS


def test_the_link_holds_both_ways(demo: Metadata) -> None:
    view = Memo(demo.store)
    for physical, logical in (("total_spend", "total_spend"), ("avg_unit_price", "spend_per_item")):
        radius = blast_radius(view, columns=[f"urn:li:schemaField:({TABLE},{physical})"])
        assert f"urn:li:schemaField:({CONTRACT},{logical})" in radius.columns
