"""The Article 10 evidence pack (DESIGN §2.5, pareis.answers.evidence) on the demo recording, in its three forms,
and ``pareis evidence`` / ``pareis protect`` on the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pareis.answers.evidence import evidence_pack
from pareis.answers.evidence_render import markdown, to_html
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.compose.sources import open_sources
from pareis.datahub.translate.lineage import lineage_update
from pareis.store.lineage import Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.runs_memory import MemoryRunHistory

RECORDED = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "recorded"
SAMPLE = RECORDED.parent / "sample" / "timeline.json"  # small: for the refusals
CHURN = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
AT = 1_759_903_200_000  # 2025-10-08T06:00:00Z
HEADINGS = [
    "10(2)(a)",
    "10(2)(b)",
    "10(2)(c)",
    "10(2)(d)",
    "10(2)(e)",
    "10(2)(f)",
    "10(2)(g)",
    "10(2)(h)",
    "10(3)",
    "10(4)",
    "10(5)",
    "10(6)",
    "Annex IV 2(d), 2(g)",
    "Article 20",
]


def model(name: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name},PROD)"


@pytest.fixture(scope="module")
def recorded() -> Sources:
    return open_sources(metadata=[RECORDED])


@pytest.fixture(scope="module")
def pack(recorded: Sources) -> dict[str, Any]:
    return evidence_pack(recorded, CHURN, AT).to_json()


def section(pack: dict[str, Any], id_: str) -> dict[str, Any]:
    (found,) = [s for s in pack["sections"] if s["id"] == id_]
    return found


def test_every_article_10_heading_is_present_in_order_in_every_form(pack: dict[str, Any]) -> None:
    assert [s["id"] for s in pack["sections"]] == HEADINGS
    md, page = markdown(pack), to_html(pack)
    for id_ in HEADINGS:
        title = section(pack, id_)["title"]
        assert f"## {id_} — {title}" in md
        assert f"<h2>{id_} — {title}</h2>".replace("&", "&amp;") in page


def test_what_pareis_cannot_assess_is_listed_as_not_assessed(pack: dict[str, Any]) -> None:
    for id_ in ("10(2)(f)", "10(2)(g)", "10(5)"):
        s = section(pack, id_)
        assert s["status"] == "not_assessed" and s["summary"]
    assert markdown(pack).count("**Status**: not assessed by Pareis.") == 7  # (a) (d) (f) (g) 10(4) 10(5) 10(6)


def test_the_header_names_model_time_origin_dates_and_says_not_legal_advice(pack: dict[str, Any]) -> None:
    h = pack["header"]
    assert h["model"] == CHURN and h["versions"] == [model(f"churn_{v}") for v in (1, 2, 3, 4)]
    assert h["generated_at"] == "2025-10-08T06:00:00Z" and h["generated_at_ms"] == AT
    assert h["generated_from"].startswith("metadata: ") and "recorded" in h["generated_from"]
    assert [d["date"] for d in h["applicable_dates"]] == ["2027-12-02", "2028-08-02"]
    assert (
        "Annex III" in h["applicable_dates"][0]["applies_to"] and "Annex I " in h["applicable_dates"][1]["applies_to"]
    )
    assert "Digital Omnibus" in h["amendment"]
    assert h["disclaimer"].startswith("Not legal advice.")
    assert "Not legal advice." in markdown(pack) and "Not legal advice." in to_html(pack)


def test_origin_preparation_and_gaps_come_from_the_lineage(pack: dict[str, Any]) -> None:
    origin = section(pack, "10(2)(b)")["facts"]
    assert origin["origin_datasets"] == ["urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)"]
    assert {f["feature"].rsplit(",", 1)[-1].rstrip(")") for f in origin["features"]} >= {
        "avg_unit_price",
        "total_spend",
    }
    assert {r["model"] for r in origin["training_runs"]} == {model(f"churn_{v}") for v in (1, 2, 3, 4)}
    prep = section(pack, "10(2)(c)")["facts"]
    assert {s["dbt_node"] for s in prep["dbt_models"]} == {
        "model.retail.customer_features",
        "model.retail.stg_transactions",
    }
    gaps = section(pack, "10(2)(h)")["facts"]
    assert [g["column"].rsplit(",", 1)[-1] for g in gaps["gaps"]] == [
        "total_spend)",
        "avg_unit_price)",
        "basket_size)",
        "invoice_date)",
    ]
    assert [g["matches_past_incident"] for g in gaps["gaps"]] == [True, True, False, False]
    assert "dbt_tests" not in gaps and gaps["dbt_schema_yml"].startswith("version: 2\n")
    assert section(pack, "10(2)(e)")["missing"], "the recording has no profiles: the pack says so"


def test_errors_and_corrective_actions_name_the_incident_and_its_verdicts(pack: dict[str, Any]) -> None:
    errors = section(pack, "10(3)")["facts"]
    (incident,) = errors["incidents"]
    assert incident["failed_rows"] == 254193
    assert (incident["last_success"], incident["first_failure"]) == ("2025-10-05T06:00:00Z", "2025-10-06T06:00:00Z")
    assert incident["healed"] == "2025-10-07T06:00:00Z"
    assert any(a["failed"] == 1 and a["latest_failed_rows"] == 254193 for a in errors["assertions"])
    (action,) = section(pack, "Article 20")["facts"]["actions"]
    assert action["contaminated_versions"] == [model("churn_3")]
    assert action["safe_rollback"] == model("churn_2")
    assert action["resolution"] == "healed"


def test_a_pack_generated_before_the_heal_shows_the_incident_still_open(recorded: Sources) -> None:
    """The recording holds the repair, but a pack for 2025-10-06 12:00 (between the failure and the heal) shows
    the incident as it stood then: ACTIVE, not healed, the retrain block not lifted."""
    earlier = evidence_pack(recorded, CHURN, AT - 42 * 3_600_000).to_json()  # 2025-10-06T12:00:00Z
    (incident,) = section(earlier, "10(3)")["facts"]["incidents"]
    assert (incident["state"], incident["healed"]) == ("ACTIVE", None)
    assert incident["first_failure"] == "2025-10-06T06:00:00Z"
    (action,) = section(earlier, "Article 20")["facts"]["actions"]
    assert (action["resolution"], action["retrain_unblocked_at"]) == ("open", None)
    assert action["contaminated_versions"] == [model("churn_3")]


def test_a_pack_generated_before_a_version_was_trained_leaves_that_version_out(recorded: Sources) -> None:
    """churn_4 was trained on 2025-10-08 04:00: a pack of 2025-10-06 12:00 covers the three versions that existed
    then, and protect's answer for the group as of then scores only those. (The gaps still name every model a
    column feeds in today's lineage: the index is not versioned in time.)"""
    from pareis.answers.reliability import protect

    at = AT - 42 * 3_600_000  # 2025-10-06T12:00:00Z
    earlier = evidence_pack(recorded, CHURN, at).to_json()
    assert earlier["header"]["versions"] == [model("churn_1"), model("churn_2"), model("churn_3")]
    origin = json.dumps(section(earlier, "10(2)(b)"))
    assert model("churn_3") in origin and model("churn_4") not in origin
    scored = [m.urn for m in protect(recorded, at_ms=at, model=CHURN).models]
    assert scored == [model("churn_1"), model("churn_2"), model("churn_3")]
    assert evidence_pack(recorded, CHURN, AT).to_json()["header"]["versions"][-1] == model("churn_4")


