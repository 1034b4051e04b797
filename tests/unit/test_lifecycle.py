"""DESIGN §3: the incident state machine — transitions, intents, identity, replay safety."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import pytest

from pareis.core.analysis import AnalysisInputs
from pareis.core.contamination import ModelVersion, Verdict
from pareis.core.impact import BlastRadius, ModelImpact, Severity
from pareis.core.incident_urn import effect_id, incident_urn
from pareis.core.intents import TAG_AT_RISK, Intent, Open, Resolve, RetrainStatus, Update
from pareis.core.lifecycle import IncidentState, Signal, Status, history_floor, step
from pareis.core.runs import AssertionRun, ResultType
from pareis.store.runs_memory import MemoryRunHistory

S, F, E, INIT = ResultType.SUCCESS, ResultType.FAILURE, ResultType.ERROR, ResultType.INIT
DS = "urn:li:dataset:(urn:li:dataPlatform:snowflake,shop.orders,PROD)"
A, B = "urn:li:assertion:amount_not_null", "urn:li:assertion:email_unique"
G = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
G2 = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,fraud,PROD)"


def mlmodel(name: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name},PROD)"


V1, V2, V3 = (ModelVersion(mlmodel(f"churn_{n}"), G, str(n), t) for n, t in ((1, 50), (2, 90), (3, 150)))
FRAUD = ModelVersion(mlmodel("fraud_1"), G2, "1", None)  # training time unknown
FEATURE_AMOUNT, FEATURE_EMAIL = "urn:li:mlFeature:(shop,amount)", "urn:li:mlFeature:(shop,email)"

BLAST = {
    # A poisons 2 of churn_3's 4 features (HIGH); V1 and V2 do not use them.
    A: BlastRadius(
        failing_columns=(f"urn:li:schemaField:({DS},amount)",),
        origin_columns=(f"urn:li:schemaField:({DS},amount)",),
        columns=(f"urn:li:schemaField:({DS},amount)",),
        datasets=(DS,),
        features=(FEATURE_AMOUNT, "urn:li:mlFeature:(shop,amount_7d)"),
        models=(ModelImpact(V3.urn, G, (FEATURE_AMOUNT, "urn:li:mlFeature:(shop,amount_7d)"), 4, "column"),),
    ),
    # B poisons 1 of fraud_1's 4 features (MEDIUM).
    B: BlastRadius(
        failing_columns=(f"urn:li:schemaField:({DS},email)",),
        origin_columns=(f"urn:li:schemaField:({DS},email)",),
        columns=(f"urn:li:schemaField:({DS},email)",),
        datasets=(DS,),
        features=(FEATURE_EMAIL,),
        models=(ModelImpact(FRAUD.urn, G2, (FEATURE_EMAIL,), 4, "column"),),
    ),
}
VERSIONS = {G: (V1, V2, V3), G2: (FRAUD,)}


def run(assertion: str, ts: int, result: ResultType, rows: int | None = None) -> AssertionRun:
    return AssertionRun(assertion, ts, result, DS, run_id=f"inv-{ts}", failed_rows=rows)


@dataclass
class Engine:
    """What the incidents role does per signal: record, read history from the floor, step."""

    full_history: bool = False
    blast: dict[str, BlastRadius] = field(default_factory=lambda: dict(BLAST))
    history: MemoryRunHistory = field(default_factory=MemoryRunHistory)
    state: IncidentState = field(default_factory=lambda: IncidentState(DS))

    def feed(self, r: AssertionRun, now: int | None = None) -> tuple[Intent, ...]:
        self.history.record(r)
        return self.signal(r, now)

    def signal(self, r: AssertionRun, now: int | None = None) -> tuple[Intent, ...]:
        floor = None if self.full_history else history_floor(self.state)
        runs = tuple(self.history.timeline(self.history.assertions_of(DS), floor))
        inputs = AnalysisInputs(runs, self.blast, VERSIONS, {A: "completeness"})
        self.state, out = step(self.state, Signal(DS, r), inputs, r.timestamp_ms + 1 if now is None else now)
        return out


def wire(intents: tuple[Intent, ...]) -> bytes:
    return json.dumps([i.to_json() for i in intents], sort_keys=True, separators=(",", ":")).encode()


def test_success_while_clear_emits_nothing_and_moves_the_floor() -> None:
    engine = Engine()
    assert engine.feed(run(A, 100, S)) == ()
    assert engine.state == IncidentState(DS, Status.CLEAR, floor_ms=101)


def test_error_and_init_runs_never_open_an_incident() -> None:
    engine = Engine()
    assert engine.feed(run(A, 100, E)) == ()
    assert engine.feed(run(A, 200, INIT)) == ()
    assert engine.state.status is Status.CLEAR


def test_first_failure_opens_an_incident_with_everything_the_writers_need() -> None:
    engine = Engine()
    engine.feed(run(A, 100, S))
    [opened] = engine.feed(run(A, 200, F, 12), now=5000)
    assert isinstance(opened, Open)
    urn = incident_urn(DS, 200)
    assert urn.startswith("urn:li:incident:pareis-")
    assert (opened.facts.urn, opened.effect_id, opened.revision, opened.at_ms) == (
        urn,
        effect_id(urn, "open", 0),
        0,
        5000,
    )
    facts = opened.facts
    assert (facts.window.last_success_ms, facts.window.first_failure_ms, facts.window.healed_ms) == (100, 200, None)
    assert facts.window.assertions == (A,) and facts.window.failed_rows == 12
    assert (facts.severity, facts.priority) == (Severity.HIGH, 1)
    assert opened.tags_add == tuple(sorted([V3.urn, FEATURE_AMOUNT, "urn:li:mlFeature:(shop,amount_7d)"]))
    # Open: every evaluated version is blocked; V3 trained inside (100, open) and is in the blast radius.
    assert facts.retrain == tuple(sorted((v.urn, RetrainStatus.BLOCKED) for v in (V1, V2, V3)))
    [group] = facts.contamination
    assert [(v.version, v.verdict) for v in group.versions] == [
        (V1, Verdict.CLEAN),
        (V2, Verdict.CLEAN),
        (V3, Verdict.CONTAMINATED),
    ]
    assert group.safe_rollback == V2
    for needle in ("Blind window", "1970-01-01T00:00:00.100Z", "1970-01-01T00:00:00.200Z", "still failing"):
        assert needle in opened.description
    # Decision first, by short names: the full URNs stay in the JSON of the facts.
    assert opened.description.startswith("### Decision\n\n- **churn**: **ROLL BACK to** **churn_2** — ")
    assert "urn:li:" not in opened.description
    assert opened.title == "Roll back churn to churn_2 — shop.orders failing"
    assert engine.state.status is Status.ACTIVE and engine.state.at_risk == opened.tags_add


def test_a_duplicate_signal_emits_nothing() -> None:
    engine = Engine()
    engine.feed(run(A, 100, S))
    failure = run(A, 200, F, 12)
    engine.feed(failure)
    before = engine.state
    assert engine.feed(failure) == ()
    assert engine.signal(failure, now=99_999) == ()
    assert engine.state == before


def test_more_failures_update_only_what_changed() -> None:
    engine = Engine()
    engine.feed(run(A, 100, S))
    engine.feed(run(A, 200, F, 12))
    [update] = engine.feed(run(A, 300, F, 30))
    assert isinstance(update, Update)
    assert update.changed == ("failed_rows",)
    assert (update.revision, update.effect_id) == (1, effect_id(incident_urn(DS, 200), "update", 1))
    assert update.tags_add == update.tags_remove == update.retrain == ()
    assert "failed_rows: 12 → 30" in update.comment
    # A failure without a count makes the latest count unknown (a change); the same once more changes nothing.
    [update] = engine.feed(run(A, 400, F))
    assert isinstance(update, Update)
    assert update.changed == ("failed_rows",) and update.facts.window.failed_rows is None
    assert engine.feed(run(A, 500, F)) == ()


def test_a_second_assertion_failing_grows_the_incident() -> None:
    engine = Engine()
    engine.feed(run(A, 100, S))
    engine.feed(run(B, 110, S))
    engine.feed(run(A, 200, F, 12))
    [update] = engine.feed(run(B, 300, F, 1))
    assert isinstance(update, Update)
    assert update.facts.urn == incident_urn(DS, 200)  # same incident: one failing period
    assert update.changed == (
        "assertions",
        "at_risk",
        "blast",
        "contamination",
        "decisions",
        "failed_rows",
        "retrain",
        "rollback",
    )
    # The comment leads with the decisions (a new group: its decision), entities by short name.
    assert update.comment.splitlines()[:2] == ["Pareis updated this incident:", "- fraud: NOTHING TO SWITCH"]
    assert "urn:li:" not in update.comment
    assert update.tags_add == (FEATURE_EMAIL, FRAUD.urn) and update.tags_remove == ()
    assert update.retrain == ((FRAUD.urn, RetrainStatus.BLOCKED),)
    assert update.facts.window.assertions == (A, B) and update.facts.window.failed_rows == 13
    assert update.facts.severity is Severity.HIGH  # max over models: HIGH (churn_3) and MEDIUM (fraud_1)
    fraud = next(g for g in update.facts.contamination if g.group == G2)
    assert fraud.versions[0].verdict is Verdict.UNKNOWN
    # A passes while B still fails: nothing the world sees changes.
    assert engine.feed(run(A, 400, S)) == ()


def test_resolve_when_every_assertion_passes_with_the_postmortem() -> None:
    engine = Engine()
    engine.feed(run(A, 100, S))
    engine.feed(run(B, 110, S))
    engine.feed(run(A, 200, F, 12), now=1_000)
    engine.feed(run(B, 300, F, 1))
    engine.feed(run(A, 400, S))
    [resolved] = engine.feed(run(B, 500, S), now=9_000)
    assert isinstance(resolved, Resolve)
    urn = incident_urn(DS, 200)
    assert (resolved.effect_id, resolved.revision) == (effect_id(urn, "resolve", 2), 2)
    assert resolved.facts.window.healed_ms == 500
    assert resolved.tags_remove == tuple(
        sorted([V3.urn, FRAUD.urn, FEATURE_AMOUNT, FEATURE_EMAIL, "urn:li:mlFeature:(shop,amount_7d)"])
    )
    # Back to OK except the contaminated version (V3, trained at 150 in (100, 500)), which stays BLOCKED.
    assert resolved.retrain == tuple(sorted((v.urn, RetrainStatus.OK) for v in (V1, V2, FRAUD)))
    pm = resolved.postmortem
    assert (pm.time_to_detect_ms, pm.time_to_heal_ms) == (100, 300)
    assert pm.contaminated_versions == (V3.urn,)
    assert pm.rollbacks == ((G, V2.urn), (G2, None))
    assert pm.failure_class == "completeness+other"  # B is not classified: other
    assert [(e.at_ms, e.event) for e in pm.timeline] == [
        (100, "last_success"),
        (200, "failure"),
        (200, "first_failure"),
        (300, "failure"),
        (400, "success"),
        (500, "healed"),
        (500, "success"),
        (1_000, "opened"),
        (9_000, "resolved"),
    ]
    assert "Time to heal: 0d 00:00:00.300" in pm.text and "Contaminated versions: churn_3\n" in pm.text
    assert pm.text.startswith("# Postmortem: Roll back churn to churn_2 — shop.orders healed\n\n## As of the heal\n")
    assert engine.state.status is Status.RESOLVED and engine.state.at_risk == ()
    assert engine.state.floor_ms == 501


def test_a_new_failure_after_resolved_opens_a_new_incident() -> None:
    engine = Engine()
    engine.feed(run(A, 100, F))
    engine.feed(run(A, 200, S))
    [opened] = engine.feed(run(A, 300, F))
    assert isinstance(opened, Open)
    assert opened.facts.urn == incident_urn(DS, 300) != incident_urn(DS, 100)
    assert opened.revision == 0
    assert opened.facts.window.last_success_ms == 200


def test_never_passed_assertion_contaminates_every_version_in_the_blast_radius() -> None:
    engine = Engine()
    [opened] = engine.feed(run(A, 200, F))
    [group] = opened.facts.contamination
    assert opened.facts.window.last_success_ms is None
    assert group.contaminated == (V3,)  # V1 and V2 are outside the blast radius: CLEAN
    assert group.safe_rollback is None
    assert "never (no earlier passing run)" in opened.description and "no safe rollback" in opened.description


def test_equal_timestamps_hand_over_without_resolving() -> None:
    engine = Engine()
    engine.feed(run(A, 100, F))
    engine.history.record(run(B, 200, F))
    engine.history.record(run(A, 200, S))
    out = engine.signal(run(A, 200, S)) + engine.signal(run(B, 200, F))
    assert [type(i) for i in out] == [Update]  # B joins; nothing resolves at 200
    assert engine.state.status is Status.ACTIVE


def test_a_failure_arriving_after_its_own_heal_opens_and_resolves_at_once() -> None:
    engine = Engine()
    engine.feed(run(A, 100, S))
    engine.history.record(run(A, 300, S))  # recorded, its signal still queued
    opened, resolved = engine.feed(run(A, 200, F))
    assert isinstance(opened, Open) and isinstance(resolved, Resolve)
    assert opened.facts.urn == resolved.facts.urn and resolved.revision == 1
    assert resolved.facts.window.healed_ms == 300
    assert engine.feed(run(A, 300, S)) == ()  # the queued signal is now a no-op


def test_a_late_earlier_failure_moves_the_window_but_not_the_identity() -> None:
    engine = Engine()
    engine.feed(run(A, 100, S))
    engine.feed(run(B, 100, S))
    engine.feed(run(A, 300, F))
    [update] = engine.feed(run(B, 250, F))  # B's run at 250 arrives after A's at 300
    assert isinstance(update, Update)
    assert update.facts.urn == incident_urn(DS, 300)
    assert update.facts.window.first_failure_ms == 250
    assert "first_failure_ms: 300 → 250" in update.comment


def test_resolve_then_open_when_the_active_incident_healed_before_a_new_one() -> None:
    engine = Engine()
    engine.feed(run(A, 100, F))
    engine.history.record(run(A, 200, S))
    resolved, opened = engine.feed(run(B, 300, F))
    assert isinstance(resolved, Resolve) and resolved.facts.urn == incident_urn(DS, 100)
    assert isinstance(opened, Open) and opened.facts.urn == incident_urn(DS, 300)
    assert engine.state.status is Status.ACTIVE and engine.state.incident is not None
    assert engine.state.incident.urn == incident_urn(DS, 300)


def test_no_blast_radius_known_still_opens_with_severity_none() -> None:
    engine = Engine(blast={})
    [opened] = engine.feed(run(A, 100, F))
    assert isinstance(opened, Open)
    assert (opened.facts.severity, opened.facts.priority) == (Severity.NONE, 3)
    assert opened.tags_add == () and opened.facts.contamination == () and opened.facts.retrain == ()


def test_lineage_shrinking_removes_tags_and_unblocks() -> None:
    engine = Engine()
    engine.feed(run(A, 100, F))
    engine.blast = {}
    [update] = engine.feed(run(A, 200, F))
    assert isinstance(update, Update)
    assert update.tags_remove == tuple(sorted([V3.urn, FEATURE_AMOUNT, "urn:li:mlFeature:(shop,amount_7d)"]))
    assert update.retrain == tuple(sorted((v.urn, RetrainStatus.OK) for v in (V1, V2, V3)))
    assert "severity: HIGH → NONE" in update.comment


SCRIPT = [
    run(A, 100, S),
    run(B, 110, E),
    run(B, 120, S),
    run(A, 200, F, 12),
    run(A, 200, F, 12),  # duplicate
    run(B, 260, F),
    run(A, 300, INIT),
    run(B, 250, F, 4),  # late
    run(A, 400, S),
    run(B, 500, S),
    run(A, 600, F, 1),
    run(A, 700, S),
    run(B, 800, F),
]


def play(engine: Engine) -> list[bytes]:
    return [wire(engine.feed(r)) for r in SCRIPT]


def test_replay_is_byte_for_byte_identical() -> None:
    first, second = play(Engine()), play(Engine())
    assert first == second
    assert sum(1 for out in first if out != b"[]") >= 6  # the script exercises opens, updates and resolves


def test_reading_from_the_floor_gives_the_same_answers_as_reading_all_history() -> None:
    floor_engine, full_engine = Engine(), Engine(full_history=True)
    assert play(floor_engine) == play(full_engine)
    assert floor_engine.state == full_engine.state


def test_effect_ids_do_not_depend_on_now() -> None:
    early, late = Engine(), Engine()
    ids_early = [i.effect_id for r in SCRIPT for i in early.feed(r, now=1)]
    ids_late = [i.effect_id for r in SCRIPT for i in late.feed(r, now=10**12)]
    assert ids_early == ids_late and len(set(ids_early)) == len(ids_early)


def test_state_survives_json() -> None:
    engine = Engine()
    for r in SCRIPT[:6]:
        engine.feed(r)
    assert engine.state.status is Status.ACTIVE
    assert IncidentState.from_json(json.loads(json.dumps(engine.state.to_json()))) == engine.state
    with pytest.raises(ValueError, match="malformed incident state"):
        IncidentState.from_json({"dataset": DS})


@pytest.mark.parametrize("field", ["floor_ms", "dataset"])
def test_a_stored_state_of_the_wrong_type_is_one_clear_error(field: str) -> None:
    """The compiled state machine checks its annotations (pareis.core is compiled by mypyc): a stored value of the
    wrong type is the store's one-line ValueError, never a TypeError from deep inside a step."""
    engine = Engine()
    for r in SCRIPT[:6]:
        engine.feed(r)
    stored = {**engine.state.to_json(), field: ["not", "a", "scalar"]}
    with pytest.raises(ValueError, match="malformed incident state"):
        IncidentState.from_json(stored)


