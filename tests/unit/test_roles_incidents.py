"""The incidents role's handler over in-memory ports and the sample's lineage: open, repeat, redo, REST path.

Expectations come from deploy/demo/sample/build_sample.py by DESIGN §2: the dbt test ``not_null_unit_price`` on
the dbt node of stg_transactions fails on days 6 and 7 after passing on days 2–4. Its column re-roots to
raw.transactions.unit_price, whose descendants reach the features avg_unit_price (from unit_price) and
total_spend (from line_total = quantity × unit_price): churn models use 2 of their 6 features (MEDIUM), ltv models
1 of 5 (LOW). Versions trained after the last success (day 4) are CONTAMINATED: churn_3 (day 5 06:00) and ltv_2
(day 6 12:00); churn_2 and ltv_1 are the rollbacks.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from pareis.compose.datahub import incidents_output
from pareis.config import DatahubSettings, Settings
from pareis.contracts.records import Message, OutRecord
from pareis.core import analysis, catalog
from pareis.core.analysis import model_versions
from pareis.core.graph import Adjacency, Attr, Memo, Outline, Query, Rel
from pareis.core.impact import BlastRadius, ModelImpact
from pareis.core.incident_urn import incident_urn
from pareis.core.lifecycle import IncidentState, Published, Status, Tracked
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.wire.codec import Decoder, Encoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.writer import DatahubWriter, KafkaWriter, MemoryWriter
from pareis.errors import Fatal, Retriable
from pareis.lineage_loader import load_files
from pareis.roles.effects import proposal
from pareis.roles.exposure import rebuild
from pareis.roles.incidents import IncidentsHandler
from pareis.roles.messages import DatahubWrite, RunSignal, TicketClose, TicketOpen, decode_effect
from pareis.store.exposure import MemoryExposureIndex
from pareis.store.incidents_memory import MemoryIncidentStore
from pareis.store.journal import MemoryStepJournal, Position
from pareis.store.lineage import Facts, LineageUpdate, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.runs_memory import MemoryRunHistory
from tests.support import sample
from tests.support.counting import Walks

SIGNALS, EFFECTS, MCP = "pareis.signals.v1", "pareis.effects.v1", "MetadataChangeProposal_v1"
B = sample.builder()
T0, DAY = B.T0, B.DAY
UNIT_PRICE, INVOICE, UNIQUE = (
    sample.assertion(t) for t in ("not_null_unit_price", "not_null_invoice", "unique_invoice_line")
)
KEY = sample.stg_warehouse()
INCIDENT = incident_urn(KEY, T0 + 6 * DAY)


@pytest.fixture(scope="module")
def sample_lineage() -> MemoryLineageStore:
    store = MemoryLineageStore()
    load_files(store, [sample.TIMELINE])
    return store


def run(assertion: str, day: int, ok: bool) -> AssertionRun:
    result = ResultType.SUCCESS if ok else ResultType.FAILURE
    return AssertionRun(
        assertion, T0 + day * DAY, result, sample.stg_dbt(), f"dbt-{T0 + day * DAY}", None if ok else 48_213
    )


class Harness:
    """The handler over fresh in-memory ports (the lineage index is the sample's), and a signal log."""

    def __init__(
        self,
        lineage: MemoryLineageStore,
        *,
        write_path: str = "kafka",
        writer: DatahubWriter | None = None,
    ):
        self.runs = MemoryRunHistory()
        self.incidents = MemoryIncidentStore()
        self.journal = MemoryStepJournal()
        self.settings = DatahubSettings(write_path=write_path)  # type: ignore[arg-type]
        self.writer = writer if writer is not None else KafkaWriter(Encoder(VendoredSchemaSource(), MCP), MCP)
        self.output = incidents_output(Settings(datahub=self.settings), self.writer, self.settings)  # the route
        self.handler = IncidentsHandler(
            lineage=lineage,
            runs=self.runs,
            incidents=self.incidents,
            journal=self.journal,
            output=self.output,
            datahub=self.settings,
            effects_topic=EFFECTS,
        )
        self.log: list[Message[RunSignal]] = []

    def arrive(self, *runs: AssertionRun) -> list[Message[RunSignal]]:
        """The assertions role's part: record the runs, append their signals to the log."""
        out = []
        for r in runs:
            self.runs.record(r)
            message = Message(SIGNALS, 0, len(self.log), KEY.encode(), RunSignal(KEY, r, r.timestamp_ms))
            self.log.append(message)
            out.append(message)
        return out

    def handle(self, batch: Sequence[Message[RunSignal]]) -> list[OutRecord]:
        return self.handler(batch)

    @property
    def state(self) -> IncidentState:
        return self.incidents.get(KEY)


def effects_of(out: Sequence[OutRecord]) -> list[Any]:
    return [decode_effect(r.value or b"") for r in out if r.topic == EFFECTS]


def mcp_aspects(out: Sequence[OutRecord]) -> list[tuple[str | None, str | None, Any]]:
    decoder = Decoder(VendoredSchemaSource())
    found = []
    for record in out:
        if record.topic == MCP:
            change = decoder.decode_mcp(record.value or b"")
            found.append((change.entity_urn, change.aspect_name, change.aspect_json()))
    return found


def history(h: Harness, *days: int) -> None:
    """Runs of the three tests on ``days`` (passing, except unit_price on days 6 and 7), recorded and signalled."""
    for day in days:
        h.arrive(*(run(a, day, ok=a != UNIT_PRICE or day not in (6, 7)) for a in (UNIT_PRICE, INVOICE, UNIQUE)))


def test_the_first_failure_opens_the_incident_with_the_sample_analysis(sample_lineage: MemoryLineageStore) -> None:
    h = Harness(sample_lineage)
    history(h, 2, 3, 4)
    assert h.handle(h.log) == []
    assert h.state.status is Status.CLEAR
    out = h.handle(h.arrive(run(UNIT_PRICE, 6, ok=False)))

    (ticket,) = effects_of(out)
    assert isinstance(ticket, TicketOpen) and ticket.incident == INCIDENT
    assert ticket.ticket.severity.value == "MEDIUM"
    assert [r.key for r in out if r.topic == EFFECTS] == [INCIDENT.encode()]
    info = next(a for urn, name, a in mcp_aspects(out) if name == "incidentInfo")
    assert info["priority"] == 2 and info["status"]["state"] == "ACTIVE"
    assert info["source"]["sourceUrn"] == UNIT_PRICE and info["startedAt"] == T0 + 6 * DAY
    assert info["entities"] == [KEY], "no ML entity takes incidents unless datahub.ml_incident_types says so"
    models = [sample.model("churn", v) for v in (1, 2, 3, 4)] + [sample.model("ltv", v) for v in (1, 2)]

    published = h.state.incident.published.to_json() if h.state.incident else {}
    assert h.state.status is Status.ACTIVE and h.state.incident and h.state.incident.urn == INCIDENT
    assert published["last_success_ms"] == T0 + 4 * DAY and published["failed_rows"] == 48_213
    assert dict(map(tuple, published["contamination"])) == {
        sample.model("churn", 1): "CLEAN",
        sample.model("churn", 2): "CLEAN",
        sample.model("churn", 3): "CONTAMINATED",
        sample.model("churn", 4): "CONTAMINATED",
        sample.model("ltv", 1): "CLEAN",
        sample.model("ltv", 2): "CONTAMINATED",
    }
    assert published["rollback"] == [
        [sample.group("churn"), sample.model("churn", 2)],
        [sample.group("ltv"), sample.model("ltv", 1)],
    ]
    assert sorted(published["at_risk"]) == sorted(
        [*models, sample.feature("avg_unit_price"), sample.feature("total_spend")]
    )


def test_a_repeated_signal_emits_nothing(sample_lineage: MemoryLineageStore) -> None:
    h = Harness(sample_lineage)
    history(h, 2, 3, 4, 6)
    assert effects_of(h.handle(h.log))
    state = h.state
    again = [Message(SIGNALS, 0, m.offset + 100, m.key, m.value) for m in h.log]
    assert h.handle(again) == []
    assert h.state == state


def test_healing_resolves_and_the_ticket_closes_with_the_postmortem(sample_lineage: MemoryLineageStore) -> None:
    h = Harness(sample_lineage)
    history(h, 2, 3, 4, 6, 7)
    h.handle(h.log)
    out = h.handle(h.arrive(run(UNIT_PRICE, 8, ok=True)))
    (close,) = effects_of(out)
    assert isinstance(close, TicketClose) and close.incident == INCIDENT and close.text
    names = [name for _, name, _ in mcp_aspects(out)]
    assert names[0] == "incidentInfo" and names[-1] == "documentInfo"
    assert mcp_aspects(out)[0][2]["status"]["state"] == "RESOLVED"
    assert h.state.status is Status.RESOLVED


def test_a_redone_batch_yields_byte_identical_outputs(sample_lineage: MemoryLineageStore) -> None:
    """A transaction aborts after the state was saved: the redo must not start from the saved state."""
    h = Harness(sample_lineage)
    history(h, 2, 3, 4, 6)
    first = h.handle(h.log)
    history(h, 7, 8)
    second = h.handle(h.log[12:])
    assert h.state.status is Status.RESOLVED
    final = h.state
    # The runtime rewinds to offset 0 (neither transaction committed) and redoes both batches.
    assert h.handle(h.log[:12]) == first
    assert h.handle(h.log[12:]) == second
    assert h.state == final


def test_without_the_journal_a_redo_would_lose_the_open(sample_lineage: MemoryLineageStore) -> None:
    """The counterfactual that makes the journal necessary: the same redo, journal emptied, emits nothing."""
    h = Harness(sample_lineage)
    history(h, 2, 3, 4, 6)
    assert effects_of(h.handle(h.log))
    h.journal = MemoryStepJournal()
    h.handler._journal = h.journal
    assert h.handle(h.log) == []


def test_a_redo_replays_journaled_steps_and_skips_the_no_ops_between(sample_lineage: MemoryLineageStore) -> None:
    h = Harness(sample_lineage)
    history(h, 2, 3, 4)
    h.handle(h.log)
    opened = h.handle(h.arrive(run(UNIT_PRICE, 6, ok=False)))  # offset 9
    assert h.handle(h.arrive(run(INVOICE, 6, ok=True))) == []  # offset 10: a no-op
    resolved = h.handle(h.arrive(run(UNIT_PRICE, 8, ok=True)))  # offset 11
    # A redo from offset 9 in one batch: the open and the resolve, byte for byte, nothing for the no-op.
    assert h.handle(h.log[9:]) == opened + resolved
    # One more signal after the redo is computed afresh from the replayed state.
    assert h.handle(h.arrive(run(INVOICE, 8, ok=True))) == []
    assert h.state.status is Status.RESOLVED


def test_a_late_run_sees_its_own_blind_window(sample_lineage: MemoryLineageStore) -> None:
    """Signals of different assertions travel on different partitions: day 7 of two tests arrives first."""
    h = Harness(sample_lineage)
    history(h, 2, 3, 4)
    h.handle(h.log)
    h.handle(h.arrive(run(INVOICE, 6, ok=True), run(UNIQUE, 6, ok=True), run(INVOICE, 7, ok=True)))
    out = h.handle(h.arrive(run(UNIT_PRICE, 6, ok=False)))
    assert isinstance(effects_of(out)[0], TicketOpen)
    assert h.state.incident and h.state.incident.published.last_success_ms == T0 + 4 * DAY


def test_the_rest_path_sends_the_same_proposals_as_effects(sample_lineage: MemoryLineageStore) -> None:
    via_kafka = Harness(sample_lineage, writer=MemoryWriter())
    history(via_kafka, 2, 3, 4, 6)
    kafka_out = via_kafka.handle(via_kafka.log)
    assert [r.topic for r in kafka_out] == [EFFECTS], "the memory writer took the proposals"
    via_rest = Harness(sample_lineage, write_path="rest")
    history(via_rest, 2, 3, 4, 6)
    rest_out = via_rest.handle(via_rest.log)
    assert {r.topic for r in rest_out} == {EFFECTS} and all(r.key == INCIDENT.encode() for r in rest_out)
    *writes, ticket = effects_of(rest_out)
    assert isinstance(ticket, TicketOpen)
    assert all(isinstance(w, DatahubWrite) for w in writes)
    assert [w.effect_id.rsplit("/", 1)[1] for w in writes] == [str(i) for i in range(len(writes))]
    assert len({w.effect_id for w in writes}) == len(writes)
    assert isinstance(via_kafka.writer, MemoryWriter)
    expected = [orjson.loads(orjson.dumps(m.to_obj())) for m in via_kafka.writer.proposals]
    assert [orjson.loads(orjson.dumps(proposal(w).to_obj())) for w in writes] == expected


def test_an_assertion_without_an_indexed_definition_covers_its_whole_dataset(
    sample_lineage: MemoryLineageStore,
) -> None:
    h = Harness(sample_lineage)
    unknown = "urn:li:assertion:not-indexed"
    h.handle(h.arrive(AssertionRun(unknown, T0 + 6 * DAY, ResultType.FAILURE, sample.stg_dbt())))
    published = h.state.incident.published.to_json() if h.state.incident else {}
    # Every column of stg_transactions is failing: each feature is poisoned, every model is HIGH.
    assert published["severity"] == "HIGH"
    assert {sample.feature(f) for f in B.CHURN_FEATURES} <= set(published["at_risk"])


def test_stores_that_disagree_stop_the_role(sample_lineage: MemoryLineageStore) -> None:
    h = Harness(sample_lineage)
    gone = IncidentState(KEY, Status.ACTIVE, T0, Tracked(INCIDENT, T0, T0, 1, Published(assertions=(UNIT_PRICE,))))
    h.incidents.put(gone)  # ACTIVE, but the run that opened it is not in the history
    with pytest.raises(Fatal, match="inconsistent"):
        h.handle(h.arrive(run(INVOICE, 9, ok=True)))


def test_a_model_in_no_group_is_its_own_group_with_its_training_time() -> None:
    store = MemoryLineageStore()
    solo = "urn:li:mlModel:(urn:li:dataPlatform:sagemaker,fraud,PROD)"
    training = "urn:li:dataProcessInstance:train-1"
    store.apply(
        [
            LineageUpdate(solo, "mlModelProperties", Stamp(1, 1), Facts.of([(Rel.TRAINS, training, solo)])),
            LineageUpdate(
                training, "dataProcessInstanceProperties", Stamp(1, 1), Facts.of(attrs={Attr.RUN_STARTED_MS: "777"})
            ),
        ]
    )
    radius = BlastRadius((), (), (), (), (), (ModelImpact(solo, None, (), 0, "table"),))
    ((group, (version,)),) = model_versions(store, [radius]).items()
    assert group == solo and version.urn == solo and version.group is None and version.trained_at_ms == 777


class FailingPuts(MemoryIncidentStore):
    """An incident store whose next ``put`` calls fail (a crash or a Redis error between journal and store)."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 0

    def put(self, state: IncidentState) -> None:
        if self.failures:
            self.failures -= 1
            raise Retriable("redis down between the journal write and the state write")
        super().put(state)


def test_a_redo_after_the_state_write_failed_saves_the_replayed_state(sample_lineage: MemoryLineageStore) -> None:
    """The journal is written, the state write fails, the batch is redone (replayed from the journal): the store must
    hold the replayed state, or the next signal starts from the old one and opens the same incident again."""
    h = Harness(sample_lineage)
    store = FailingPuts()
    h.incidents = store
    h.handler._incidents = store
    history(h, 2, 3, 4)
    h.handle(h.log)
    batch = h.arrive(run(UNIT_PRICE, 6, ok=False))
    store.failures = 1
    with pytest.raises(Retriable):
        h.handle(batch)
    opened = h.handle(batch)  # the runtime's redo of the aborted batch
    assert [type(e) for e in effects_of(opened)] == [TicketOpen]
    assert h.state.status is Status.ACTIVE
    h.journal.release(SIGNALS, 0, len(h.log))  # the redo's transaction committed
    later = h.handle(h.arrive(run(UNIT_PRICE, 7, ok=False)))
    assert not [e for e in effects_of(later) if isinstance(e, TicketOpen)]


def test_a_batch_interleaving_datasets_gives_the_outputs_of_one_signal_at_a_time(
    sample_lineage: MemoryLineageStore,
) -> None:
    """A batch interleaving several datasets' signals (each dataset's chained in memory): the records, the journal
    and the states that handling one signal at a time gives, in the batch's order."""
    others = [f"urn:li:dataset:(urn:li:dataPlatform:postgres,shop.other_{i},PROD)" for i in range(5)]

    def interleaved(h: Harness) -> list[Message[RunSignal]]:
        history(h, 2, 3, 4)
        batch = list(h.log)
        for day in (5, 6, 7, 8):
            for i, d in enumerate(others):
                r = AssertionRun(
                    f"urn:li:assertion:other-{i}",
                    T0 + day * DAY,
                    ResultType(("SUCCESS", "FAILURE")[(day + i) % 2]),
                    d,
                    f"r-{day}-{i}",
                )
                h.runs.record(r)
                batch.append(Message(SIGNALS, 0, len(batch), d.encode(), RunSignal(d, r, r.timestamp_ms)))
            unit_price = run(UNIT_PRICE, day, ok=day in (5, 8))
            h.runs.record(unit_price)
            batch.append(
                Message(SIGNALS, 0, len(batch), KEY.encode(), RunSignal(KEY, unit_price, unit_price.timestamp_ms))
            )
        return batch

    one, many = Harness(sample_lineage), Harness(sample_lineage)
    first, second = interleaved(one), interleaved(many)
    assert first == second
    out = [record for message in first for record in one.handle([message])]
    kinds = [type(e) for e in effects_of(out)]
    assert kinds.count(TicketOpen) > 1 and TicketClose in kinds  # several datasets open, some resolve
    got = many.handle(second)
    assert got == out
    for d in [KEY, *others]:
        assert many.incidents.get(d) == one.incidents.get(d)
    assert many.journal.entries_of({d: Position(SIGNALS, 0, 0) for d in [KEY, *others]}) == one.journal.entries_of(
        {d: Position(SIGNALS, 0, 0) for d in [KEY, *others]}
    )


