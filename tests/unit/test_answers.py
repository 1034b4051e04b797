"""The answers layer (DESIGN §6) on the demo recording: the incident list, analysis and blast agree with each
other, and opening sources fails with one-line reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from pareis.answers.blast import blast
from pareis.answers.incidents import analysis, incident_list
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.compose.sources import open_sources

RECORDED = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "recorded"
RAW = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)"


@pytest.fixture(scope="module")
def recorded() -> Sources:
    return open_sources(metadata=[RECORDED])


def test_the_recording_has_one_resolved_incident_on_raw_transactions_reaching_every_version(recorded: Sources) -> None:
    (only,) = incident_list(recorded)
    assert only.dataset == RAW and only.state == "RESOLVED" and only.severity == "MEDIUM"
    # The whole recording: v4 (retrained after the repair) reads the same features, so it is in the radius too.
    names = sorted(m.rsplit(",", 2)[-2] for m in only.models)
    assert names == [f"{g}_{v}" for g in ("churn", "ltv") for v in (1, 2, 3, 4)]
    assert only.healed_ms is not None and only.last_success_ms is not None
    assert only.last_success_ms < only.first_failure_ms < only.healed_ms


def test_the_listed_incident_is_the_one_analysis_finds_by_dataset_and_by_assertion(recorded: Sources) -> None:
    (only,) = incident_list(recorded)
    by_dataset = analysis(recorded, dataset=RAW)
    by_assertion = analysis(recorded, assertion=only.assertions[0])
    assert by_dataset.facts.urn == by_assertion.facts.urn == only.urn
    assert by_dataset.to_json()["blast"] == by_assertion.to_json()["blast"]
    verdicts = {v["urn"]: v["verdict"] for g in by_dataset.to_json()["contamination"] for v in g["versions"]}
    bad = sorted(urn.rsplit(",", 2)[-2] for urn, verdict in verdicts.items() if verdict == "CONTAMINATED")
    assert bad == ["churn_3", "ltv_3"]


def test_blast_of_the_failing_assertion_reaches_the_incidents_models(recorded: Sources) -> None:
    (only,) = incident_list(recorded)
    answer = blast(recorded, assertion=only.assertions[0]).to_json()
    assert sorted(m["urn"] for m in answer["blast"]["models"]) == list(only.models)
    assert answer["blast"]["failed_rows"] == only.failed_rows


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({}, "one of them"),
        ({"metadata": ["x.json"], "redis_url": "redis://127.0.0.1:1/0"}, "one of them"),
        ({"metadata": ["/nonexistent/x.json"]}, "no such file"),
        ({"redis_url": "notaurl://x"}, "bad Redis URL"),
    ],
)
def test_sources_that_cannot_be_opened_say_why(kwargs: dict[str, object], reason: str) -> None:
    with pytest.raises(CannotEvaluate, match=reason):
        open_sources(**kwargs)  # type: ignore[arg-type]


def test_unknown_subjects_cannot_be_evaluated(recorded: Sources) -> None:
    with pytest.raises(CannotEvaluate, match="unknown assertion urn:li:assertion:nope"):
        analysis(recorded, assertion="urn:li:assertion:nope")
    with pytest.raises(CannotEvaluate, match="one of them"):
        blast(recorded)
