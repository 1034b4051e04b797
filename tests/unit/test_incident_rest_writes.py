"""The REST path against the fake GMS (DESIGN §3): human edits of incidentInfo survive Update and Resolve; the
start-up probe learns which ML entity types take incidents; a refused ML write never fails the dataset's incident."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
import requests

from pareis.config import DatahubSettings
from pareis.contracts.records import Message
from pareis.core.analysis import AnalysisInputs
from pareis.core.intents import Intent, Open, Resolve, Update
from pareis.core.lifecycle import IncidentState, Signal, step
from pareis.core.owners import Owner
from pareis.datahub.writes.capabilities import PROBE_INCIDENT, GraphqlLister, probe_mcp, probe_ml_incident_types
from pareis.datahub.writes.incident_merge import keep_edits
from pareis.datahub.writes.incident_writes import intent_mcps
from pareis.datahub.writes.rest import RestWriter
from pareis.errors import Fatal, Poison, Retriable
from pareis.roles.effects import EffectsHandler
from pareis.roles.messages import decode_effect, encode
from pareis.roles.output import rest_effects
from pareis.store.ledger import MemoryLedger
from pareis.tickets.delivery import TicketDelivery
from tests.support.fake_gms import INCIDENT_TYPES_1_7_0, INCIDENT_TYPES_MASTER, FakeGms
from tests.support.writer_scenario import BLAST, DATASET, RUNS, VERSIONS

JDOE = Owner("urn:li:corpuser:jdoe@example.com", "jdoe@example.com")
HUMAN = "urn:li:corpuser:oncall"


def story() -> list[Intent]:
    state, out = IncidentState(DATASET), []
    for index, run in enumerate(RUNS):
        inputs = AnalysisInputs(runs=RUNS[: index + 1], blast=BLAST, versions=VERSIONS, owners={DATASET: (JDOE,)})
        state, produced = step(state, Signal(DATASET, run), inputs, now_ms=run.timestamp_ms + 1000)
        out.extend(produced)
    return out


@pytest.fixture
def gms() -> Iterator[FakeGms]:
    with FakeGms() as fake:
        yield fake


def deliver(handler: EffectsHandler, intent: Intent, settings: DatahubSettings) -> None:
    # Through the wire format, as the effects role reads them.
    effects = [decode_effect(encode(e)) for e in rest_effects(intent, intent_mcps(intent, settings))]
    handler([Message("pareis.effects.v1", 0, i, b"k", e) for i, e in enumerate(effects)])


def handler_for(gms: FakeGms) -> EffectsHandler:
    ledger = MemoryLedger()
    return EffectsHandler(TicketDelivery([], ledger), ledger, RestWriter(gms.url, openapi=False))


def test_a_human_assignee_stage_and_priority_set_between_open_and_update_survive(gms: FakeGms) -> None:
    settings = DatahubSettings(write_path="rest", ml_incident_types=[])
    opened, update, resolve = story()
    assert isinstance(opened, Open) and isinstance(update, Update) and isinstance(resolve, Resolve)
    handler = handler_for(gms)
    urn = opened.facts.urn

    deliver(handler, opened, settings)
    written = gms.aspect(urn, "incidentInfo")
    assert [a["actor"] for a in written["assignees"]] == [JDOE.urn], "Open assigns the dataset's owners"

    # A person takes the incident in DataHub's UI: assigns themself, moves it to investigation, raises priority.
    edited = dict(written)
    edited["assignees"] = [{"actor": HUMAN, "assignedAt": {"time": 1, "actor": HUMAN}}]
    edited["status"] = {**written["status"], "stage": "INVESTIGATION"}
    edited["priority"] = 0
    gms.edit(urn, "incidentInfo", edited)

    deliver(handler, update, settings)
    after = gms.aspect(urn, "incidentInfo")
    assert [a["actor"] for a in after["assignees"]] == [HUMAN]
    assert after["status"]["stage"] == "INVESTIGATION" and after["priority"] == 0
    assert after["description"] == update.description, "Pareis's own fields move on"
    assert any(p.startswith("GET /aspects/") for p in gms.paths), "the current aspect is read before the write"

    deliver(handler, resolve, settings)
    final = gms.aspect(urn, "incidentInfo")
    assert final["status"]["state"] == "RESOLVED" and [a["actor"] for a in final["assignees"]] == [HUMAN]
    assert final["status"]["stage"] == "INVESTIGATION" and final["priority"] == 0


def test_without_a_human_edit_the_update_writes_pareis_values(gms: FakeGms) -> None:
    settings = DatahubSettings(write_path="rest", ml_incident_types=[])
    opened, update, _ = story()
    handler = handler_for(gms)
    deliver(handler, opened, settings)
    deliver(handler, update, settings)
    after = gms.aspect(opened.facts.urn, "incidentInfo")
    assert after["priority"] == update.facts.priority and "stage" not in after["status"]
    assert [a["actor"] for a in after["assignees"]] == [JDOE.urn]


def test_keep_edits_takes_pareis_values_where_nobody_changed_them() -> None:
    from pareis.core.intents import PriorFields

    proposed = {"priority": 1, "status": {"state": "ACTIVE"}, "assignees": [{"actor": "a"}], "title": "new"}
    current = {"priority": 2, "status": {"state": "ACTIVE"}, "assignees": [{"actor": "a"}], "title": "old"}
    assert keep_edits(proposed, current, PriorFields(2, ("a",))) == proposed
    assert keep_edits(proposed, None, PriorFields(0)) == proposed
    removed = keep_edits(proposed, {**current, "assignees": []}, PriorFields(2, ("a",)))
    assert "assignees" not in removed, "a person unassigning everyone is an edit too"


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ({}, []),  # a release before 1.7.0: refuses incidents on ML entities
        (INCIDENT_TYPES_1_7_0, []),  # released 1.7.0: accepts them, cannot list them on the model
        ({"incident_types": INCIDENT_TYPES_MASTER}, ["mlFeature", "mlFeatureTable", "mlModel"]),  # master
    ],
)
def test_the_start_up_probe_learns_what_gms_accepts_and_lists(
    server: dict[str, frozenset[str]], expected: Sequence[str]
) -> None:
    with FakeGms(**server) as gms:
        settings = DatahubSettings(write_path="rest", gms_url=gms.url)
        assert probe_ml_incident_types(RestWriter(gms.url), settings) == expected
        assert gms.aspect(PROBE_INCIDENT, "incidentInfo")["entities"] == [], "the probe is left on nothing"
        assert gms.aspect(PROBE_INCIDENT, "incidentInfo")["status"]["state"] == "RESOLVED"
        assert gms.paths.count("POST /api/graphql") == 3, "each ML type is asked whether it lists incidents"


def test_the_fake_gms_lists_incidents_only_where_the_server_can() -> None:
    model = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,m,PROD)"
    for server, total in (({"incident_types": INCIDENT_TYPES_MASTER}, 1), (INCIDENT_TYPES_1_7_0, None)):
        with FakeGms(**server) as gms:
            RestWriter(gms.url).write([probe_mcp(DatahubSettings(), [model])])  # both servers accept the write
            lister = GraphqlLister(gms.url)
            assert lister.lists_incidents("mlModel", model) is (total is not None)
            answer = requests.post(
                f"{gms.url}/api/graphql",
                json={
                    "query": "{ entity(urn: $urn) { ... on MLModel { incidents { total } } } }",
                    "variables": {"urn": model},
                },
                timeout=5,
            ).json()
            assert (answer.get("data") or {}).get("entity", {}).get("incidents", {}).get("total") == total


def test_the_probe_raises_when_gms_is_down_or_refuses_the_token() -> None:
    with FakeGms(token="secret") as gms:
        with pytest.raises(Fatal, match="401"):
            GraphqlLister(gms.url, "wrong").lists_incidents("mlModel", "urn:li:mlModel:x")
        gms.fail_next(503)
        with pytest.raises(Retriable):
            GraphqlLister(gms.url, "secret").lists_incidents("mlModel", "urn:li:mlModel:x")


def test_a_server_refusing_the_model_write_keeps_the_datasets_incident(gms: FakeGms) -> None:
    settings = DatahubSettings(write_path="rest", ml_incident_types=["mlModel"])  # wrong: this GMS refuses them
    opened = story()[0]
    effects = rest_effects(opened, intent_mcps(opened, settings))
    infos = [e for e in effects if e.mcp["aspectName"] == "incidentInfo"]
    assert len(infos) == 2
    handler = handler_for(gms)
    handler([Message("t", 0, 0, b"k", infos[0])])
    with pytest.raises(Poison, match="not supported on entity type mlModel"):
        handler([Message("t", 0, 1, b"k", infos[1])])
    assert gms.aspect(opened.facts.urn, "incidentInfo")["entities"] == [DATASET]