def test_the_html_is_self_contained_and_printable(pack: dict[str, Any]) -> None:
    page = to_html(pack)
    assert page.startswith("<!DOCTYPE html>") and "@media print" in page
    assert "<script" not in page and "src=" not in page and "<link" not in page


def test_a_model_without_lineage_gets_a_pack_that_says_what_is_missing() -> None:
    store = MemoryLineageStore()
    update = lineage_update(model("lonely"), "mlModelProperties", "UPSERT", {"name": "lonely"}, Stamp(1, 0))
    assert update is not None
    store.apply([update])
    # known to the index (a name), but no features, no training run, no group
    update = lineage_update(model("lonely"), "mlModelProperties", "UPSERT", {"created": {"time": 5}}, Stamp(2, 0))
    assert update is not None
    store.apply([update])
    pack = evidence_pack(Sources(store, MemoryRunHistory()), model("lonely"), AT).to_json()
    missing = section(pack, "10(2)(b)")["missing"]
    assert any(m.startswith("no lineage") for m in missing)
    assert section(pack, "10(3)")["missing"] == ["no assertion checks any upstream dataset"]
    assert [s["id"] for s in pack["sections"]] == HEADINGS


def test_an_unknown_model_cannot_be_evaluated(recorded: Sources) -> None:
    with pytest.raises(CannotEvaluate, match="unknown model"):
        evidence_pack(recorded, model("nope"), AT)


def cli(*args: str) -> Any:
    from pareis.cli import app

    return CliRunner().invoke(app, list(args))


def test_pareis_evidence_writes_three_files_and_refuses_an_unwritable_out(tmp_path: Path) -> None:
    done = cli("evidence", "--metadata", str(RECORDED), "--model", CHURN, "--at", "2025-10-08T06:00:00Z",
               "--out", str(tmp_path / "out"))  # fmt: skip
    assert done.exit_code == 0, done.output
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["evidence-churn.html", "evidence-churn.json", "evidence-churn.md"]
    data = json.loads((tmp_path / "out" / "evidence-churn.json").read_text())
    assert data["kind"] == "pareis.evidence_pack.v1" and data["header"]["model"] == CHURN
    blocker = tmp_path / "file"
    blocker.write_text("")
    refused = cli("evidence", "--metadata", str(SAMPLE), "--model", CHURN, "--out", str(blocker / "x"))
    assert refused.exit_code == 2 and "cannot write to" in refused.output
    unknown = cli("evidence", "--metadata", str(SAMPLE), "--model", model("nope"), "--out", str(tmp_path))
    assert unknown.exit_code == 2 and "unknown model" in unknown.output


