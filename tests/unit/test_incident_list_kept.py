"""The incident list from the live incident store (``pareis.answers.incidents.incident_list`` with
``sources.incidents``) equals the list recomputed from the run history alone (one analysis per incident), step by
step through the recorded demo and through a scenario with two incidents of one dataset (the older one is no longer
in the store); and an active incident the store holds is read from it, not recomputed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pareis.answers.incidents import IncidentSummary, incident_list
from pareis.answers.sources import Sources
from pareis.config import load_settings
from pareis.core.lifecycle import IncidentState
from pareis.demo.session import DemoSession, steps_of
from tests.data.gate import make_scenarios as sc
from tests.support.mission import RECORDED


def recomputed(sources: Sources) -> list[IncidentSummary]:
    return incident_list(dataclasses.replace(sources, incidents=None))


def _scenario(folder: Path) -> list[Path]:
    again = folder / "again.json"
    again.write_text(json.dumps([sc.run(sc.A_RAW_AMOUNT, sc.RAW, sc.DAY4 + 9 * sc.HOUR, "FAILURE")]))
    return [*(sc.HERE / f"{n}.json" for n in ("base", "failing", "healed", "contaminated")), again]


@pytest.mark.parametrize("which", ["recording", "scenario"])
def test_the_kept_list_is_the_recomputed_list_at_every_step(which: str, tmp_path: Path) -> None:
    session = DemoSession(load_settings())
    files = RECORDED if which == "recording" else _scenario(tmp_path)
    seen = 0
    for step in steps_of(files):
        session.run(step)
        live = session.sources
        assert live.incidents is not None
        got = incident_list(live)
        assert [s.to_json() for s in got] == [s.to_json() for s in recomputed(live)], step.name
        seen = max(seen, len(got))
    assert seen == (1 if which == "recording" else 2)


def test_a_stored_incident_is_read_not_recomputed(tmp_path: Path) -> None:
    session = DemoSession(load_settings())
    for step in steps_of(_scenario(tmp_path)):
        session.run(step)
    live = session.sources
    assert live.incidents is not None
    newest, older = incident_list(live)
    state = live.incidents.get(newest.dataset)
    assert state.incident is not None and state.incident.urn == newest.urn
    # What the role published is what the list shows: change the published severity and the list follows it ...
    published = dataclasses.replace(state.incident.published, severity="HIGH")
    live.incidents.put(dataclasses.replace(state, incident=dataclasses.replace(state.incident, published=published)))
    assert [s.severity for s in incident_list(live)] == ["HIGH", older.severity]
    # ... unless the published window is not the one the runs give: then the incident is analysed again.
    stale = dataclasses.replace(published, failed_rows=(newest.failed_rows or 0) + 1)
    live.incidents.put(dataclasses.replace(state, incident=dataclasses.replace(state.incident, published=stale)))
    assert incident_list(live) == recomputed(live)
    live.incidents.put(IncidentState(newest.dataset))  # the store forgot it: analysed
    assert incident_list(live) == recomputed(live)