def test_bad_inputs_are_clear_errors() -> None:
    engine = Engine()
    engine.feed(run(A, 100, F))
    with pytest.raises(ValueError, match=r"signal for .* applied to the state of"):
        step(engine.state, Signal("urn:li:dataset:other", run(A, 200, F)), AnalysisInputs(()), 0)
    with pytest.raises(ValueError, match="miss the run that opened"):
        step(engine.state, Signal(DS, run(A, 200, S)), AnalysisInputs((run(A, 200, S),)), 0)
    with pytest.raises(ValueError, match="only CLEAR goes without an incident"):
        IncidentState(DS, Status.ACTIVE)
    with pytest.raises(ValueError, match="only CLEAR goes without an incident"):
        replace(engine.state, status=Status.CLEAR)


def test_intents_serialise_with_their_kind_and_tag() -> None:
    engine = Engine()
    [opened] = engine.feed(run(A, 100, F))
    data = opened.to_json()
    assert data["kind"] == "open" and data["incident"] == incident_urn(DS, 100)
    assert data["facts"]["severity"] == "HIGH" and data["facts"]["priority"] == 1
    assert TAG_AT_RISK == "urn:li:tag:pareis-at-risk"


def test_a_late_failure_after_resolved_opens_a_new_incident() -> None:
    engine = Engine()
    engine.feed(run(A, 100, F))
    engine.feed(run(A, 200, S))
    assert engine.state.status is Status.RESOLVED and engine.state.floor_ms == 201
    [opened] = engine.feed(run(B, 150, F))  # older than the floor: counts through B's seed
    assert isinstance(opened, Open)
    assert opened.facts.urn == incident_urn(DS, 150) and opened.facts.window.is_open
    assert opened.facts.window.assertions == (B,) and opened.facts.window.last_success_ms is None


