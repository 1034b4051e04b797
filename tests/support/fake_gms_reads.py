"""A fake DataHub GMS's read side on 127.0.0.1, over the state the bundled sample leaves behind: what
``pareis bootstrap-index --from-datahub`` and the gate's GMS reads ask (GraphQL ``scrollAcrossEntities``,
``GET /entitiesV2/<urn>``, ``getTimeseriesAspectValues``); ``token`` makes a request without it a 401."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson

from pareis.datahub.files.metadata_file import read_proposals
from pareis.datahub.gms.emulator import ChangeLogEmulator
from pareis.datahub.wire.aspects import is_timeseries
from pareis.replay import proposal_clock
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
    "CORP_USER": "corpuser",
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
