"""Offline equals live for dbt (issue 10 point 7, DESIGN §2.1): file readers derive the ``siblings`` GMS's
SiblingAssociationHook writes (:mod:`pareis.datahub.gms.sibling_hook`).

* ``dbt_test_events_golden`` (jaffle_shop) carries no siblings; its dbt tests assert the dbt nodes; each postgres
  table gets its dbt node as its only upstream (PATCH). A live DataHub links the eight dbt ⇄ postgres pairs; the
  overlay ``dbt_events_siblings_gms_writes`` spells out those writes, and ``dbt_events_not_null_amount_fails`` adds a
  FAILURE of ``not_null_orders_amount`` (assertee: the dbt node of ``orders``). Read with the hook, the golden alone
  must index the same siblings as golden + explicit writes without it, and analyse the failure to the same incident
  key (the postgres table, the class's non-dbt member) and URN the running service would write.
* ``dbt_test_target_platform_primary_siblings_golden`` (pagila) carries explicit siblings (15 UPSERTs on dbt nodes,
  15 PATCHes on postgres tables): with them stripped, the hook derives the same 15 pairs (12 sources by their
  ``Source`` subtype and single upstream, 3 models by the postgres table's single dbt upstream).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pareis.core.graph import Memo, Rel, siblings_of
from pareis.core.incident_urn import incident_urn
from pareis.core.keys import incident_keys
from pareis.datahub.gms.sibling_hook import platform_of, sibling_proposals
from tests.support.goldens import Metadata, golden, incident, load, overlay

NOT_NULL_AMOUNT = "urn:li:assertion:bbd78a070092f54313153abec49f6f31"


def jaffle(platform: str, table: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},calm-pagoda-323403.jaffle_shop.{table},PROD)"


def sibling_pairs(metadata: Metadata) -> set[frozenset[str]]:
    """Every sibling link in the index, as unordered pairs."""
    datasets = {src for rel, src, _ in _edges(metadata) if rel is Rel.SIBLING} | {
        dst for rel, _, dst in _edges(metadata) if rel is Rel.SIBLING
    }
    found = siblings_of(Memo(metadata.store), datasets)
    return {frozenset((d, s)) for d, sibs in found.items() for s in sibs}


def _edges(metadata: Metadata) -> set[tuple[Rel, str, str]]:
    out: set[tuple[Rel, str, str]] = set()
    for (_, aspect), record in metadata.store._records.items():  # the test reads the whole index
        if aspect == "siblings" and record.facts is not None:
            out |= record.facts.edges
    return out


def test_without_explicit_siblings_the_hook_links_what_gms_links() -> None:
    derived = load(golden("dbt__dbt_test_events_golden"))
    explicit = load(golden("dbt__dbt_test_events_golden"), overlay("dbt_events_siblings_gms_writes"), hooks=False)
    tables = ["customers", "orders", "stg_customers", "stg_orders", "stg_payments", "raw_customers", "raw_orders"]
    expected = {frozenset((jaffle("dbt", t), jaffle("postgres", t))) for t in [*tables, "raw_payments"]}
    assert sibling_pairs(explicit) == expected
    assert sibling_pairs(derived) == expected
    assert sibling_pairs(load(golden("dbt__dbt_test_events_golden"), hooks=False)) == set()  # what was read before


def test_offline_analysis_predicts_the_live_incident_key_and_urn() -> None:
    failing = overlay("dbt_events_not_null_amount_fails")
    offline = load(golden("dbt__dbt_test_events_golden"), failing)
    live = load(golden("dbt__dbt_test_events_golden"), overlay("dbt_events_siblings_gms_writes"), failing, hooks=False)
    answers = []
    for metadata in (offline, live):
        dbt_orders = jaffle("dbt", "orders")
        key = incident_keys(Memo(metadata.store), [dbt_orders])[dbt_orders]
        facts = incident(metadata, dbt_orders, [NOT_NULL_AMOUNT])
        assert (facts.dataset, facts.urn) == (key, incident_urn(key, facts.window.first_failure_ms))
        answers.append((key, facts.urn, facts.blast.to_json()))
    assert answers[0] == answers[1]
    assert answers[0][0] == jaffle("postgres", "orders")


def test_stripped_of_its_siblings_the_pagila_golden_derives_the_same_pairs(tmp_path: Path) -> None:
    source = golden("dbt__dbt_test_target_platform_primary_siblings_golden")
    items = json.loads(source.read_text())
    stripped = [x for x in items if x.get("aspectName") != "siblings"]
    assert len(items) - len(stripped) == 30
    path = tmp_path / "stripped.json"
    path.write_text(json.dumps(stripped))
    with_explicit = sibling_pairs(load(source, hooks=False))
    assert len(with_explicit) == 15
    assert sibling_pairs(load(path)) == with_explicit
    assert sibling_pairs(load(source)) == with_explicit  # the hook adds nothing where the links exist


DBT_SRC = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.raw.orders,PROD)"
PG = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.raw.orders,PROD)"
PG2 = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.raw.orders_v2,PROD)"
DBT_MODEL = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.stg.orders,PROD)"


Values = dict[tuple[str, str], dict[str, Any]]


def hook(entity: str, aspect: str, values: Values, change: str = "UPSERT") -> object:
    return sibling_proposals("dataset", entity, aspect, change, lambda u, a: values.get((u, a)), lambda u: u != PG2)


def lineage(*ups: str) -> dict[str, Any]:
    return {"upstreams": [{"dataset": u, "type": "TRANSFORMED"} for u in ups]}


def test_the_hooks_rules() -> None:
    assert platform_of(DBT_SRC) == "dbt" and platform_of(PG) == "postgres" and platform_of("urn:li:tag:x") is None
    source: Values = {(DBT_SRC, "subTypes"): {"typeNames": ["Source"]}, (DBT_SRC, "upstreamLineage"): lineage(PG)}
    both = [(DBT_SRC, {"siblings": [PG], "primary": True}), (PG, {"siblings": [DBT_SRC], "primary": False})]
    assert hook(DBT_SRC, "upstreamLineage", source) == both
    assert hook(DBT_SRC, "subTypes", source) == both  # whichever of the two aspects arrives last
    assert hook(DBT_SRC, "upstreamLineage", source, "DELETE") == []
    # A dbt model (not a source) is linked from its table's side only.
    model: Values = {(DBT_SRC, "subTypes"): {"typeNames": ["Model"]}, (DBT_SRC, "upstreamLineage"): lineage(PG)}
    assert hook(DBT_SRC, "upstreamLineage", model) == []
    # A source with two upstreams, or whose upstream is dbt, is not linked.
    assert hook(DBT_SRC, "upstreamLineage", {**source, (DBT_SRC, "upstreamLineage"): lineage(PG, PG2)}) == []
    assert hook(DBT_SRC, "upstreamLineage", {**source, (DBT_SRC, "upstreamLineage"): lineage(DBT_MODEL)}) == []
    # A table with exactly one dbt upstream is linked; the stale siblings it listed are dropped.
    table: Values = {(PG, "upstreamLineage"): lineage(DBT_MODEL, PG2), (PG, "siblings"): {"siblings": [PG2]}}
    assert hook(PG, "upstreamLineage", table) == [
        (DBT_MODEL, {"siblings": [PG], "primary": True}),
        (PG, {"siblings": [DBT_MODEL], "primary": False}),
    ]
    assert hook(PG, "upstreamLineage", {(PG, "upstreamLineage"): lineage(DBT_MODEL, DBT_SRC)}) == []
    assert hook(PG, "subTypes", table) == []
    # Already linked both ways: nothing written.
    linked: Values = {**table, (PG, "siblings"): {"siblings": [DBT_MODEL]}, (DBT_MODEL, "siblings"): {"siblings": [PG]}}
    assert hook(PG, "upstreamLineage", linked) == []
