"""``pareis bootstrap --datahub``'s reader (:class:`pareis.datahub.gms_snapshot.GmsSnapshot`) against a local HTTP
server answering the GMS endpoints it calls with DataHub-shaped responses: the current values of the bundled
sample's aspects (as GMS would hold them after ingesting it) and its assertion runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson
import pytest

from pareis.compose.datahub import datahub_graph
from pareis.core.blast import blast_radius
from pareis.datahub.aspects import is_timeseries
from pareis.datahub.gms import ChangeLogEmulator
from pareis.datahub.gms_snapshot import ENTITY_ASPECTS, GmsSnapshot
from pareis.datahub.metadata_file import read_proposals
from pareis.errors import Fatal, Retriable
from pareis.lineage_loader import load_changes, load_files
from pareis.replay import proposal_clock
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.fake_http import FakeServer, Recorded, Reply

SAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "sample" / "timeline.json"
GRAPHQL_TYPES = {
    "DATASET": "dataset",
    "DATA_JOB": "dataJob",
    "DATA_PROCESS_INSTANCE": "dataProcessInstance",
    "MLFEATURE": "mlFeature",
    "MLFEATURE_TABLE": "mlFeatureTable",
    "MLPRIMARY_KEY": "mlPrimaryKey",
    "MLMODEL": "mlModel",
    "MLMODEL_GROUP": "mlModelGroup",
    "ASSERTION": "assertion",
}


class FakeGmsReads(FakeServer):
    """GMS's read endpoints over the state the sample leaves behind: ``POST /api/graphql``
    (``scrollAcrossEntities``), ``GET /entitiesV2/<urn>``, ``POST /aspects?action=getTimeseriesAspectValues``."""

    def __init__(self, token: str | None = None) -> None:
        super().__init__()
        self.token = token
        self.entities: dict[str, dict[str, dict[str, Any]]] = {}
        self.types: dict[str, str] = {}
        self.runs: dict[str, list[dict[str, Any]]] = {}
        emulator = ChangeLogEmulator(is_timeseries)
        clock = proposal_clock(0)
        for proposal in read_proposals([SAMPLE]):
            logged = emulator.apply(proposal, clock(proposal))
            assert logged is not None
            record = logged.record
            self.types[proposal.entity_urn] = proposal.entity_type
            if logged.log == "timeseries":
                self.runs.setdefault(proposal.entity_urn, []).append(proposal.aspect)
                continue
            self.entities.setdefault(proposal.entity_urn, {})[proposal.aspect_name] = {
                "name": proposal.aspect_name,
                "type": "VERSIONED",
                "version": 0,
                "value": orjson.loads(record["aspect"]["value"]),
                "created": record["created"],
                "systemMetadata": record["systemMetadata"],
            }

    def authenticate(self, request: Recorded) -> Reply | None:
        if self.token is not None and request.headers.get("authorization") != f"Bearer {self.token}":
            return Reply.json(401, {"message": "Unauthorized", "status": 401})
        return None

    def handle(self, request: Recorded) -> Reply:
        if request.method == "POST" and request.path == "/api/graphql":
            return self.scroll(request.json()["variables"])
        if request.method == "GET" and request.path.startswith("/entitiesV2/"):
            urn = unquote(request.path.removeprefix("/entitiesV2/"))
            wanted = request.query["aspects"].removeprefix("List(").removesuffix(")").split(",")
            have = self.entities.get(urn, {})
            return Reply.json(200, {"urn": urn, "aspects": {a: have[a] for a in wanted if a in have}})
        if (
            request.method == "POST"
            and request.path == "/aspects"
            and request.query.get("action") == ("getTimeseriesAspectValues")
        ):
            body = request.json()
            assert (body["aspect"], body["entity"]) in (("assertionRunEvent", "assertion"), ("operation", "dataset"))
            series = [
                e for e in self.runs.get(body["urn"], []) if ("assertionUrn" in e) == (body["aspect"] != "operation")
            ]
            events = sorted(series, key=lambda e: -e["timestampMillis"])[: body["limit"]]
            values = [{"aspect": {"value": json.dumps(e), "contentType": "application/json"}} for e in events]
            return Reply.json(200, {"value": {"limit": body["limit"], "values": values}})
        return Reply.json(404, {"message": f"no route {request.method} {request.path}", "status": 404})

    def scroll(self, variables: dict[str, Any]) -> Reply:
        (graphql_type,) = variables["types"]
        urns = sorted(u for u, t in self.types.items() if t == GRAPHQL_TYPES[graphql_type])
        start = int(variables.get("scrollId") or 0)
        page = urns[start : start + variables["batchSize"]]
        following = start + len(page)
        data = {
            "scrollAcrossEntities": {
                "nextScrollId": str(following) if following < len(urns) else None,
                "searchResults": [{"entity": {"urn": u}, "extraProperties": []} for u in page],
            }
        }
        return Reply.json(200, {"data": data})


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
    if not any(c.name == "gate" for c in cli.app.registered_commands):
        cli._register()
    group = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
    at = "2025-10-09T00:00:00Z"
    runner = CliRunner()
    live = runner.invoke(cli.app, ["gate", "--model", group, "--datahub", gms.url, "--at", at, "--json"])
    offline = runner.invoke(cli.app, ["gate", "--model", group, "--metadata", str(SAMPLE), "--at", at, "--json"])
    assert live.exit_code == offline.exit_code and live.exit_code in (0, 1), live.stderr
    assert json.loads(live.stdout)["checks"] == json.loads(offline.stdout)["checks"]
