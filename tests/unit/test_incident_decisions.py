"""The recommendation is a published fact (DESIGN §3 Update, §2.3): a change of decision is an Update whose ticket
comment says what changed ("now PROMOTE churn_4"), and incident states stored before Pareis published decisions do
not make every active incident comment on its tickets after an upgrade."""

from __future__ import annotations

import json

import pytest

from pareis.config import DatahubSettings
from pareis.core.analysis import AnalysisInputs
from pareis.core.contamination import ModelVersion
from pareis.core.impact import BlastRadius, ModelImpact
from pareis.core.intents import Open, Resolve, Update, healed
from pareis.core.lifecycle import (
    IncidentState,
    Published,
    Signal,
    Status,
    followed,
    history_floor,
    recheck,
    step,
)
from pareis.core.runs import AssertionRun, ResultType
from pareis.core.serving import Deployment, VersionFacts
from pareis.core.watch import follow_set

DS = "urn:li:dataset:(urn:li:dataPlatform:snowflake,shop.orders,PROD)"
A = "urn:li:assertion:amount_not_null"
G = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
FEATURE = "urn:li:mlFeature:(shop,amount)"
ENDPOINT = "urn:li:mlModelDeployment:(urn:li:dataPlatform:sagemaker,churn-endpoint,PROD)"


def mlmodel(n: int) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_{n},PROD)"


V1, V2, V3 = (ModelVersion(mlmodel(n), G, str(n), t) for n, t in ((1, 50), (2, 90), (3, 150)))
V4 = ModelVersion(mlmodel(4), G, "4", 180)  # trained after V3 on features the failure does not reach: CLEAN
BLAST = {
    A: BlastRadius(
        failing_columns=(f"urn:li:schemaField:({DS},amount)",),
        origin_columns=(f"urn:li:schemaField:({DS},amount)",),
        columns=(f"urn:li:schemaField:({DS},amount)",),
        datasets=(DS,),
        features=(FEATURE,),
        models=(ModelImpact(V3.urn, G, (FEATURE,), 4, "column"),),
    )
}
SERVING = {V3.urn: VersionFacts(V3, deployments=(Deployment(ENDPOINT, "IN_SERVICE"),))}  # V3 is deployed
RUNS = (
    AssertionRun(A, 100, ResultType.SUCCESS, DS, run_id="r-100"),
    AssertionRun(A, 200, ResultType.FAILURE, DS, run_id="r-200", failed_rows=7),
)


def inputs(*versions: ModelVersion, serving: dict[str, VersionFacts] = SERVING) -> AnalysisInputs:
    return AnalysisInputs(RUNS, BLAST, {G: versions}, {A: "completeness"}, serving=serving)


def opened() -> tuple[IncidentState, Open]:
    state, (intent,) = step(IncidentState(DS), Signal(DS, RUNS[-1]), inputs(V1, V2, V3), 1_000)
    assert isinstance(intent, Open)
    return state, intent


def test_the_decisions_are_published_with_the_incident() -> None:
    state, intent = opened()
    assert state.incident is not None
    assert state.incident.published.decisions == ((G, "ROLL_BACK", V2.urn),)
    assert state.incident.published.to_json()["decisions"] == [[G, "ROLL_BACK", V2.urn]]
    assert intent.title == "Roll back churn to churn_2 — shop.orders failing"


def test_a_changed_decision_is_an_update_whose_comment_leads_with_it() -> None:
    state, _ = opened()
    # churn_4 is registered while the incident is open: trained on clean features, so it is the target now.
    after, (update,), _ = recheck(state, inputs(V1, V2, V3, V4), 2_000, cause=[V4.urn])
    assert isinstance(update, Update)
    assert "decisions" in update.changed
    lines = update.comment.splitlines()
    assert lines[:2] == ["Pareis updated this incident:", "- churn: now PROMOTE churn_4 (was ROLL BACK to churn_2)"]
    assert after.incident is not None and after.incident.published.decisions == ((G, "PROMOTE", V4.urn),)
    assert update.title == "Promote churn_4 in churn — shop.orders failing"
    # Nothing else moved: the same inputs again change nothing.
    assert recheck(after, inputs(V1, V2, V3, V4), 3_000)[1] == ()


