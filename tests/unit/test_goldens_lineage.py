"""Column lineage answers on real DataHub metadata (issue 10, DESIGN §2.1): nested field containment on the
Trino-over-Hive golden.

In that golden each Trino table is the sibling of its Hive table, and ``array_struct_test_view`` is a view over
``array_struct_test`` whose (winning, second) ``upstreamLineage`` copies the struct ``service`` as a whole. The
schemas hold ``service``, ``service.type`` and ``service.provider`` (v2 paths, simplified).
"""

from __future__ import annotations

import pytest

from pareis.core.blast import blast_radius
from pareis.core.fieldpath import column_urn
from tests.support.goldens import Metadata, golden, load


def trino(table: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:trino,hivedb.db1.{table},PROD)"


def hive(table: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:hive,db1.{table},PROD)"


@pytest.fixture(scope="module")
def trino_hive() -> Metadata:
    return load(golden("trino__trino_hive_mces_golden"))


def test_a_failing_nested_field_reaches_the_struct_a_view_copies(trino_hive: Metadata) -> None:
    table, view = trino("array_struct_test"), trino("array_struct_test_view")
    blast = blast_radius(trino_hive.store, columns=[column_urn(table, "service.type")])
    affected = set(blast.columns)
    assert column_urn(table, "service") in affected  # the enclosing struct
    assert column_urn(view, "service") in affected  # what flows from it
    assert column_urn(view, "service.type") in affected  # the same field inside the copied struct
    # Its sibling fields are not poisoned by a bad service.type.
    assert column_urn(table, "service.provider") not in affected
    assert column_urn(view, "service.provider") not in affected
    assert blast.origin_columns == (column_urn(hive("array_struct_test"), "service.type"),)


def test_a_failing_struct_poisons_its_nested_fields(trino_hive: Metadata) -> None:
    table, view = trino("struct_test"), trino("struct_test_view_materialized")
    blast = blast_radius(trino_hive.store, columns=[column_urn(table, "service")])
    affected = set(blast.columns)
    for path in ("service", "service.type", "service.provider"):
        assert column_urn(table, path) in affected
        assert column_urn(hive("struct_test"), path) in affected
    assert column_urn(table, "property_id") not in affected
    assert column_urn(view, "property_id") not in affected


def test_deeper_nesting_is_contained_at_every_level(trino_hive: Metadata) -> None:
    table = trino("nested_struct_test")
    blast = blast_radius(trino_hive.store, columns=[column_urn(table, "service.provider.id")])
    affected = set(blast.columns)
    assert {column_urn(table, "service.provider"), column_urn(table, "service")} <= affected
    assert column_urn(table, "service.provider.name") not in affected
    assert column_urn(table, "service.type") not in affected
