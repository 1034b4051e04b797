"""The scores role (DESIGN §1, §2.4, §2.5; issues 35 and 32): the gate's decisions on ``pareis.gate.v1`` — one record
per change, none for an unchanged decision, never rolled back by an older evaluation, published again by a redo —
the reliability scores' redo rule across partitions, and the role in the embedded runner on the demo recording
(every record is the answers layer's gate, byte for byte; the incidents role writes no score).

The lineage is the sample's (deploy/demo/sample: raw.transactions → stg_transactions → customer_features → the churn
and ltv models, four versions each); the gate is a fake that says what each test needs.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest

from pareis.answers.gate import gate
from pareis.answers.render import dump
from pareis.answers.sources import Sources
from pareis.compose.ports import Ports
from pareis.compose.replay import replayer
from pareis.compose.roles import ROLE_NAMES, embedded_runner, role_spec
from pareis.config import load_settings
from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.core.graph import Memo
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.writes.definitions import RELIABILITY_SCORE
from pareis.datahub.writes.writer import MemoryWriter
from pareis.demo.session import TOOLS, DemoSession, steps_of
from pareis.kafka.memory import MemoryBroker
from pareis.kafka.role import Delivery
from pareis.lineage_loader import load_files
from pareis.roles import scores as scores_role
from pareis.roles.gates import Decision, GatePublisher
from pareis.roles.messages import LineageSignal, RunSignal, encode
from pareis.roles.scores import ScorePublisher
from pareis.roles.span import BatchSpan
from pareis.store.gates import MemoryGateLedger
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.runs_memory import MemoryRunHistory
from pareis.store.scores import MemoryScoreLedger
from pareis.tickets.memory import MemoryTicketer
from tests.support import sample
from tests.support.recorded import recorded_sources

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted((ROOT / "deploy" / "demo" / "recorded").glob("[0-9][0-9]-*.json"))
SIGNALS, GATE = "pareis.signals.v1", "pareis.gate.v1"
B = sample.builder()
T0, DAY = B.T0, B.DAY
RAW = str(B.pg("raw.transactions"))
STG = sample.stg_dbt()
VERSIONS = sorted(sample.model(g, v) for g in ("churn", "ltv") for v in range(1, 5))
GROUPS = sorted(sample.group(g) for g in ("churn", "ltv"))


@pytest.fixture(scope="module")
def lineage() -> MemoryLineageStore:
    store = MemoryLineageStore()
    load_files(store, [sample.TIMELINE])
    return store


def signal(dataset: str, day: int, partition: int, offset: int, ok: bool = True) -> Message[RunSignal]:
    run = AssertionRun(
        sample.assertion("not_null_unit_price"),
        T0 + day * DAY,
        ResultType.SUCCESS if ok else ResultType.FAILURE,
        dataset,
        f"run-{day}",
    )
    return Message(SIGNALS, partition, offset, dataset.encode(), RunSignal(dataset, run, run.timestamp_ms))


class FakeGate:
    """The gate port: each model's decision from ``decisions`` (default GO), evaluating itself; the models asked."""

    def __init__(self) -> None:
        self.decisions: dict[str, str] = {}
        self.asked: list[tuple[tuple[str, ...], int]] = []

    def __call__(self, view: Memo, models: Sequence[str], at_ms: int, survey: object = None) -> list[Decision]:
        self.asked.append((tuple(models), at_ms))
        out = []
        for m in models:
            d = self.decisions.get(m, "GO")
            out.append(Decision(m, d, m, at_ms, dump({"decision": d, "evaluated_at_ms": at_ms, "model": m})))
        return out


class Role:
    """The gate publisher over a memory ledger and the fake gate, fed batches of signals as the handler feeds it."""

    def __init__(self, lineage: MemoryLineageStore) -> None:
        self.lineage = lineage
        self.gate = FakeGate()
        self.ledger = MemoryGateLedger()
        self.publisher = GatePublisher(self.ledger, self.gate, GATE)

    def batch(self, messages: Sequence[Message[RunSignal]]) -> dict[str, str]:
        """Model → the decision of its record, for the records the batch produces."""
        view = Memo(self.lineage)
        downstream = {m.value.dataset: VERSIONS for m in messages}  # the sample: every version is downstream
        at_ms = max(m.value.run.timestamp_ms for m in messages)
        records = self.publisher.records(view, downstream, at_ms, BatchSpan.of(messages))
        assert all(r.topic == GATE and r.key is not None and r.value is not None for r in records)
        return {r.key.decode(): orjson.loads(r.value)["decision"] for r in records if r.key and r.value}


def test_the_first_batch_publishes_every_version_downstream_and_their_groups(lineage: MemoryLineageStore) -> None:
    role = Role(lineage)
    assert role.batch([signal(RAW, 2, 0, 0)]) == dict.fromkeys(VERSIONS + GROUPS, "GO")
    assert role.gate.asked == [(tuple(sorted(VERSIONS + GROUPS)), T0 + 2 * DAY)], "asked once, at the run's time"


