"""End to end on embedded backends: the bundled sample timeline through lineage → assertions → incidents → effects.

What the sample's builder (deploy/demo/sample/build_sample.py) scripts, and what DESIGN's rules make of it:

* three dbt tests assert the dbt node of stg_transactions; its warehouse sibling (postgres) is the incident key;
* ``not_null_unit_price`` passes on days 2–4, fails on days 6 and 7 (48,213 rows), passes on day 8: one incident,
  URN = guid(warehouse table, day 6), opened on day 6 and resolved on day 8, the blind window (day 4, day 6];
* unit_price feeds the features avg_unit_price (directly) and total_spend (through line_total): churn uses 2 of 6
  features → MEDIUM, ltv 1 of 5 → LOW; incident severity MEDIUM, DataHub priority 2;
* versions trained after day 4 and before day 8 are CONTAMINATED — churn_3 (day 5, 06:00), ltv_2 (day 6,
  12:00) and churn_4 (day 7, 12:00, registered while the incident is active) — and stay BLOCKED after the heal; the
  others go back to OK; rollbacks churn_2 and ltv_1.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest

from pareis.compose.datahub import start_up_mcps
from pareis.compose.ports import Ports
from pareis.compose.replay import replayer
from pareis.compose.roles import embedded_runner
from pareis.config import DatahubSettings, Settings
from pareis.contracts.records import header
from pareis.core.blast import blast_radius
from pareis.core.incident_urn import incident_urn
from pareis.core.lifecycle import Status
from pareis.core.names import short_name
from pareis.datahub.writes.definitions import CONTAMINATION_URN, RELIABILITY_SCORE_URN, RETRAIN_STATUS_URN
from pareis.datahub.writes.writer import Mcp, MemoryWriter
from pareis.kafka.dlq import ERROR_REASON, ROLE
from pareis.kafka.embedded import RoleReport
from pareis.kafka.memory import MemoryBroker
from pareis.lineage_loader import load_files
from pareis.roles.messages import TicketClose, TicketOpen, decode_effect, decode_signal
from pareis.store.journal import MemoryStepJournal
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.tickets.memory import MemoryTicketer
from tests.support import sample

B = sample.builder()
T0, DAY = B.T0, B.DAY
KEY = sample.stg_warehouse()
INCIDENT = incident_urn(KEY, T0 + 6 * DAY)
TOOLS = ("slack", "jira", "linear")
CHURN = [sample.model("churn", v) for v in (1, 2, 3, 4)]
LTV = [sample.model("ltv", v) for v in (1, 2)]


class Flow:
    """The sample replayed into a fresh broker and run through every role on fresh in-memory ports."""

    def __init__(
        self,
        write_path: str = "kafka",
        garbage: bool = False,
        timeline: Path = sample.TIMELINE,
        ml_types: list[str] | None = None,
    ) -> None:
        self.timeline = timeline
        datahub = DatahubSettings(write_path=write_path, ml_incident_types=ml_types)  # type: ignore[arg-type]
        self.settings = Settings(datahub=datahub)
        self.broker = MemoryBroker(partitions=3)
        self.replay()
        if garbage:
            self.broker.append(self.settings.kafka.topics.mcl_timeseries, b"urn:li:assertion:x", b"\x00garbage")
        self.ports = Ports.in_memory([MemoryTicketer(t) for t in TOOLS])
        self.runner = embedded_runner(self.settings, self.broker, self.ports)

    def replay(self) -> None:
        replayer(self.settings, self.broker, default_ms=0).run_files([self.timeline])

    def run(self) -> dict[str, RoleReport]:
        return self.runner.run()

    @property
    def writer(self) -> MemoryWriter:
        assert isinstance(self.ports.datahub, MemoryWriter)
        return self.ports.datahub

    def values(self, topic: str) -> list[bytes]:
        return [r.value or b"" for r in self.broker.records(topic)]

    def incident_infos(self) -> list[dict[str, Any]]:
        return [aspect(m) for m in self.writer.proposals if m.aspectName == "incidentInfo"]


def aspect(mcp: Mcp) -> Any:
    """The proposal's aspect as JSON (a wrapper's typed aspect and a raw class's bytes alike)."""
    return orjson.loads(mcp.to_obj()["aspect"]["value"])