RECORDED = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "recorded"


class CountingView:
    """A lineage view that counts the questions asked of it (one per round trip on Redis)."""

    def __init__(self, view: MemoryLineageStore) -> None:
        self.view, self.lookups = view, 0

    def lookup(self, queries: Sequence[Query]) -> list[Adjacency]:
        self.lookups += 1
        return self.view.lookup(queries)

    def attributes(self, nodes: Collection[str]) -> Mapping[str, Mapping[str, str]]:
        return self.view.attributes(nodes)

    def attribute(self, nodes: Collection[str], name: Attr) -> Mapping[str, str | None]:
        return self.view.attribute(nodes, name)

    def outlines(self, datasets: Collection[str]) -> Mapping[str, Outline]:
        self.lookups += 1
        return self.view.outlines(datasets)


class CountingRuns:
    """A run history that counts the calls of each method."""

    def __init__(self, inner: MemoryRunHistory) -> None:
        self.inner = inner
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        self.calls[name] = self.calls.get(name, 0) + 1
        return getattr(self.inner, name)


def recording_failures() -> tuple[MemoryLineageStore, dict[str, str], int]:
    """The demo recording's index, one defined assertion per dataset it checks, and a time after every run."""
    store = MemoryLineageStore()
    loaded = load_files(store, sorted(RECORDED.glob("*.json")))
    defs = catalog.assertions(store, store.entities("assertionInfo"))
    by_dataset: dict[str, str] = {}
    for urn, d in sorted(defs.items()):
        if d.datasets:
            by_dataset.setdefault(d.datasets[0], urn)
    return store, by_dataset, max(r.timestamp_ms for r in loaded.runs) + DAY