def test_a_changed_decision_is_one_record_and_an_unchanged_one_none(lineage: MemoryLineageStore) -> None:
    role = Role(lineage)
    role.batch([signal(RAW, 2, 0, 0)])
    assert role.batch([signal(RAW, 3, 0, 1)]) == {}, "nothing changed: nothing published"
    role.gate.decisions[sample.group("churn")] = "NO-GO"
    assert role.batch([signal(RAW, 4, 0, 2, ok=False)]) == {sample.group("churn"): "NO-GO"}
    assert role.batch([signal(RAW, 5, 0, 3, ok=False)]) == {}
    role.gate.decisions.clear()
    assert role.batch([signal(RAW, 6, 0, 4)]) == {sample.group("churn"): "GO"}


def test_an_older_evaluation_never_rolls_a_decision_back(lineage: MemoryLineageStore) -> None:
    role = Role(lineage)
    role.batch([signal(RAW, 5, 0, 0)])
    role.gate.decisions[sample.group("ltv")] = "NO-GO"
    role.batch([signal(RAW, 6, 0, 1)])  # a later evaluation, unchanged for churn: its time is recorded all the same
    role.gate.asked.clear()
    role.gate.decisions[sample.group("churn")] = "NO-GO"
    assert role.batch([signal(STG, 4, 1, 0, ok=False)]) == {}, "a late run's batch (day 4) is older than day 6"
    assert role.gate.asked == [], "not even asked"


def test_a_redo_publishes_again_what_an_undelivered_attempt_recorded_and_steady_state_nothing(
    lineage: MemoryLineageStore,
) -> None:
    role = Role(lineage)
    first = [signal(RAW, 2, 0, 0), signal(RAW, 3, 0, 1)]
    assert len(role.batch(first)) == len(VERSIONS + GROUPS)
    # The process died before the records were delivered (at-least-once: offsets not committed), so the same input
    # comes again, maybe in another batch: whatever the attempt recorded is published again.
    assert role.batch(first[1:]) == dict.fromkeys(VERSIONS + GROUPS, "GO")
    assert role.batch([signal(RAW, 4, 0, 2)]) == {}, "in steady state an unchanged decision is not published twice"


def test_a_redo_of_one_partition_publishes_again_what_its_signals_caused(lineage: MemoryLineageStore) -> None:
    role = Role(lineage)
    # One batch over two partitions; every model is caused by RAW (the last dataset touching it, by URN), on
    # partition 1, though the batch ends on partition 0.
    assert len(role.batch([signal(RAW, 2, 1, 5), signal(STG, 3, 0, 9)])) == len(VERSIONS + GROUPS)
    assert role.batch([signal(STG, 4, 0, 9)]) == {}, "partition 0 redone: it caused nothing recorded"
    assert role.batch([signal(RAW, 4, 1, 5)]) == dict.fromkeys(VERSIONS + GROUPS, "GO"), "partition 1 redone"
    assert role.batch([signal(RAW, 5, 1, 6)]) == {}


def test_a_score_redo_of_the_partition_that_caused_it_writes_it_again(lineage: MemoryLineageStore) -> None:
    """Before the scores role a write was recorded at the batch's last partition: redoing another partition's
    signals alone (the one that caused it) found no entry of its own and lost the write."""
    runs = MemoryRunHistory()
    batch = [signal(RAW, 3, 0, 4), signal(STG, 2, 1, 7)]  # the batch ends on partition 1
    for m in batch:
        runs.record(m.value.run)
    publisher = ScorePublisher(lineage, runs, MemoryScoreLedger())
    written = {w.urn: w for w in publisher.writes(batch)}
    assert RAW in written and written[RAW].cause == RAW
    redone = {w.urn for w in publisher.writes(batch[:1])}  # partition 0 redone alone, after an undelivered attempt
    assert RAW in redone
    assert publisher.writes([signal(RAW, 3, 0, 5)]) == [], "the next batch, nothing changed: nothing written"


def test_the_role_reads_run_signals_and_filters_lineage_signals() -> None:
    run = signal(RAW, 2, 0, 0).value
    raw = RawMessage(SIGNALS, 0, 0, RAW.encode(), encode(run))
    assert scores_role.decode(raw) == run
    lineage_signal = LineageSignal(RAW, ("urn:li:mlModel:x",), 5)
    assert scores_role.decode(RawMessage(SIGNALS, 0, 1, RAW.encode(), encode(lineage_signal))) is None
    spec = role_spec("scores")
    assert (spec.inputs, spec.delivery) == (("signals",), Delivery.AT_LEAST_ONCE)
    assert spec.outputs[0] == "gate", "the role creates the gate topic at start-up"


# --- the role in the embedded runner, on the demo recording -------------------------------------------------------