@pytest.fixture(scope="module")
def flow() -> Flow:
    flow = Flow()
    flow.run()
    return flow


def test_one_incident_keyed_by_the_warehouse_sibling_is_opened_then_resolved(flow: Flow) -> None:
    state = flow.ports.incidents.get(KEY)
    assert state.status is Status.RESOLVED and state.incident is not None and state.incident.urn == INCIDENT
    assert flow.ports.incidents.get(sample.stg_dbt()).status is Status.CLEAR, "the dbt node is no incident key"
    infos = flow.incident_infos()
    assert [i["status"]["state"] for i in infos] == ["ACTIVE", "RESOLVED"]
    assert {m.entityUrn for m in flow.writer.proposals if m.aspectName == "incidentInfo"} == {INCIDENT}
    opened = infos[0]
    assert opened["priority"] == 2 and opened["customType"] == "ML_DATA_QUALITY"
    assert opened["entities"] == [KEY], "no ML entity takes incidents unless the server says it does"
    assert opened["startedAt"] == T0 + 6 * DAY and opened["status"]["lastUpdated"]["time"] == T0 + 6 * DAY
    assert infos[1]["status"]["lastUpdated"]["time"] == T0 + 8 * DAY
    assert opened["source"]["sourceUrn"] == sample.assertion("not_null_unit_price")


def test_the_journal_is_released_once_its_signals_are_committed(flow: Flow) -> None:
    assert isinstance(flow.ports.journal, MemoryStepJournal)
    assert len(flow.ports.journal) == 0, "every signal is committed: nothing can be redone"


def test_signals_are_keyed_by_the_canonical_sibling(flow: Flow) -> None:
    signals = list(flow.broker.records(flow.settings.kafka.topics.signals))
    assert len(signals) == 3 * 6, "three tests on days 2, 3, 4, 6, 7, 8"
    assert {s.key for s in signals} == {KEY.encode()}
    assert {decode_signal(s.value or b"").run.dataset for s in signals} == {sample.stg_dbt()}


def test_the_blast_radius_is_churn_and_ltv_through_two_features(flow: Flow) -> None:
    (opened,) = [e.ticket for e in map(decode_effect, flow.values("pareis.effects.v1")) if isinstance(e, TicketOpen)]
    assert opened.severity.value == "MEDIUM"
    for urn in CHURN:
        assert f"- {short_name(urn)}: MEDIUM, 2/6 feature(s) poisoned" in opened.body
    for urn in LTV:
        assert f"- {short_name(urn)}: LOW, 1/5 feature(s) poisoned" in opened.body
    assert opened.brief is not None and opened.brief.sections[0].title == "Decision", "decision first"
    tagged = {m.entityUrn for m in flow.writer.proposals if m.aspectName == "globalTags"}
    features = {sample.feature("avg_unit_price"), sample.feature("total_spend")}
    assert tagged == {*CHURN, *LTV, *features}
    assert "last known good 2025-10-05T00:00:00.000Z, first failure 2025-10-07T00:00:00.000Z" in opened.body


def property_writes(writer: MemoryWriter) -> list[tuple[str, str, str | float]]:
    """(entity, structured property, value) of every PATCH proposal, in write order."""
    out: list[tuple[str, str, str | float]] = []
    for m in writer.proposals:
        if m.aspectName == "structuredProperties":
            for op in aspect(m)["patch"]:
                value = op["value"]
                (typed,) = value["values"][0].values()  # {"string": …} or {"double": …}
                out.append((str(m.entityUrn), value["propertyUrn"], typed))
    return out


def final_properties(writer: MemoryWriter) -> dict[tuple[str, str], str | float]:
    """Each (entity, structured property) → its last value, from the PATCH proposals in write order."""
    return {(urn, prop): value for urn, prop, value in property_writes(writer)}


def test_reliability_scores_are_written_on_datasets_and_models_only_when_they_change(flow: Flow) -> None:
    writes = [(u, v) for u, p, v in property_writes(flow.writer) if p == RELIABILITY_SCORE_URN]
    written = {u for u, _ in writes}
    assert {*CHURN, *LTV} <= written
    assert any(u.startswith("urn:li:dataset:") for u in written)
    last: dict[str, str | float] = {}
    for urn, value in writes:
        assert isinstance(value, float) and 0.0 <= value <= 100.0
        assert last.get(urn) != value, f"{urn} rewritten with an unchanged score {value}"
        last[urn] = value