def failures(h: Harness, by_dataset: Mapping[str, str], at: int) -> list[Message[RunSignal]]:
    """A FAILURE of each dataset's assertion from ``at`` on, recorded in ``h``'s run history, as one batch."""
    batch = []
    for i, (dataset, assertion) in enumerate(sorted(by_dataset.items())):
        r = AssertionRun(assertion, at + i, ResultType.FAILURE, dataset, f"bad-{i}")
        h.runs.record(r)
        batch.append(Message(SIGNALS, 0, i, dataset.encode(), RunSignal(dataset, r, r.timestamp_ms)))
    return batch


def test_a_batch_reads_its_signals_run_histories_in_a_fixed_number_of_round_trips() -> None:
    """Failures of several datasets in one batch: their sibling classes' assertions and their timelines are read
    once for the batch (before, a timeline and an assertions_of per member per signal), with the same outputs as
    one signal per batch."""
    store, by_dataset, at = recording_failures()

    def outputs(batched: bool) -> tuple[list[OutRecord], dict[str, int]]:
        h = Harness(store)
        runs = CountingRuns(h.runs)
        h.handler = IncidentsHandler(
            lineage=store, runs=runs, incidents=h.incidents, journal=h.journal, output=h.output,  # type: ignore[arg-type]
            datahub=h.settings, effects_topic=EFFECTS,
        )  # fmt: skip
        batch = failures(h, by_dataset, at)
        out = h.handle(batch) if batched else [o for m in batch for o in h.handle([m])]
        return out, runs.calls

    together, asked = outputs(True)
    alone, _ = outputs(False)
    assert together == alone and len(by_dataset) >= 4
    assert (asked.get("timelines"), asked.get("assertions_by_dataset")) == (1, 1)
    assert asked.get("timeline", 0) == asked.get("assertions_of", 0) == 0