def test_a_deployment_that_stops_serving_changes_the_decision_alone() -> None:
    state, _ = opened()
    # churn_3's endpoint is taken out of service and churn_2 becomes the champion: nothing contaminated serves.
    serving = {
        V3.urn: VersionFacts(V3, deployments=(Deployment(ENDPOINT, "OUT_OF_SERVICE"),)),
        V2.urn: VersionFacts(V2, aliases=("champion",)),
    }
    _, (update,), _ = recheck(state, inputs(V1, V2, V3, serving=serving), 2_000)
    assert isinstance(update, Update) and update.changed == ("decisions",)
    assert update.comment.splitlines()[1] == "- churn: now NOTHING TO SWITCH (was ROLL BACK to churn_2)"


def without_decisions(state: IncidentState) -> IncidentState:
    """The state as a Pareis before this field stored it (no ``decisions`` in the published facts)."""
    data = state.to_json()
    del data["incident"]["published"]["decisions"]
    return IncidentState.from_json(json.loads(json.dumps(data)))


def test_facts_stored_before_decisions_existed_are_adopted_without_an_update() -> None:
    state, _ = opened()
    old = without_decisions(state)
    assert old.incident is not None and old.incident.published.decisions is None
    # After an upgrade every active incident is recomputed on its next signal: nothing changed, so no Update ...
    adopted, out, _ = recheck(old, inputs(V1, V2, V3), 2_000)
    assert out == ()
    # ... but the decisions are adopted, so that a later change of decision is one.
    assert adopted.incident is not None and adopted.incident.published == state.incident.published  # type: ignore[union-attr]
    assert adopted.incident.revision == old.incident.revision
    _, (update,), _ = recheck(adopted, inputs(V1, V2, V3, V4), 3_000)
    assert isinstance(update, Update) and "now PROMOTE churn_4" in update.comment


def test_a_run_signal_on_facts_stored_before_decisions_is_no_update_either() -> None:
    state, _ = opened()
    again = AssertionRun(A, 300, ResultType.FAILURE, DS, run_id="r-300", failed_rows=7)
    runs = (*RUNS, again)
    later = AnalysisInputs(runs, BLAST, {G: (V1, V2, V3)}, {A: "completeness"}, serving=SERVING)
    adopted, out = step(without_decisions(state), Signal(DS, again), later, 2_000)
    assert out == ()
    assert adopted.incident is not None and adopted.incident.published.decisions == ((G, "ROLL_BACK", V2.urn),)


def test_other_changes_of_facts_stored_before_decisions_do_not_mention_decisions() -> None:
    state, _ = opened()
    _, (update,), _ = recheck(without_decisions(state), inputs(V1, V2, V3, V4), 2_000)
    assert isinstance(update, Update)
    assert "decisions" not in update.changed and "contamination" in update.changed
    assert "now PROMOTE" not in update.comment


@pytest.mark.parametrize(
    "bad",
    [{"decisions": "ROLL_BACK"}, {"decisions": [["g", "ROLL_BACK"]]}, {"decisions": [["g", 1, None]]}],
)
def test_malformed_stored_decisions_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises((TypeError, ValueError)):
        Published.from_json(bad)


def test_published_decisions_round_trip() -> None:
    published = Published(decisions=((G, "PROMOTE", V4.urn), ("urn:li:mlModel:x", "RETRAIN", None)))
    assert Published.from_json(json.loads(json.dumps(published.to_json()))) == published
    assert Published.from_json({}).decisions is None


# --- after the heal: a decision left to act on is followed (DESIGN §2.3 "after a heal and a clean retrain") -------
HEALED = (*RUNS, AssertionRun(A, 300, ResultType.SUCCESS, DS, run_id="r-300"))


def healed_inputs(*versions: ModelVersion, serving: dict[str, VersionFacts] = SERVING) -> AnalysisInputs:
    return AnalysisInputs(HEALED, BLAST, {G: versions}, {A: "completeness"}, serving=serving)


def resolved() -> IncidentState:
    state, _ = opened()
    after, (resolve,) = step(state, Signal(DS, HEALED[-1]), healed_inputs(V1, V2, V3), 1_500)
    assert isinstance(resolve, Resolve) and after.status is Status.RESOLVED
    return after