def test_pareis_protect_json_has_the_contract_shape_and_yaml_prints_only_the_tests() -> None:
    done = cli("protect", "--metadata", str(RECORDED), "--model", CHURN, "--at", "2025-10-08T06:00:00Z", "--json")
    assert done.exit_code == 0, done.output
    answer = json.loads(done.output)
    assert sorted(answer) == ["datasets", "evaluated_at_ms", "gaps", "models", "time_travel"]
    assert answer["evaluated_at_ms"] == AT
    assert sorted(answer["datasets"][0]) == ["components", "score", "urn"]
    assert sorted(answer["datasets"][0]["components"][0]) == ["detail", "name", "value", "weight"]
    assert sorted(answer["gaps"][0]) == [
        "column", "dataset", "features", "incidents", "matches_past_incident", "models", "tests",
    ]  # fmt: skip
    assert sorted(answer["gaps"][0]["tests"][0]) == ["name", "yaml"]
    yml = cli("protect", "--metadata", str(RECORDED), "--model", CHURN, "--at", "2025-10-08T06:00:00Z",
              "--format", "yaml", "--max-gaps", "1")  # fmt: skip
    assert yml.exit_code == 0
    assert yml.output == (
        "version: 2\nmodels:\n  - name: customer_features\n    columns:\n      - name: total_spend\n"
        "        data_tests:\n          - not_null\n"
    )
    bad = cli("protect", "--metadata", str(SAMPLE), "--dataset", "urn:li:dataset:(urn:li:dataPlatform:x,y,PROD)")
    assert bad.exit_code == 2 and "unknown dataset" in bad.output
    bad_time = cli("protect", "--metadata", str(SAMPLE), "--at", "yesterday-ish")
    assert bad_time.exit_code == 2 and "--at" in bad_time.output


def test_pareis_evidence_publishes_the_pack_as_a_document_related_to_the_model(
    tmp_path: Path, recorded: Sources
) -> None:
    """`pareis evidence --publish` on the demo recording against the fake GMS: one documentInfo UPSERT per
    publication, on the deterministic URN; the second publication (a later pack: the incident resolved since)
    replaces the first, and the stored document is that pack's Markdown, related to the group and its versions."""
    from pareis.config import load_settings
    from pareis.datahub.writes.evidence_doc import document_urn
    from tests.support.fake_gms import FakeGms

    during, after = "2025-10-06T12:00:00Z", "2025-10-08T06:00:00Z"  # incident ACTIVE, then RESOLVED
    urn = document_urn(CHURN)
    assert urn == document_urn(CHURN) != document_urn(model("churn_3"))
    with FakeGms() as gms:
        for at in (during, after):
            done = cli(
                "evidence", "--metadata", str(RECORDED), "--model", CHURN, "--at", at,
                "--out", str(tmp_path / at[:10]), "--format", "json", "--publish", gms.url,
            )  # fmt: skip
            assert done.exit_code == 0, done.output
            assert done.output.strip().splitlines()[-1] == urn
        writes = [r for r in gms.received if r.aspect_name == "documentInfo"]
        assert [(r.entity_type, r.entity_urn, r.change_type) for r in writes] == [("document", urn, "UPSERT")] * 2
        assert {r.aspect_name for r in gms.received} == {"documentInfo"}
        first, second = (w.aspect for w in writes)
        assert first["contents"]["text"] != second["contents"]["text"]
        doc = gms.aspect(urn, "documentInfo")
    assert doc == second, "re-publishing replaces the document"
    expected = evidence_pack(recorded, CHURN, AT).to_json()
    assert doc["contents"]["text"] == markdown(expected)
    assert "| RESOLVED |" in doc["contents"]["text"] and "| ACTIVE |" in first["contents"]["text"]
    assert doc["title"] == f"EU AI Act Article 10 evidence pack: {CHURN}"
    assert doc["status"]["state"] == "PUBLISHED"
    assert {a["asset"] for a in doc["relatedAssets"]} == {CHURN, *(model(f"churn_{v}") for v in (1, 2, 3, 4))}
    assert doc["customProperties"]["generatedAt"] == expected["header"]["generated_at"]
    assert doc["lastModified"] == {"time": AT, "actor": load_settings().datahub.actor}
    (effect,) = {w.system_metadata["properties"]["pareisEffectId"] for w in writes[1:]}
    assert effect == f"evidence/{urn}/{AT}"