def test_a_batch_walks_its_failures_together_and_answers_as_each_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Failures of several datasets in one batch: their blast radii are walked as one (far fewer questions to
    the index than one walk each), and the outputs are those of the walks one by one."""
    store, by_dataset, at = recording_failures()
    assert len(by_dataset) >= 4

    def outputs(together: bool) -> tuple[list[OutRecord], int]:
        if not together:
            monkeypatch.setattr(analysis, "walk_together", lambda view, failing: None)
        view = CountingView(store)
        h = Harness(store)
        h.handler = IncidentsHandler(
            lineage=view, runs=h.runs, incidents=h.incidents, journal=h.journal, output=h.output,
            datahub=h.settings, effects_topic=EFFECTS,
        )  # fmt: skip
        batch = failures(h, by_dataset, at)
        out = h.handle(batch)
        monkeypatch.undo()
        return out, view.lookups

    together, asked_together = outputs(True)
    alone, asked_alone = outputs(False)
    assert together == alone and len(effects_of(together)) >= 4
    assert asked_together < asked_alone


def test_a_batch_reads_the_radii_the_exposure_index_keeps_and_answers_as_walked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Failures of several datasets, in one batch and one signal per batch: with the exposure index's snapshot of the
    current lineage generation, every blast radius is read from it (pareis.core.radii), none walked, and the outputs
    are those of the walks, byte for byte; once the lineage moved past the snapshot, they are walked again."""
    store, by_dataset, at = recording_failures()
    index = MemoryExposureIndex()
    assert rebuild(store, index, None, at) is not None
    walked = Walks(monkeypatch, analysis)  # where the role asks for its analyses

    def outputs(exposure: MemoryExposureIndex | None, batched: bool) -> tuple[list[OutRecord], int]:
        walked.count = 0
        h = Harness(store)
        h.handler = IncidentsHandler(
            lineage=store, runs=h.runs, incidents=h.incidents, journal=h.journal, output=h.output,
            datahub=h.settings, effects_topic=EFFECTS, exposure=exposure,
        )  # fmt: skip
        batch = failures(h, by_dataset, at)
        out = h.handle(batch) if batched else [o for m in batch for o in h.handle([m])]
        return out, walked.count

    for batched in (True, False):
        walked_out, walks = outputs(None, batched)
        assert walks >= len(by_dataset) >= 4
        assert outputs(index, batched) == (walked_out, 0), "every radius read from the snapshot, none walked"
        index.touch()  # a lineage change after the snapshot: its radii may no longer hold
        assert outputs(index, batched) == (walked_out, walks)
        assert rebuild(store, index, None, at) is not None