@pytest.fixture(scope="module")
def recorded() -> tuple[DemoSession, list[tuple[str, list[OutRecord]]]]:
    """Every step of the recording through every role (one signal per batch, as ``pareis demo`` runs them); per step,
    the gate records it produced in the order the role produced them. After each step, each model's latest record
    of the step is checked against the answers layer's gate over the roles' own stores at its evaluation time (an
    earlier record of the step may have been evaluated on fewer of the step's runs: a level, right when written)."""
    session = DemoSession(load_settings())
    sources = Sources(session.ports.lineage, session.ports.runs, session.ports.incidents, origin="demo")
    seen: set[tuple[int, int]] = set()
    out = []
    for step in steps_of(RECORDED):
        session.run(step)
        new = [r for r in session.broker.records(GATE) if (r.partition, r.offset) not in seen]
        seen.update((r.partition, r.offset) for r in new)
        produced = [OutRecord(GATE, r.key, r.value) for r in sorted(new, key=lambda r: r.offset)]
        latest = {r.key: r.value for r in produced}
        for key, value in latest.items():
            assert key is not None and value is not None
            model, at_ms = key.decode(), orjson.loads(value)["evaluated_at_ms"]
            assert value.decode() == dump(gate(sources, model=model, at_ms=at_ms).to_json()), (step.name, model)
        out.append((step.name, produced))
    return session, out


def test_the_gate_topic_carries_each_decision_change_once_as_the_cli_answers_it(
    recorded: tuple[DemoSession, list[tuple[str, list[OutRecord]]]],
) -> None:
    _, steps = recorded
    by_model: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for name, records in steps:
        for r in records:
            assert r.key is not None and r.value is not None
            answer = orjson.loads(r.value)
            by_model[r.key.decode()].append((name[:2], answer["decision"], answer.get("evaluated", "")))
    churn = sample.group("churn")  # the recording names its groups as the sample does
    assert churn in by_model, sorted(by_model)
    for model, changes in by_model.items():
        for before, after in itertools.pairwise(changes):
            assert before[1:] != after[1:], (model, changes)  # written only when the decision changes
    # The churn group (test_gate_demo.py pins the same answers step by step): NO-GO at the failing step (an active
    # incident reaches churn_3), GO after the repair, then the clean retrain churn_4 evaluated.
    decisions = [(step, decision, evaluated.rsplit(",", 2)[-2]) for step, decision, evaluated in by_model[churn]]
    assert [d for d in decisions if d[0] in ("10", "11")] == [("10", "GO", "churn_3"), ("11", "GO", "churn_4")]
    assert decisions[-3] == ("09", "NO-GO", "churn_3"), decisions


def test_the_compacted_topic_reads_as_the_cli_answers_on_the_recording(
    recorded: tuple[DemoSession, list[tuple[str, list[OutRecord]]]],
) -> None:
    """The latest record of every model — what a learner reads from the compacted topic — is, byte for byte, what
    ``pareis gate --model M --at T --json --metadata deploy/demo/recorded`` prints without its final newline (the CLI
    prints :func:`~pareis.answers.render.dump` of the answer over the files)."""
    _, steps = recorded
    latest = {r.key: r.value for _, records in steps for r in records}
    assert len(latest) == len(VERSIONS + GROUPS)
    for key, value in latest.items():
        assert key is not None and value is not None
        model, at_ms = key.decode(), orjson.loads(value)["evaluated_at_ms"]
        assert value.decode() == dump(gate(recorded_sources(), model=model, at_ms=at_ms).to_json()), model


def _score_writes(writer: MemoryWriter) -> list[bytes]:
    return [
        orjson.dumps(p.to_obj(), option=orjson.OPT_SORT_KEYS)
        for p in writer.proposals
        if p.aspectName == "structuredProperties" and RELIABILITY_SCORE in str(p.to_obj())
    ]


def test_the_scores_are_the_scores_roles_alone(recorded: tuple[DemoSession, list[tuple[str, list[OutRecord]]]]) -> None:
    session, _ = recorded
    assert _score_writes(session.writer), "the scores role wrote the reliability scores"
    assert session.runner.reports["scores"].handled > 0
    # Every role but the scores role, on the same recording: the incidents role writes no score (it never waits for
    # one), and everything else it writes is what it writes beside the scores role.
    settings = load_settings()
    broker = MemoryBroker(partitions=3)
    ports = Ports.in_memory([MemoryTicketer(tool) for tool in TOOLS])  # as the demo session's
    play = replayer(settings, broker, default_ms=0)
    others = [n for n in ROLE_NAMES if n != "scores"]
    with embedded_runner(settings, broker, ports, names=others) as runner:
        for step in steps_of(RECORDED):
            play.run(step.proposals)
            runner.run()
    assert isinstance(ports.datahub, MemoryWriter)
    assert _score_writes(ports.datahub) == []
    assert broker.size(GATE) == 0
    scores = set(_score_writes(session.writer))
    rest = [p for p in session.writer.proposals if orjson.dumps(p.to_obj(), option=orjson.OPT_SORT_KEYS) not in scores]
    assert [p.to_obj() for p in ports.datahub.proposals] == [p.to_obj() for p in rest]
