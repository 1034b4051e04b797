"""`pareis demo` on the bundled sample: the lifecycle printed and the outputs written, with no server."""

from __future__ import annotations

import json
from pathlib import Path

from datahub.ingestion.source.file import read_metadata_file
from typer.testing import CliRunner

from pareis.cli import app
from tests.support import sample


def test_demo_prints_the_lifecycle_and_writes_its_outputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["demo", "--timeline", str(sample.TIMELINE), "--out", str(out)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    text = result.output
    assert "CLEAR → ACTIVE" in text and "ACTIVE → RESOLVED" in text
    assert text.index("CLEAR → ACTIVE") < text.index("ACTIVE → RESOLVED")
    assert "safe rollback for churn: churn_2" in text and "safe rollback for ltv: ltv_1" in text
    assert "dead letters: 0" in text
    # decision first: each transition leads with the decision per group, before the incident's evidence
    opened = text[text.index("CLEAR → ACTIVE") :]
    assert opened.index("Decision:") < opened.index("• churn: ROLL BACK to churn_2") < opened.index("incident ─")
    now = text[text.index("What to do now (pareis incidents --all)") : text.index("Protect: reliability")]
    assert "RESOLVED retail.analytics.stg_transactions" in now
    assert "• churn: ROLL BACK to churn_2 — churn_4 serves and trained on corrupt data" in now  # in the window

    writes = list(read_metadata_file(out / "datahub-writes.json"))
    aspects = {str(w.aspectName) for w in writes}
    assert {"incidentInfo", "globalTags", "structuredProperties", "documentInfo", "propertyDefinition"} <= aspects
    assert {"incidentExternalLinks", "incidentNotes"} <= aspects, "the tickets inside DataHub's incident"
    tickets = [json.loads(line) for line in (out / "tickets.jsonl").read_text().splitlines()]
    assert sorted(t["tool"] for t in tickets) == ["jira", "linear", "slack"]
    assert all(t["closed"] and t["comments"] for t in tickets)
    assert all(t["body"].startswith("### Decision\n") for t in tickets), "decision first"
    assert len({t["incident"] for t in tickets}) == 1
    [postmortem] = out.glob("postmortem-*.md")
    assert "Time to heal" in postmortem.read_text()
    assert "retrain gate for churn" in text and "retrain gate for ltv" in text
    gates = {p.name: json.loads(p.read_text()) for p in out.glob("gate-*.json")}
    # One answer per reached group after each step that opens, updates (day 7: churn_4 registered mid-incident, caught
    # by live re-evaluation) or resolves the incident (decisions on the recorded timeline are pinned by
    # test_gate_demo.py; the sample's untested datasets score low after the repair).
    assert {g["decision"] for n, g in gates.items() if n.endswith("-2025-10-08.json")} == {"NO-GO"}
    assert "after a lineage change of: churn_4" in "".join(c for t in tickets for c in t["comments"])
    assert len(gates) == 6 and all(g["exit_code"] in (0, 1) and len(g["checks"]) == 10 for g in gates.values())
    assert {g["decision"] for n, g in gates.items() if n.endswith("-2025-10-07.json")} == {"NO-GO"}
    report = (out / "report.html").read_text()
    assert report.count("CONTAMINATED") >= 2 and "churn_2" in report
    # protect and prove (DESIGN §2.5): the table of scores and gaps, and churn's evidence pack, also in DataHub
    assert "Protect: reliability and test gaps" in text and "Untested columns feeding models" in text
    assert text.index("ACTIVE → RESOLVED") < text.index("Protect: reliability")
    assert sorted(p.name for p in out.glob("evidence-*")) == [
        "evidence-churn.html",
        "evidence-churn.json",
        "evidence-churn.md",
    ]
    pack = json.loads((out / "evidence-churn.json").read_text())
    assert pack["header"]["model"] == "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
    documents = [str(w.entityUrn) for w in writes if str(w.aspectName) == "documentInfo"]
    assert any(d.startswith("urn:li:document:pareis-evidence-") for d in documents)
    scores = [w for w in writes if "io.pareis.reliability_score" in json.dumps(w.to_obj())]
    assert any(str(w.entityUrn).startswith("urn:li:mlModel:") for w in scores)


def test_on_the_recording_the_clean_retrain_re_decides_the_resolved_incident() -> None:
    """After the heal churn_3 and ltv_3 serve (presumed: the newest) and trained on corrupt data: ROLL_BACK. Step 11
    registers the clean retrains churn_4 and ltv_4: the live service re-decides the resolved incident (DESIGN §2.3),
    comments on every ticket what changed, and rewrites DataHub's incident still RESOLVED, decision first."""
    from pareis.config import Settings
    from pareis.demo.session import DemoSession, steps_of
    from tests.support.recorded import RECORDED

    session = DemoSession(Settings())
    outcomes = [session.run(step) for step in steps_of(sorted(RECORDED.glob("*.json")))]
    last = outcomes[-1]
    assert last.step.name.startswith("11-"), last.step.name
    comments = [e.text for e in last.tickets if e.action == "commented"]
    assert len(comments) == 6, comments  # two re-decisions (churn_4, then ltv_4), on each of the three tools
    said = "\n".join(comments)
    assert "- churn: now NOTHING TO SWITCH (was ROLL BACK to churn_2)" in said
    assert "- ltv: now NOTHING TO SWITCH (was ROLL BACK to ltv_2)" in said
    assert not [e for e in last.tickets if e.action in ("opened", "closed")]
    infos = [w for w in last.writes if w.aspectName == "incidentInfo"]
    assert infos and all(w.aspect.status.state == "RESOLVED" for w in infos), "re-decided, never reopened"
    latest = infos[-1].aspect
    assert latest.title.startswith("Nothing to switch"), latest.title
    assert latest.description.startswith("### Decision\n\n- **churn**: Nothing to switch: churn_4 serving")