def test_verdicts_retrain_statuses_and_rollbacks(flow: Flow) -> None:
    props = final_properties(flow.writer)
    contaminated = {sample.model("churn", 3), sample.model("churn", 4), sample.model("ltv", 2)}
    for urn in CHURN + LTV:
        assert props[(urn, CONTAMINATION_URN)] == ("CONTAMINATED" if urn in contaminated else "CLEAN")
        assert props[(urn, RETRAIN_STATUS_URN)] == ("BLOCKED" if urn in contaminated else "OK")
    closed = [e for e in map(decode_effect, flow.values("pareis.effects.v1")) if isinstance(e, TicketClose)]
    assert len(closed) == 1
    (doc,) = [m for m in flow.writer.proposals if m.aspectName == "documentInfo"]
    text = aspect(doc)["contents"]["text"]
    assert "- Safe rollback: churn → churn_2; ltv → ltv_1\n" in text, "the rollbacks"


def test_exactly_one_ticket_per_tool_opened_and_closed(flow: Flow) -> None:
    for tool in flow.ports.ticketers:
        assert isinstance(tool, MemoryTicketer)
        (ticket,) = tool.tickets
        assert ticket.incident.incident_urn == INCIDENT and ticket.closed
        assert len(ticket.comments) == 1, "the closing postmortem; no update happened"


def test_replaying_the_timeline_again_changes_nothing_downstream(flow: Flow) -> None:
    effects_before = flow.values("pareis.effects.v1")
    proposals_before = len(flow.writer.proposals)
    flow.replay()  # every run again (duplicates by assertion + timestamp), every lineage aspect again
    reports = flow.run()
    # The lineage aspects come again with their stamps (REPEATED): their signals to the active incidents are due
    # again (a redo may be delivering them for the first time), and the incidents role finds nothing new in them.
    resignalled = len(reports["lineage"].produced)
    assert resignalled > 0
    assert reports["assertions"].consumed == 2 * 18 and reports["incidents"].consumed == 2 * 18 + resignalled
    assert flow.values("pareis.effects.v1") == effects_before
    assert len(flow.writer.proposals) == proposals_before
    assert all(len(t.tickets) == 1 for t in flow.ports.ticketers if isinstance(t, MemoryTicketer))


def proposals(flow: Flow) -> list[bytes]:
    """The proposals written, as canonical JSON (map keys sorted: they carry no order)."""
    return [orjson.dumps(m.to_obj(), option=orjson.OPT_SORT_KEYS) for m in flow.writer.proposals]


def signature(flow: Flow) -> tuple[list[bytes], list[bytes]]:
    return flow.values("pareis.effects.v1"), proposals(flow)


def test_two_runs_write_the_same_bytes() -> None:
    first, second = Flow(), Flow()
    first.run()
    second.run()
    assert signature(first) == signature(second)


def test_the_rest_path_writes_the_same_proposals_through_the_effects_role() -> None:
    via_kafka, via_rest = Flow(ml_types=[]), Flow(write_path="rest", ml_types=[])
    via_kafka.run()
    reports = via_rest.run()

    # Incident writes keep their order (one key per incident); score writes are keyed by their dataset, so only
    # their order per entity is kept across the effects topic's partitions. incidentInfo apart: the Kafka path
    # leaves it alone on an Update that changed only the failed rows (it cannot keep human edits), REST does not.
    def split(flow: Flow) -> tuple[list[bytes], dict[str, list[bytes]], list[bytes]]:
        incident, scores, infos = [], defaultdict(list), []
        for m, raw in zip(flow.writer.proposals, proposals(flow), strict=True):
            if RELIABILITY_SCORE_URN.encode() in raw:
                scores[str(m.entityUrn)].append(raw)
            elif m.aspectName == "incidentInfo":
                infos.append(raw)
            else:
                incident.append(raw)
        return incident, scores, infos

    rest, kafka = split(via_rest), split(via_kafka)
    assert rest[:2] == kafka[:2]
    remaining = iter(rest[2])
    assert all(info in remaining for info in kafka[2]), "the Kafka path's incidentInfo writes are the REST path's"
    assert len(kafka[2]) >= 2, "Open and Resolve at least"
    kinds = defaultdict(int)
    for effect in map(decode_effect, via_rest.values("pareis.effects.v1")):
        kinds[effect.kind] += 1
    assert kinds["ticket.open"] == kinds["ticket.close"] == 1
    start_up = len(start_up_mcps(Settings()))
    copies = [m for m in via_rest.writer.proposals if m.aspectName in ("incidentExternalLinks", "incidentNotes")]
    assert copies, "the effects role copied the tickets into DataHub"
    assert kinds["datahub.write"] == len(via_rest.writer.proposals) - start_up - len(copies), (
        "all but the start-up proposals and the tickets' copies (which only the effects role knows)"
    )
    assert reports["effects"].dead == 0