def test_a_resolved_incident_whose_contaminated_version_serves_is_followed() -> None:
    state = resolved()
    assert state.incident is not None and state.incident.published.decisions == ((G, "ROLL_BACK", V2.urn),)
    assert followed(state)
    # The recheck reads the incident's window again: from its opening run, not from the resolved state's floor.
    assert history_floor(state, rechecking=True) == 200 and history_floor(state) == state.floor_ms


def test_a_clean_retrain_after_the_heal_is_an_update_of_the_resolved_incident() -> None:
    state = resolved()
    after, (update,), facts = recheck(state, healed_inputs(V1, V2, V3, V4), 2_000, cause=[V4.urn])
    assert isinstance(update, Update) and update.changed == ("decisions",)
    assert update.comment.splitlines()[1] == "- churn: now PROMOTE churn_4 (was ROLL BACK to churn_2)"
    assert update.facts.window.healed_ms == 300 and healed(update)  # written RESOLVED, never reopened
    assert (update.tags_add, update.tags_remove, update.retrain) == ((), (), ())
    assert after.status is Status.RESOLVED and after.incident is not None
    assert after.incident.published.decisions == ((G, "PROMOTE", V4.urn),)
    assert after.incident.published.healed_ms == 300, "the rest of what the resolve published stays"
    assert facts is not None and followed(after), "PROMOTE still asks for an action"
    assert recheck(after, healed_inputs(V1, V2, V3, V4), 3_000)[1] == (), "unchanged: no second comment"


def test_once_nothing_is_left_to_do_the_resolved_incident_is_no_longer_followed() -> None:
    state = resolved()
    serving = {V3.urn: VersionFacts(V3, deployments=(Deployment(ENDPOINT, "OUT_OF_SERVICE"),))}
    after, (update,), facts = recheck(state, healed_inputs(V1, V2, V3, V4, serving=serving), 2_000)
    assert isinstance(update, Update) and "now NOTHING TO SWITCH" in update.comment
    assert not followed(after) and facts is not None and follow_set(facts) == ()
    # A later lineage change is left alone, and costs no read.
    assert recheck(after, healed_inputs(V1, V2, V3), 3_000) == (after, (), None)


def test_a_resolved_incident_with_nothing_to_do_is_not_rechecked() -> None:
    state, _ = opened()
    serving = {V2.urn: VersionFacts(V2, aliases=("champion",))}  # churn_2 serves: nothing contaminated does
    quiet = AnalysisInputs(HEALED, BLAST, {G: (V1, V2, V3)}, {A: "completeness"}, serving=serving)
    after, _ = step(state, Signal(DS, HEALED[-1]), quiet, 1_500)
    assert after.status is Status.RESOLVED and not followed(after)
    assert recheck(after, healed_inputs(V1, V2, V3, V4), 2_000) == (after, (), None)


def test_a_followed_incident_watches_its_groups_versions_and_serving_deployments() -> None:
    state = resolved()
    _, _, facts = recheck(state, healed_inputs(V1, V2, V3), 2_000)
    assert facts is not None
    assert follow_set(facts) == tuple(sorted({G, V1.urn, V2.urn, V3.urn, ENDPOINT}))


def test_a_backfilled_incident_is_opened_active_and_then_resolved() -> None:
    """On a first signal whose history holds a healed incident, the Open carries the healed window: it is still
    written ACTIVE (the Resolve that follows resolves it); only a re-decided resolved incident is an Update written
    RESOLVED. (The integration flow test caught an Open written RESOLVED.)"""
    from pareis.datahub.writes.incident_serial import incident_info as serial_info
    from pareis.datahub.writes.incident_writes import incident_info

    _, (opening, resolve) = step(IncidentState(DS), Signal(DS, HEALED[-1]), healed_inputs(V1, V2, V3), 1_000)
    assert isinstance(opening, Open) and opening.facts.window.healed_ms == 300 and isinstance(resolve, Resolve)
    assert (healed(opening), healed(resolve)) == (False, True)
    settings = DatahubSettings()
    assert incident_info(opening, settings).aspect.status.state == "ACTIVE"
    assert json.loads(serial_info(opening, settings, ()).record["aspect"]["value"])["status"]["state"] == "ACTIVE"
