"""The retrain gate on the recorded demo timeline (``deploy/demo/recorded/``), step by step over the roles' own
stores, as ``pareis demo`` runs it:

* the churn group is NO-GO at the failing step (09: the not-null test of ``raw.transactions.unit_price`` fails;
  an active incident reaches churn_3) and GO after the repair (10), with churn_3 — trained inside the blind window
  — named CONTAMINATED and churn_2 as the safe rollback; after the clean retrain (11) it evaluates churn_4;
* live agreement (DESIGN §2.4, "Live"): at every step, every model version whose ``io.pareis.retrain_status`` the
  incidents role has written is BLOCKED exactly when the gate's incident checks (``no_active_incident``,
  ``latest_version_clean``) fail for it, and the gate is NO-GO on every BLOCKED version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from pareis.answers.gate import GateAnswer, gate
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.config import load_settings
from pareis.datahub.writes.definitions import RETRAIN_STATUS
from pareis.demo.gates import StepGate, gates_after, step_time, write_gates
from pareis.demo.session import DemoSession, steps_of

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted((ROOT / "deploy" / "demo" / "recorded").glob("[0-9][0-9]-*.json"))
SCHEMA = json.loads((ROOT / "schemas" / "pareis" / "gate.schema.json").read_text())
CHURN = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
LTV = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,ltv,PROD)"
PROPERTY = f"urn:li:structuredProperty:{RETRAIN_STATUS}"
INCIDENT_CHECKS = ("no_active_incident", "latest_version_clean")


def churn(n: int) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_{n},PROD)"


@dataclass
class Observed:
    step: str
    retrain: dict[str, str]
    versions: dict[str, GateAnswer]
    churn: GateAnswer | None
    gates: list[StepGate]


def retrain_statuses(writes: list[Any]) -> dict[str, str]:
    """The ``io.pareis.retrain_status`` each structuredProperties PATCH sets, by entity."""
    out = {}
    for mcp in writes:
        obj = mcp.to_obj()
        if obj.get("aspectName") != "structuredProperties":
            continue
        for op in orjson.loads(obj["aspect"]["value"])["patch"]:
            if op["op"] == "add" and op["value"]["propertyUrn"] == PROPERTY:
                out[obj["entityUrn"]] = op["value"]["values"][0]["string"]
    return out


@pytest.fixture(scope="module")
def timeline() -> list[Observed]:
    session = DemoSession(load_settings())
    sources = Sources(session.ports.lineage, session.ports.runs, session.ports.incidents, origin="demo")
    status: dict[str, str] = {}
    out = []
    for step in steps_of(RECORDED):
        outcome = session.run(step)
        status.update(retrain_statuses(outcome.writes))
        at = step_time(step)
        versions = {urn: gate(sources, model=urn, at_ms=at) for urn in sorted(status)}
        try:
            group = gate(sources, model=CHURN, at_ms=at)
        except CannotEvaluate:
            group = None  # before the first training
        out.append(Observed(step.name, dict(status), versions, group, gates_after(session, outcome)))
    return out


def at_step(timeline: list[Observed], prefix: str) -> Observed:
    [found] = [o for o in timeline if o.step.startswith(prefix)]
    return found


def statuses(answer: GateAnswer) -> dict[str, str]:
    return {c.id: c.status.value for c in answer.result.checks}


def test_the_churn_group_is_no_go_at_the_failing_step(timeline: list[Observed]) -> None:
    before = at_step(timeline, "08").churn
    assert before is not None and before.decision == "GO"  # the poisoned retrain: no test has failed yet
    failing = at_step(timeline, "09").churn
    assert failing is not None and failing.decision == "NO-GO" and failing.exit_code == 1
    assert failing.evaluated == churn(3)
    got = statuses(failing)
    assert got["no_active_incident"] == got["upstream_assertions_passing"] == "FAIL"
    assert got["latest_version_clean"] == "WARN"  # churn_3 is CONTAMINATED; for a group that is a warning
    assert len(failing.result.incidents) == 1
    assert failing.result.safe_rollback is not None and failing.result.safe_rollback.urn == churn(2)


def test_the_churn_group_is_go_after_the_repair(timeline: list[Observed]) -> None:
    repaired = at_step(timeline, "10").churn
    assert repaired is not None and repaired.decision == "GO" and repaired.result.override_reason is None
    assert repaired.evaluated == churn(3)
    assert statuses(repaired)["no_active_incident"] == "PASS"
    clean = next(c for c in repaired.result.checks if c.id == "latest_version_clean")
    assert clean.status.value == "WARN" and churn(2) in clean.reason
    retrained = at_step(timeline, "11").churn
    assert retrained is not None and retrained.decision == "GO" and retrained.evaluated == churn(4)
    assert statuses(retrained)["latest_version_clean"] == "PASS"


def test_the_contaminated_version_stays_no_go_after_the_heal(timeline: list[Observed]) -> None:
    for prefix in ("10", "11"):
        answer = at_step(timeline, prefix).versions[churn(3)]
        assert answer.decision == "NO-GO" and statuses(answer)["latest_version_clean"] == "FAIL"
        assert at_step(timeline, prefix).versions[churn(2)].decision == "GO"


def test_the_live_retrain_status_never_contradicts_the_gate(timeline: list[Observed]) -> None:
    compared = 0
    for observed in timeline:
        for urn, status in observed.retrain.items():
            answer = observed.versions[urn]
            blocked_by_gate = any(statuses(answer)[c] == "FAIL" for c in INCIDENT_CHECKS)
            assert blocked_by_gate == (status == "BLOCKED"), (observed.step, urn, status, statuses(answer))
            if status == "BLOCKED":
                assert answer.decision == "NO-GO", (observed.step, urn)
            compared += 1
    # Both groups' three versions from the failing step on: nothing compared would prove nothing.
    assert compared >= 6 * 3
    assert {s for o in timeline for s in o.retrain.values()} == {"BLOCKED", "OK"}


def test_the_demo_writes_one_schema_valid_gate_file_per_group_and_changed_step(
    timeline: list[Observed], tmp_path: Path
) -> None:
    gates = [g for o in timeline for g in o.gates]
    # Step 11 re-decides the resolved incident (the clean retrains registered): the gate then evaluates the retrain.
    steps = [(s, g) for s in ("09", "10", "11") for g in (CHURN, LTV)]
    assert sorted((g.step[:2], g.group) for g in gates) == steps
    written = write_gates(gates, tmp_path)
    assert sorted(p.name for p in written) == [
        "gate-churn-09-d5-tests-fail.json",
        "gate-churn-10-d6-repair-tests-pass.json",
        "gate-churn-11-d7-retrain-clean.json",
        "gate-ltv-09-d5-tests-fail.json",
        "gate-ltv-10-d6-repair-tests-pass.json",
        "gate-ltv-11-d7-retrain-clean.json",
    ]
    for path in written:
        obj = json.loads(path.read_text())
        jsonschema.validate(obj, SCHEMA)
        assert obj["decision"] == ("NO-GO" if "-09-" in path.name else "GO")


def test_pruning_by_region_never_drops_an_incident_that_reaches_a_version() -> None:
    """The gate analyses only the incidents whose datasets have a table-level ancestor in the version's region;
    on the whole recording, for every model version, that finds exactly the incidents a full analysis finds."""
    from pareis.answers.gate_reads import group_inputs
    from pareis.answers.reach import incident_facts_at, reaching
    from pareis.compose.sources import open_sources
    from pareis.core import catalog
    from pareis.core.graph import Memo

    with open_sources(metadata=RECORDED) as sources:
        view = Memo(sources.lineage)
        at = 1_760_000_000_000
        everything = incident_facts_at(view, sources.runs, at)
        assert everything, "the recording has an incident"
        versions = sources.lineage.entities("mlModelProperties")
        assert len(versions) >= 8
        for urn in versions:
            info = catalog.models(view, [urn])[urn]
            pruned = incident_facts_at(view, sources.runs, at, near_to=group_inputs(view, info))
            assert reaching(pruned, urn) == reaching(everything, urn), urn
