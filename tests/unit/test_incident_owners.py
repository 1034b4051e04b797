"""Owners are told (DESIGN §3): ownership indexed by the lineage role, named by every incident, carried into
incidentInfo's assignees; an owner change during an active incident is picked up by the next Update."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.sink.file import write_metadata_file
from datahub.metadata.schema_classes import (
    CorpUserInfoClass,
    OwnerClass,
    OwnershipClass,
    OwnershipTypeClass,
)

from pareis.core.analysis import AnalysisInputs
from pareis.core.graph import Attr, Memo
from pareis.core.intents import Intent, Open, Update
from pareis.core.lifecycle import IncidentState, Signal, step
from pareis.core.owners import IncidentOwners, Owner, owners_by_entity
from pareis.datahub.writes.incident_writes import intent_mcps
from pareis.lineage_loader import load_files
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.writer_scenario import BLAST, CHURN_V3, DATASET, RUNS, SETTINGS, VERSIONS

GOLDENS = Path(__file__).resolve().parents[1] / "data" / "datahub-goldens"  # copies of ../shared/datahub-goldens
DBT = GOLDENS / "dbt__dbt_enabled_with_schemas_mces_golden.json"
JDOE = Owner("urn:li:corpuser:jdoe@example.com", "jdoe@example.com")
ALICE = Owner("urn:li:corpuser:alice", "alice@example.com")
TEAM = Owner("urn:li:corpGroup:ml-platform")


def ownership(*owners: str) -> OwnershipClass:
    return OwnershipClass(owners=[OwnerClass(owner=o, type=OwnershipTypeClass.DATAOWNER) for o in owners])


def test_dbt_ownership_from_a_real_golden_is_indexed_with_emails_read_from_user_ids() -> None:
    store = MemoryLineageStore()
    load_files(store, [DBT])
    owned = [e for e in store.entities("ownership") if e.startswith("urn:li:dataset:")]
    assert owned, "the golden's datasets carry ownership"
    found = owners_by_entity(Memo(store), owned, {})
    everyone = {o for owners in found.values() for o in owners}
    assert Owner("urn:li:corpuser:jdoe.last@gmail.com", "jdoe.last@gmail.com") in everyone
    assert Owner("urn:li:corpuser:alice2", None) in everyone, "a plain user id has no email"


def test_a_datasets_owners_include_its_siblings_and_a_models_its_groups_and_user_emails(tmp_path: Path) -> None:
    store = MemoryLineageStore()
    dbt = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.orders,PROD)"
    group = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
    from datahub.metadata.schema_classes import MLModelPropertiesClass, SiblingsClass

    proposals = [
        MetadataChangeProposalWrapper(entityUrn=DATASET, aspect=SiblingsClass(siblings=[dbt], primary=False)),
        MetadataChangeProposalWrapper(entityUrn=dbt, aspect=ownership(JDOE.urn)),
        MetadataChangeProposalWrapper(entityUrn=CHURN_V3, aspect=MLModelPropertiesClass(groups=[group])),
        MetadataChangeProposalWrapper(entityUrn=group, aspect=ownership(ALICE.urn, TEAM.urn)),
        MetadataChangeProposalWrapper(entityUrn=ALICE.urn, aspect=CorpUserInfoClass(active=True, email=ALICE.email)),
        # ownership of an entity type no incident names costs the index nothing
        MetadataChangeProposalWrapper(entityUrn="urn:li:tag:pii", aspect=ownership(JDOE.urn)),
    ]
    write_metadata_file(tmp_path / "owners.json", proposals)
    load_files(store, [tmp_path / "owners.json"])
    assert store.entities("ownership") == sorted([dbt, group])
    found = owners_by_entity(Memo(store), [DATASET], {CHURN_V3: group})
    assert found[DATASET] == (JDOE,)
    assert found[CHURN_V3] == (TEAM, ALICE), "URN order"
    assert Memo(store).attributes([ALICE.urn])[ALICE.urn][Attr.USER_EMAIL] == "alice@example.com"


def intents(owners_at: dict[int, dict[str, tuple[Owner, ...]]]) -> list[Intent]:
    """The scenario's intents, the owners index as given from each run index on."""
    state, out, owners = IncidentState(DATASET), [], {}
    for index, run in enumerate(RUNS):
        owners = owners_at.get(index, owners)
        inputs = AnalysisInputs(runs=RUNS[: index + 1], blast=BLAST, versions=VERSIONS, owners=owners)
        state, produced = step(state, Signal(DATASET, run), inputs, now_ms=run.timestamp_ms + 1000)
        out.extend(produced)
    return out


def test_the_incident_names_its_owners_in_description_json_and_incident_assignees() -> None:
    opened = intents({0: {DATASET: (JDOE,), CHURN_V3: (TEAM, ALICE)}})[0]
    assert isinstance(opened, Open)
    facts = opened.facts
    others = tuple((m.urn, ()) for m in facts.blast.models if m.urn != CHURN_V3)
    assert facts.owners == IncidentOwners(dataset=(JDOE,), models=tuple(sorted(((CHURN_V3, (TEAM, ALICE)), *others))))
    assert facts.owners.everyone == (JDOE, TEAM, ALICE), "the dataset's owners first"
    owners = opened.description.split("### Owners\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert owners == [
        "- shop.public.orders (failing dataset): jdoe@example.com",
        "- churn_3: ml-platform and alice@example.com",
    ], "by short names; a group by its name"
    assert facts.to_json()["owners"]["dataset"] == [{"email": "jdoe@example.com", "urn": JDOE.urn}]
    info = json.loads(intent_mcps(opened, SETTINGS)[0].make_mcp().aspect.value)
    assert [a["actor"] for a in info["assignees"]] == [JDOE.urn], "the failing dataset's owners are assigned"


def test_an_owner_change_during_the_incident_is_picked_up_by_the_next_update() -> None:
    before = {DATASET: (JDOE,)}
    after = {DATASET: (JDOE,), CHURN_V3: (ALICE,)}
    opened, update, *_ = intents({0: before, 3: after})
    assert isinstance(update, Update) and "owners" in update.changed
    assert "- owners: +churn_3/alice" in update.comment.splitlines(), "by short names"
    assert update.prior is not None and update.prior.assignees == (JDOE.urn,)
    assert update.prior.priority == opened.facts.priority


def test_an_email_a_person_set_in_datahub_wins_over_the_ingested_one_until_it_is_cleared(tmp_path: Path) -> None:
    """DataHub shows ``corpUserEditableInfo.email`` (set in its UI) over ``corpUserInfo.email`` (ingested)."""
    from datahub.metadata.schema_classes import CorpUserEditableInfoClass

    store = MemoryLineageStore()
    edited = "alice.smith@example.org"

    def load(name: str, *aspects: Any) -> tuple[Owner, ...]:
        proposals = [MetadataChangeProposalWrapper(entityUrn=DATASET, aspect=ownership(ALICE.urn))]
        proposals += [MetadataChangeProposalWrapper(entityUrn=ALICE.urn, aspect=a) for a in aspects]
        write_metadata_file(tmp_path / name, proposals)
        load_files(store, [tmp_path / name])
        return owners_by_entity(Memo(store), [DATASET], {})[DATASET]

    info = CorpUserInfoClass(active=True, email=ALICE.email)
    assert load("ingested.json", info) == (Owner(ALICE.urn, ALICE.email),)
    assert load("edited.json", CorpUserEditableInfoClass(email=f" {edited} ")) == (Owner(ALICE.urn, edited),)
    assert load("cleared.json", CorpUserEditableInfoClass(email=None)) == (Owner(ALICE.urn, ALICE.email),)