def test_where_the_server_accepts_incidents_on_models_they_carry_it_in_a_write_apart() -> None:
    flow = Flow(write_path="rest")  # no setting: the start-up probe asks the (in-memory, accepting) server
    flow.run()
    infos = [(m.entityUrn, aspect(m)) for m in flow.writer.proposals if m.aspectName == "incidentInfo"]
    probes = [info for urn, info in infos if urn != INCIDENT]
    assert [p["entities"] for p in probes][-1] == [], "the probe incident is left on no entity"
    mine = [info["entities"] for urn, info in infos if urn == INCIDENT]
    assert mine[0] == [KEY], "the dataset's incident first: a refusal of the next write cannot undo it"
    assert mine[1][0] == KEY and set(CHURN + LTV) <= set(mine[1]), "then the same incident on the model versions"
    assert not any(e.startswith("urn:li:mlModelGroup:") for entities in mine for e in entities)


def test_a_poison_change_log_message_is_dead_lettered_and_the_flow_goes_on() -> None:
    flow = Flow(garbage=True)
    reports = flow.run()
    assert reports["assertions"].dead == 1
    (dead,) = list(flow.broker.records(flow.settings.kafka.topics.dlq))
    assert dead.value == b"\x00garbage" and header(dead.headers, ROLE) == b"assertions"
    assert [i["status"]["state"] for i in flow.incident_infos()] == ["ACTIVE", "RESOLVED"]


FEATURES_DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.analytics.customer_features,PROD)"


def test_one_malformed_lineage_entry_keeps_the_rest_indexed_and_marks_the_incident(tmp_path: Path) -> None:
    timeline = orjson.loads(sample.TIMELINE.read_bytes())
    (lineage,) = [c for c in timeline if c["entityUrn"] == FEATURES_DBT and c["aspectName"] == "upstreamLineage"]
    bad = {"upstreamType": "FIELD_SET", "downstreamType": "FIELD", "downstreams": ["customer_id"], "upstreams": []}
    lineage["aspect"]["json"]["fineGrainedLineages"].insert(0, bad)
    path = tmp_path / "timeline.json"
    path.write_bytes(orjson.dumps(timeline))
    flow = Flow(timeline=path)
    flow.run()
    (opened,) = [e.ticket for e in map(decode_effect, flow.values("pareis.effects.v1")) if isinstance(e, TicketOpen)]
    assert opened.severity.value == "MEDIUM", "the valid entries are indexed: the same blast radius as clean"
    for urn in CHURN:
        assert f"- {short_name(urn)}: MEDIUM, 2/6 feature(s) poisoned" in opened.body
    for urn in LTV:
        assert f"- {short_name(urn)}: LOW, 1/5 feature(s) poisoned" in opened.body
    assert f"Lineage incomplete: part of the lineage of {short_name(FEATURES_DBT)}" in opened.body
    assert flow.incident_infos()[0]["description"] == opened.body
    (letter,) = list(flow.broker.records(flow.settings.kafka.topics.dlq))
    assert header(letter.headers, ERROR_REASON) == b"lineage-incomplete"
    ((entry,), ((where, _why),)) = (orjson.loads(letter.value or b"")[k] for k in ("entries", "errors"))
    assert entry["downstreams"] == ["customer_id"] and where == "fineGrainedLineages[0]", "the bad part, named"
    # Offline (--metadata) reads the same files through the same translation: the same answer.
    store = MemoryLineageStore()
    load_files(store, [path])
    radius = blast_radius(store, assertions=[sample.assertion("not_null_unit_price")])
    assert FEATURES_DBT in radius.incomplete and radius.to_json()["lineage_incomplete"] == list(radius.incomplete)
