"""``pareis bootstrap --datahub``'s reader (:class:`pareis.datahub.gms.snapshot.GmsSnapshot`) against a local HTTP
server answering the GMS endpoints it calls with DataHub-shaped responses: the current values of the bundled
sample's aspects (as GMS would hold them after ingesting it) and its assertion runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import unquote

import pytest

from pareis.compose.sources import datahub_graph
from pareis.core.blast import blast_radius
from pareis.core.graph import Memo
from pareis.core.owners import email_of
from pareis.datahub.gms.snapshot import ENTITY_ASPECTS, GmsSnapshot
from pareis.errors import Fatal, Retriable
from pareis.lineage_loader import load_changes, load_files
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.fake_gms_reads import SAMPLE, FakeGmsReads


@pytest.fixture
def gms() -> Iterator[FakeGmsReads]:
    with FakeGmsReads() as server:
        yield server


def test_what_gms_holds_indexes_as_the_sample_file(gms: FakeGmsReads) -> None:
    graph = datahub_graph(gms.url)
    try:
        snapshot = GmsSnapshot(graph, page_size=4)  # several pages per type
        from_gms = MemoryLineageStore()
        loaded = load_changes(from_gms, snapshot.all_changes())
        runs = list(snapshot.all_runs())
    finally:
        graph.close()
    from_file = MemoryLineageStore()
    expected = load_files(from_file, [SAMPLE])
    assert sorted(runs, key=lambda r: r.key) == sorted(expected.runs, key=lambda r: r.key)
    assert loaded.updates == len({(e, a) for e, aspects in gms.entities.items() for a in aspects})
    assertions = sorted(u for u, t in gms.types.items() if t == "assertion")
    datasets = sorted(u for u, t in gms.types.items() if t == "dataset")
    for store in (from_gms, from_file):
        assert blast_radius(store, assertions=assertions[:1]).models  # the sample reaches models
    for a in assertions:
        assert blast_radius(from_gms, assertions=[a]) == blast_radius(from_file, assertions=[a])
    for d in datasets:
        assert blast_radius(from_gms, datasets=[d]) == blast_radius(from_file, datasets=[d])


def test_only_the_lineage_aspects_of_each_type_are_asked_for(gms: FakeGmsReads) -> None:
    graph = datahub_graph(gms.url)
    try:
        list(GmsSnapshot(graph).all_changes())
    finally:
        graph.close()
    asked = [r for r in gms.requests if r.path.startswith("/entitiesV2/")]
    assert len(asked) == sum(1 for t in gms.types.values() if t in ENTITY_ASPECTS)
    for request in asked:
        urn = unquote(request.path.removeprefix("/entitiesV2/"))
        assert request.query["aspects"] == f"List({','.join(ENTITY_ASPECTS[gms.types[urn]])})"


def test_a_refused_token_is_fatal_and_an_unavailable_server_retriable() -> None:
    with FakeGmsReads(token="right") as gms:
        graph = datahub_graph(gms.url, "wrong", retries=0)
        with pytest.raises(Fatal, match="401"):
            list(GmsSnapshot(graph).all_changes())
        graph.close()
        graph = datahub_graph(gms.url, "right", retries=0)
        gms.fail_next(503, times=10)
        with pytest.raises(Retriable, match="503"):
            list(GmsSnapshot(graph).all_changes())
        graph.close()
        url = gms.url
    graph = datahub_graph(url, retries=0)  # the server is gone
    with pytest.raises(Retriable, match="unreachable"):
        list(GmsSnapshot(graph).all_changes())
    graph.close()


def test_the_gate_reads_a_gms_with_its_dataset_operations(gms: FakeGmsReads) -> None:
    """``pareis gate --datahub`` (what the retrain-gate workflow runs) answers as from the file, and records each
    dataset's ``operation`` change times for the freshness check."""
    from typer.testing import CliRunner

    from pareis import cli
    from pareis.compose.sources import open_sources

    datasets = sorted(u for u, t in gms.types.items() if t == "dataset")
    gms.runs[datasets[0]] = [{"timestampMillis": 2_000, "lastUpdatedTimestamp": 1_500, "operationType": "INSERT"}]
    with open_sources(datahub_url=gms.url) as sources:
        assert sources.runs.last_operation(datasets[0], 10_000) == 1_500
        assert sources.runs.last_operation(datasets[1], 10_000) is None
    group = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
    at = "2025-10-09T00:00:00Z"
    runner = CliRunner()
    live = runner.invoke(cli.app, ["gate", "--model", group, "--datahub", gms.url, "--at", at, "--json"])
    offline = runner.invoke(cli.app, ["gate", "--model", group, "--metadata", str(SAMPLE), "--at", at, "--json"])
    assert live.exit_code == offline.exit_code and live.exit_code in (0, 1), live.stderr
    assert json.loads(live.stdout)["checks"] == json.loads(offline.stdout)["checks"]


def test_the_gms_token_is_one_setting_for_every_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--datahub`` reads carry the setting ``datahub.token`` (``PAREIS_DATAHUB__TOKEN``, what the roles' REST
    writes use) when ``--token`` is not given; ``DATAHUB_GMS_TOKEN`` is not a second name for it."""
    from typer.testing import CliRunner

    from pareis import cli

    group = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
    with FakeGmsReads(token="s3cret") as gms:
        args = ["gate", "--model", group, "--datahub", gms.url, "--at", "2025-10-09T00:00:00Z", "--json"]
        monkeypatch.setenv("DATAHUB_GMS_TOKEN", "s3cret")
        refused = CliRunner().invoke(cli.app, args)
        monkeypatch.setenv("PAREIS_DATAHUB__TOKEN", "s3cret")
        answered = CliRunner().invoke(cli.app, args)
        given = CliRunner().invoke(cli.app, [*args, "--token", "wrong"])
    assert refused.exit_code == 2 and "401" in refused.stderr, refused.stderr
    assert answered.exit_code in (0, 1) and json.loads(answered.stdout)["model"] == group, answered.stderr
    assert given.exit_code == 2 and "401" in given.stderr, "--token wins over the setting"


def test_owners_emails_are_read_from_gms_users() -> None:
    """A bootstrapped index knows each user's emails (ingested, and set in DataHub's UI) as the change log has them."""
    alice, bob = "urn:li:corpuser:alice", "urn:li:corpuser:bob"
    with FakeGmsReads() as gms:
        for urn, aspects in (
            (alice, {"corpUserInfo": {"active": True, "email": "alice@example.com"}}),
            (
                bob,
                {
                    "corpUserInfo": {"active": True, "email": "bob@corp.example"},
                    "corpUserEditableInfo": {"email": "bob@example.org"},
                },
            ),
        ):
            gms.types[urn] = "corpuser"
            gms.entities[urn] = {
                name: {"name": name, "type": "VERSIONED", "version": 0, "value": value, "created": None,
                       "systemMetadata": {"lastObserved": 1, "version": "1"}}
                for name, value in aspects.items()
            }  # fmt: skip
        graph = datahub_graph(gms.url)
        try:
            store = MemoryLineageStore()
            load_changes(store, GmsSnapshot(graph).all_changes())
        finally:
            graph.close()
    people = Memo(store).attributes([alice, bob])
    assert email_of(alice, people[alice]) == "alice@example.com"
    assert email_of(bob, people[bob]) == "bob@example.org", "the email set in DataHub's UI wins"