def test_a_batchs_analyses_take_what_the_batch_read_for_them_and_answer_as_alone() -> None:
    """Failures of several datasets in one batch: each signal's analysis takes the versions, owners and serving facts
    the batch's shared analysis read (pareis.core.analysis.shared_analysis) instead of building them again — the very
    values, not equal ones built anew — and the outputs are those of one signal per batch."""
    store, by_dataset, at = recording_failures()
    alone_h = Harness(store)
    alone = [o for m in failures(alone_h, by_dataset, at) for o in alone_h.handle([m])]
    h = Harness(store)
    assert h.handle(failures(h, by_dataset, at)) == alone and len(by_dataset) >= 4
    view = Memo(store)
    runs = [m.value.run for m in failures(Harness(store), by_dataset, at)]
    batch = analysis.shared_analysis(view, runs, runs)
    taken = {"versions": 0, "owners": 0, "serving": 0}
    for run in runs:
        inputs = analysis.analysis_inputs(view, (run,), (run,), known=batch.blast, batch=batch)
        for name in taken:
            mine, read = getattr(inputs, name), getattr(batch, name)
            assert all(value is read[key] for key, value in mine.items()), name
            taken[name] += sum(1 for value in mine.values() if value)
    assert taken["versions"] and taken["serving"], taken  # (the recording's owners are of other entities)
