"""The answers Mission Control's list and a snapshot's clock need beyond the incident list: the verdicts of every
listed incident (:mod:`pareis.answers.listed_verdicts`, read from what the incidents role published, equal to the
analysis) and the newest time a set of files records (:mod:`pareis.answers.newest`)."""

from __future__ import annotations

import dataclasses

import pytest

from pareis.answers.dossier import dossier
from pareis.answers.incidents import incident_list
from pareis.answers.listed_verdicts import listed_verdicts
from pareis.answers.newest import newest_ms
from pareis.compose.sources import open_sources
from tests.support.mission import INCIDENT_STEP, RECORDED, REPAIR_STEP, DemoState


@pytest.mark.parametrize("step", [INCIDENT_STEP, REPAIR_STEP, "11-d7-retrain-clean"])
def test_listed_verdicts_are_the_analysis_verdicts(step: str) -> None:
    state = DemoState(step)
    rows = incident_list(state.sources)
    kept = listed_verdicts(state.sources, rows)  # the ACTIVE one from the store, a RESOLVED one analysed
    recomputed = listed_verdicts(dataclasses.replace(state.sources, incidents=None), rows)
    for row in rows:
        analysis = dossier(state.sources, row.urn).answer.to_json()["contamination"]
        assert kept[row.urn] == analysis == recomputed[row.urn]
        assert sum(v["verdict"] == "CONTAMINATED" for g in analysis for v in g["versions"]) == 2


def test_listed_verdicts_read_what_was_published_for_an_active_incident(monkeypatch: pytest.MonkeyPatch) -> None:
    import pareis.answers.dossier as dossier_module

    state = DemoState(INCIDENT_STEP)
    rows = incident_list(state.sources)
    assert state.sources.incidents is not None
    stored = state.sources.incidents.get(rows[0].dataset)
    assert stored.incident is not None and stored.incident.published.contamination  # what the list reads
    analysed: list[str] = []
    real = dossier_module.facts_of
    monkeypatch.setattr(dossier_module, "facts_of", lambda s, row: analysed.append(row.urn) or real(s, row))
    listed_verdicts(state.sources, rows)
    assert analysed == []  # no analysis: the published verdicts were enough
    listed_verdicts(dataclasses.replace(state.sources, incidents=None), rows)
    assert analysed == [rows[0].urn]  # without an incident store, it is analysed


def test_the_newest_time_of_files_is_their_latest_run_change_or_training() -> None:
    recording = open_sources(metadata=RECORDED)
    assert newest_ms(recording) == 1_759_903_200_000  # 2025-10-08 06:00 UTC: the clean retrain, the last step
    golden = open_sources(metadata=["tests/data/datahub-goldens/dbt__dbt_test_events_golden.json"])
    assert newest_ms(golden) == max(
        r.timestamp_ms
        for d in golden.runs.datasets()
        for a in golden.runs.assertions_of(d)
        for r in golden.runs.runs(a)
    )
    empty = open_sources(metadata=["tests/data/datahub-goldens/excel__excel_file_test_golden.json"])
    assert newest_ms(empty) is None
