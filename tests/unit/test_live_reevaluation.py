"""Live re-evaluation on embedded backends (DESIGN §3): while the sample's incident is active, lineage changes alone
— no new assertion run — re-point, drop and add to its blast radius, through every role over in-memory ports."""

from __future__ import annotations

from pathlib import Path

from datahub.emitter.mce_builder import make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCPW
from datahub.ingestion.sink.file import write_metadata_file
from datahub.metadata.schema_classes import (
    MLFeaturePropertiesClass,
    OtherSchemaClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    StatusClass,
    StringTypeClass,
    SystemMetadataClass,
)

from pareis.config import Settings
from pareis.core.intents import TAG_AT_RISK
from pareis.core.lifecycle import Status
from pareis.datahub.files.metadata_file import read_proposals
from pareis.datahub.writes.definitions import RETRAIN_STATUS_URN
from pareis.demo.session import DemoSession, Step, StepOutcome, steps_of
from pareis.roles.messages import LineageSignal, decode_signal
from tests.support import sample

B = sample.builder()
KEY = sample.stg_warehouse()
FEATURES_W = B.pg("analytics.customer_features")
AT = B.T0 + 6 * B.DAY + 6 * 3_600_000  # day 6, 06:00: the incident is active, no test runs until day 7


def active_session() -> DemoSession:
    """The sample through every role up to the day its incident opens (day 6); churn_4 (day 7) not yet registered."""
    session = DemoSession(Settings())
    for step in steps_of([sample.TIMELINE]):
        session.run(step)
        if step.at_ms // B.DAY == 6 + B.T0 // B.DAY:
            break
    assert session.ports.incidents.get(KEY).status is Status.ACTIVE
    return session


def change(session: DemoSession, tmp_path: Path, *mcps: MCPW) -> StepOutcome:
    for mcp in mcps:
        mcp.systemMetadata = SystemMetadataClass(lastObserved=AT, runId="test")
    path = tmp_path / "change.json"
    write_metadata_file(path, list(mcps))
    return session.run(Step("change", AT, tuple(read_proposals([path]))))


def lineage_signals(session: DemoSession) -> list[LineageSignal]:
    values = [decode_signal(r.value or b"") for r in session.broker.records(session.settings.kafka.topics.signals)]
    return [s for s in values if isinstance(s, LineageSignal)]


def tag_ops(outcome: StepOutcome) -> dict[str, set[str]]:
    """entity → {"add", "remove"} of the pareis-at-risk tag in the step's writes."""
    import orjson

    out: dict[str, set[str]] = {}
    for m in outcome.writes:
        if m.aspectName == "globalTags":
            for op in orjson.loads(m.aspect.value)["patch"] if m.aspect else []:  # type: ignore[attr-defined]
                if TAG_AT_RISK in op["path"]:
                    out.setdefault(str(m.entityUrn), set()).add(op["op"])
    return out


def comments(outcome: StepOutcome) -> list[str]:
    return [t.text for t in outcome.tickets if t.action == "commented"]


def test_a_feature_re_pointed_away_from_the_poison_untags_what_it_alone_put_at_risk(tmp_path: Path) -> None:
    session = active_session()
    total_spend = sample.feature("total_spend")
    outcome = change(
        session,
        tmp_path,
        MCPW(
            entityUrn=total_spend,
            aspect=MLFeaturePropertiesClass(sources=[make_schema_field_urn(FEATURES_W, "basket_size")]),
        ),
    )
    (signal,) = lineage_signals(session)
    assert signal.dataset == KEY and signal.entities == (total_spend,) and signal.logged_ms == AT
    ltv = [sample.model("ltv", v) for v in (1, 2)]
    ops = tag_ops(outcome)
    for urn in [total_spend, *ltv]:
        assert ops.get(urn) == {"remove"}, urn
    assert not any("add" in o for o in ops.values())
    facts = session.facts(KEY)
    assert facts is not None and not {*ltv, total_spend} & set(facts.at_risk)
    assert sample.model("churn", 3) in facts.at_risk, "churn still reads avg_unit_price"
    # ltv is no longer reached: its versions' retrain status goes back to OK
    props = [(str(m.entityUrn), m.aspect) for m in outcome.writes if m.aspectName == "structuredProperties"]
    assert {u for u, _ in props} >= set(ltv) and all(RETRAIN_STATUS_URN in str(a) for u, a in props if u in ltv)
    (text, *_) = comments(outcome)
    # The comment names entities by their short names (DESIGN §4): the URNs are in the JSON.
    assert "after a lineage change of: total_spend" in text and "-ltv_1" in text
    assert text.splitlines()[1] == "- ltv: no longer affected (was ROLL BACK to ltv_1)", "the decision first"


def test_a_soft_deleted_affected_model_is_untagged(tmp_path: Path) -> None:
    session = active_session()
    churn_3 = sample.model("churn", 3)
    outcome = change(session, tmp_path, MCPW(entityUrn=churn_3, aspect=StatusClass(removed=True)))
    assert [s.entities for s in lineage_signals(session)] == [(churn_3,)]
    assert tag_ops(outcome).get(churn_3) == {"remove"}
    assert any("-churn_3" in c for c in comments(outcome))


def test_a_change_outside_every_radius_signals_nothing_and_writes_nothing(tmp_path: Path) -> None:
    session = active_session()
    other = B.pg("other.inventory")
    field = SchemaFieldClass(fieldPath="sku", type=SchemaFieldDataTypeClass(type=StringTypeClass()), nativeDataType="t")
    schema = SchemaMetadataClass(
        schemaName="inventory", platform=B.make_data_platform_urn("postgres"), version=0, hash="",
        platformSchema=OtherSchemaClass(rawSchema=""), fields=[field],
    )  # fmt: skip
    outcome = change(session, tmp_path, MCPW(entityUrn=other, aspect=schema))
    assert lineage_signals(session) == []
    assert outcome.writes == [] and outcome.tickets == []


def test_an_unchanged_restatement_of_an_affected_entity_signals_nothing(tmp_path: Path) -> None:
    session = active_session()
    total_spend = sample.feature("total_spend")
    same = MLFeaturePropertiesClass(
        description="customer total_spend", sources=[make_schema_field_urn(FEATURES_W, "total_spend")]
    )
    outcome = change(session, tmp_path, MCPW(entityUrn=total_spend, aspect=same))
    assert lineage_signals(session) == [], "the index did not change: the answer cannot have"
    assert outcome.writes == []
