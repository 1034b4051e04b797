"""The answers Mission Control adds (graph, dossier, models, change token) over the recorded demo's real metadata.

One demo session is read at three moments: before the failure (step 08), during the incident (09) and after the
repair (10); the answers are taken at each moment and the tests check them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pareis.answers.changes import STATIC, incidents_revision
from pareis.answers.dossier import IncidentDossier, dossier
from pareis.answers.graph import BlastGraph, blast_graph, counts
from pareis.answers.incidents import IncidentAnswer, IncidentSummary, analysis, incident_list
from pareis.answers.models import ModelsAnswer, models
from pareis.answers.sources import CannotEvaluate
from pareis.compose.sources import open_sources
from tests.support.mission import CONTAMINATED, GROUPS, INCIDENT_STEP, RECORDED, REPAIR_STEP, DemoState


@dataclass
class Seen:
    tokens: dict[str, str]
    listed: list[IncidentSummary]
    during: IncidentDossier
    analysed: IncidentAnswer
    redrawn: BlastGraph
    collapsed: BlastGraph
    by_schema: BlastGraph
    models: ModelsAnswer
    unknown: str
    resolved: list[IncidentSummary]
    after: IncidentDossier


@pytest.fixture(scope="module")
def seen() -> Seen:
    state = DemoState("08-d5-retrain-poisoned")
    tokens = {"before": incidents_revision(state.sources), "again": incidents_revision(state.sources)}
    state.advance(INCIDENT_STEP)
    tokens["opened"] = incidents_revision(state.sources)
    listed = incident_list(state.sources)
    during = dossier(state.sources, listed[0].urn)
    radius = during.answer.facts.blast
    try:
        dossier(state.sources, "urn:li:incident:pareis-nope")
        unknown = ""
    except CannotEvaluate as exc:
        unknown = str(exc)
    seen = Seen(
        tokens,
        listed,
        during,
        analysis(state.sources, dataset=listed[0].dataset),
        blast_graph(state.sources.lineage, radius),
        blast_graph(state.sources.lineage, radius, collapse_over=15),  # 22 columns, 14 datasets
        blast_graph(state.sources.lineage, radius, collapse_over=1),
        models(state.sources),
        unknown,
        [],
        during,
    )
    state.advance(REPAIR_STEP)
    tokens["resolved"] = incidents_revision(state.sources)
    seen.resolved = incident_list(state.sources)
    seen.after = dossier(state.sources, seen.resolved[0].urn)
    return seen


def test_the_graph_draws_the_blast_radius_with_its_lineage_edges(seen: Seen) -> None:
    graph, radius = seen.during.graph, seen.during.answer.facts.blast
    assert counts(graph) == {"column": len(radius.columns), "feature": 2, "model": 6}
    ids = {n.id for n in graph.nodes}
    assert {m.urn for m in radius.models} <= ids and set(radius.features) <= ids
    feeds = [(e.source, e.target) for e in graph.edges if e.rel == "feature_model"]
    assert {m.urn for m in radius.models} == {t for _, t in feeds}
    assert len(feeds) == 3 * 2 + 3 * 1  # churn's versions read both poisoned features, ltv's one
    sourced = {t for e in graph.edges if e.rel == "feature_source" for t in [e.target]}
    assert sourced == set(radius.features)  # each feature is drawn from an affected column
    roles = {n.id: n.role for n in graph.nodes}
    assert sorted(c for c, r in roles.items() if r == "failing") == sorted(radius.failing_columns)
    assert max(n.layer for n in graph.nodes) == {n.kind: n.layer for n in graph.nodes}["model"]
    failing_layer = min(n.layer for n in graph.nodes if n.role == "failing")
    assert all(n.layer > failing_layer for n in graph.nodes if n.kind in ("feature", "model"))
    assert {n.severity for n in graph.nodes if n.kind == "model"} == {"MEDIUM", "LOW"}
    assert graph.to_json() == seen.redrawn.to_json()  # deterministic


def test_past_the_threshold_columns_collapse_into_their_datasets(seen: Seen) -> None:
    graph, radius = seen.collapsed, seen.during.answer.facts.blast
    assert graph.collapsed and graph.columns == len(radius.columns)
    datasets = [n for n in graph.nodes if n.kind == "dataset"]
    assert {n.id for n in datasets} == set(radius.datasets)
    assert sum(n.count for n in datasets) == len(radius.columns)
    assert all(e.source != e.target for e in graph.edges)
    assert counts(graph)["model"] == 6 and not seen.during.graph.collapsed
    # Past the threshold of datasets too: one node per schema (retail.raw, retail.analytics on each platform).
    schemas = [n for n in seen.by_schema.nodes if n.kind == "schema"]
    assert seen.by_schema.level == "schema" and sum(n.count for n in schemas) == len(radius.columns)
    assert sorted(n.label.split(" · ")[0] for n in schemas) == [
        "retail.analytics (dbt)",
        "retail.analytics (postgres)",
        "retail.raw (dbt)",
        "retail.raw (postgres)",
    ]


def test_a_dossier_is_the_analysis_of_that_incident_plus_live_state(seen: Seen) -> None:
    d = seen.during
    assert d.answer.to_json() == seen.analysed.to_json()
    assert d.live is not None and d.live.status.value == "ACTIVE" and d.postmortem is None
    assert d.to_json()["live"]["revision"] >= 1
    assert d.to_json()["summary"] == seen.listed[0].to_json()
    [healed] = seen.resolved
    assert healed.urn == seen.listed[0].urn and healed.state == "RESOLVED"
    report = seen.after.postmortem
    assert report is not None and "Time to heal" in report.text
    assert set(report.contaminated_versions) == set(CONTAMINATED)
    assert seen.unknown.startswith("no incident urn:li:incident:pareis-nope")


def test_models_lists_every_group_with_verdicts_and_rollbacks(seen: Seen) -> None:
    groups = {g["model"]: g for g in seen.models.to_json()["groups"]}
    assert set(GROUPS) <= groups.keys()
    verdicts = {v["urn"]: v["verdict"] for g in GROUPS for v in groups[g]["versions"]}
    assert {u for u, v in verdicts.items() if v == "CONTAMINATED"} == set(CONTAMINATED)
    assert {groups[g]["safe_rollback"]["urn"].split(",")[1] for g in GROUPS} == {"churn_2", "ltv_2"}
    assert all(groups[g]["at_risk"] for g in GROUPS)


def test_the_change_token_moves_when_the_incidents_role_writes(seen: Seen) -> None:
    t = seen.tokens
    assert t["again"] == t["before"]  # reading changes nothing
    assert t["opened"] != t["before"]  # Open
    assert t["resolved"] != t["opened"]  # Resolve


def test_sources_from_files_have_a_static_token() -> None:
    with open_sources(metadata=RECORDED) as sources:
        assert incidents_revision(sources) == STATIC