def test_reopening_under_the_same_urn_continues_its_revisions() -> None:
    engine = Engine()
    engine.feed(run(A, 100, F))
    [resolved] = engine.feed(run(A, 200, S))
    [opened] = engine.feed(run(B, 100, F))  # late, at the very ms the resolved incident began
    assert opened.facts.urn == resolved.facts.urn == incident_urn(DS, 100)
    assert (opened.revision, opened.effect_id) == (2, effect_id(incident_urn(DS, 100), "open", 2))


def test_the_source_assertion_is_the_one_whose_failure_opened_the_incident() -> None:
    engine = Engine()
    engine.feed(run(A, 100, S))
    engine.history.record(run(A, 200, S))
    [opened] = engine.feed(run(B, 200, F))
    assert opened.facts.source_assertion == B
    [update] = engine.feed(run(A, 300, F))
    assert update.facts.source_assertion == B and update.facts.window.assertions == (A, B)
    assert update.to_json()["facts"]["source_assertion"] == B


def test_a_blast_radius_change_alone_is_an_update_that_says_so() -> None:
    engine = Engine()
    engine.feed(run(A, 100, F))
    wider = replace(BLAST[A], columns=(*BLAST[A].columns, f"urn:li:schemaField:({DS},amount_eur)"))
    engine.blast = {**BLAST, A: wider}
    [update] = engine.feed(run(A, 200, F))
    assert isinstance(update, Update)
    assert update.changed == ("blast",)
    assert "blast: the affected columns, features or models changed" in update.comment
