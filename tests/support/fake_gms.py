"""A fake DataHub GMS on 127.0.0.1 answering what ``DatahubRestEmitter`` calls, recording every proposal.

Endpoints: ``GET /config``; Rest.li ``POST /aspects?action=ingestProposal`` and ``…=ingestProposalBatch``;
Rest.li ``GET /aspects/<urn>?aspect=<name>&version=0`` (what ``DataHubGraph.get_aspect`` asks: 404 when absent, else
``{"aspect": {<Pegasus class name>: value}, "version": 0}``); OpenAPI ``POST``/``PATCH
/openapi/v3/entity/<entityType>``. ``version`` decides which ingestion path the emitter picks from ``/config``
(OpenAPI from 1.0.1 on, as acryl's SDK decides). Every accepted proposal is recorded in one normal form
(:class:`Received`), whichever endpoint it came through, and applied to an in-memory store (PATCHes
through :func:`pareis.datahub.gms.patch.apply_patch`, as GMS's templates do).

Validation: every proposal is checked as GMS does (:func:`refusal`: the entity registry, the URN's type, the
aspect against acryl-datahub's class — for a PATCH, the aspect it yields once applied to the stored one); an invalid
one makes the request a 422 with GMS's error shape, and nothing of the request is stored.

Faults: :meth:`FakeGms.fail_next` answers the next *n* requests (``/config`` included) with a status and a
DataHub-shaped error body (Rest.li's ``{exceptionClass, message, status, stackTrace}``); ``token`` makes every
request without ``Authorization: Bearer <token>`` a 401; ``gms=False`` answers ``/config`` as DataHub's
frontend does (no ``noCode``), which the emitter takes for a wrong URL. ``incident_types`` is the set of entity
types ``incidentInfo.entities`` may name (a release: datasets and the other non-ML types; DataHub master adds
``mlModel``, ``mlFeature``, ``mlFeatureTable``); a proposal naming another is refused, the whole request with it.
``incident_list_types`` is the set of entity types whose incidents the server can list (GraphQL ``incidents`` on the
type, ``POST /api/graphql``: a query naming it on another type is a validation error, as GMS answers for a field its
schema lacks); by default those it accepts. The released 1.7.0 accepts the ML types and lists none of them
(:data:`INCIDENT_TYPES_1_7_0`: the write succeeds, the incident is invisible on the model).
:meth:`FakeGms.edit` writes an aspect as a person in DataHub's UI would (not recorded as a proposal).
"""

from __future__ import annotations

import json
import re
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, unquote, urlsplit

from datahub.emitter.serialization_helper import post_json_transform, pre_json_transform
from datahub.metadata.schema_classes import ASPECT_NAME_MAP, ENTITY_TYPE_TO_ASPECT_NAMES

from pareis.datahub.gms.patch import PatchError, apply_patch
from tests.support.fake_http import local_url, serve_local, stop_local

INCIDENT_TYPES_RELEASE = frozenset({"dataset", "chart", "dashboard", "dataFlow", "dataJob", "schemaField"})
"""What ``incidentInfo.entities`` accepts on a DataHub release (no ML entity)."""
INCIDENT_TYPES_MASTER = INCIDENT_TYPES_RELEASE | {"mlModel", "mlFeature", "mlFeatureTable"}
"""What DataHub master accepts (reference §14); never ``mlModelGroup``."""
INCIDENT_TYPES_1_7_0 = {"incident_types": INCIDENT_TYPES_MASTER, "incident_list_types": INCIDENT_TYPES_RELEASE}
"""The released 1.7.0 (reference §15): accepts incidents on ML entities, lists none of them (``FakeGms(**…)``)."""
GRAPHQL_ENTITY_TYPES = {
    "Dataset": "dataset",
    "MLModel": "mlModel",
    "MLFeature": "mlFeature",
    "MLFeatureTable": "mlFeatureTable",
    "MLModelGroup": "mlModelGroup",
}
_FRAGMENT = re.compile(r"\.\.\.\s*on\s+(\w+)\s*\{\s*incidents\b")

EMITTER_PROPERTIES = ("clientId", "clientVersion")
"""System-metadata properties acryl's REST emitter adds on its own; not part of what Pareis proposed."""


@dataclass(frozen=True)
class Received:
    """One proposal in normal form: the aspect (or patch document) and system metadata as parsed JSON."""

    entity_type: str
    entity_urn: str
    change_type: str
    aspect_name: str
    aspect: Any
    system_metadata: dict[str, Any]


def normal_form(obj: dict[str, Any]) -> Received:
    """A proposal from its Rest.li JSON (``pre_json_transform(mcp.to_obj())``) in normal form."""
    aspect = obj.get("aspect") or {}
    value = aspect.get("value")
    return Received(
        entity_type=obj["entityType"],
        entity_urn=obj["entityUrn"],
        change_type=obj.get("changeType", "UPSERT"),
        aspect_name=obj["aspectName"],
        aspect=json.loads(value) if isinstance(value, str | bytes) else value,
        system_metadata=normal_system_metadata(obj.get("systemMetadata")),
    )


def received_from(mcp: Any) -> Received:
    """A proposal object (wrapper or raw class) in normal form, as GMS would receive it."""
    return normal_form(pre_json_transform(mcp.to_obj()))


def normal_system_metadata(value: dict[str, Any] | None) -> dict[str, Any]:
    out = {k: v for k, v in (value or {}).items() if v is not None}
    properties = {k: v for k, v in (out.get("properties") or {}).items() if k not in EMITTER_PROPERTIES}
    if properties:
        out["properties"] = properties
    else:
        out.pop("properties", None)
    return out


class FakeGms:
    """Use as a context manager; ``url`` is the server root (no trailing slash)."""

    def __init__(
        self,
        *,
        version: str = "v1.2.0",
        token: str | None = None,
        gms: bool = True,
        incident_types: frozenset[str] | None = None,
        incident_list_types: frozenset[str] | None = None,
    ) -> None:
        self.version = version
        self.incident_types = INCIDENT_TYPES_RELEASE if incident_types is None else incident_types
        self.incident_list_types = self.incident_types if incident_list_types is None else incident_list_types
        self.token = token
        self.gms = gms
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._store: dict[tuple[str, str], Any] = {}
        self._paths: list[str] = []
        self._faults: list[tuple[int, str, dict[str, str]] | None] = []
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                fake._serve(self)

            do_GET = do_POST = do_PATCH = do_DELETE = _serve

            def setup(self) -> None:
                super().setup()
                # Headers and body leave in two writes; without this, Nagle + delayed ACK add ~40 ms a request.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = serve_local(Handler, "fake-gms")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            stop_local(self._server)
            self._server = None

    @property
    def url(self) -> str:
        return local_url(self._server)

    # --- what tests read and inject ---------------------------------------------------------------------------
    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    @property
    def paths(self) -> list[str]:
        """The method and path of every request, in arrival order (e.g. ``POST /aspects``)."""
        with self._lock:
            return list(self._paths)

    def aspect(self, urn: str, aspect_name: str) -> Any:
        """The current value of an aspect after every accepted proposal; None when never written."""
        with self._lock:
            return self._store.get((urn, aspect_name))

    def edit(self, urn: str, aspect_name: str, value: Any) -> None:
        """Set an aspect as a person would through the UI (GraphQL): stored, not among :attr:`received`."""
        with self._lock:
            self._store[(urn, aspect_name)] = value

    def fail_next(
        self, status: int, *, times: int = 1, after: int = 0, message: str = "", retry_after: str | None = None
    ) -> None:
        """Serve ``after`` requests normally, then answer ``times`` requests with ``status`` and an error body."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        fault = (status, message or f"fake failure {status}", headers)
        with self._lock:
            self._faults.extend([None] * after + [fault] * times)

    # --- serving ------------------------------------------------------------------------------------------------
    def _serve(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        with self._lock:
            self._paths.append(f"{request.command} {parts.path}")
        if self.token is not None and request.headers.get("Authorization") != f"Bearer {self.token}":
            return _reply(request, 401, _error(401, "Unauthorized to perform this action. Please check your token."))
        fault = self._take_fault()
        if fault is not None:
            status, message, headers = fault
            return _reply(request, status, _error(status, message), headers)
        if request.command == "GET" and parts.path == "/config":
            return _reply(request, 200, self._config())
        if request.command == "GET" and parts.path.startswith("/aspects/"):
            return self._get_aspect(request, unquote(parts.path[len("/aspects/") :]), query)
        if request.command == "POST" and parts.path == "/api/graphql":
            return _reply(request, 200, self._graphql(json.loads(body or b"null")))
        try:
            proposals = self._parse(request.command, parts.path, query, body)
        except (KeyError, ValueError, TypeError) as exc:
            return _reply(request, 400, _error(400, f"malformed request: {exc!r}"))
        if proposals is None:
            return _reply(request, 404, _error(404, f"no such endpoint {request.command} {parts.path}"))
        for proposal in proposals:  # as GMS does: the whole request is refused when one proposal is invalid
            problem = refusal(proposal) or self._incident_refusal(proposal)
            if problem is not None:
                return _reply(request, 422, _error(422, problem))
        values = self._applied(proposals)
        if isinstance(values, str):
            return _reply(request, 422, _error(422, values))
        for proposal, value in zip(proposals, values, strict=True):
            self._accept(proposal, value)
        if parts.path.startswith("/openapi/"):
            return _reply(request, 200, [{"urn": p.entity_urn, p.aspect_name: {}} for p in proposals])
        return _reply(request, 200, {"value": proposals[0].entity_urn if proposals else None})

    def _get_aspect(self, request: BaseHTTPRequestHandler, urn: str, query: dict[str, str]) -> None:
        name = query.get("aspect", "")
        cls = ASPECT_NAME_MAP.get(name)
        if cls is None or query.get("version", "0") != "0":
            return _reply(request, 400, _error(400, f"bad aspect request {query}"))
        value = self.aspect(urn, name)
        if value is None:
            return _reply(request, 404, _error(404, f"no {name} for {urn}"))
        fullname = cls.RECORD_SCHEMA.fullname.replace(".pegasus2avro", "")
        return _reply(request, 200, {"aspect": {fullname: value}, "version": 0})

    def _graphql(self, payload: Any) -> dict[str, Any]:
        """The incidents of an entity, as ``entity(urn) { … on <Type> { incidents { total } } }`` asks: the number
        of stored incidents naming it; a validation error when the type cannot list incidents."""
        query = payload.get("query", "") if isinstance(payload, dict) else ""
        urn = ((payload.get("variables") or {}) if isinstance(payload, dict) else {}).get("urn")
        found = _FRAGMENT.search(query)
        if found is None or not isinstance(urn, str):
            return {"errors": [{"message": "the fake GMS answers only the incidents of an entity"}], "data": None}
        kind = GRAPHQL_ENTITY_TYPES.get(found.group(1))
        if kind not in self.incident_list_types:
            message = (
                f"Validation error (FieldUndefined@[entity/incidents]) : Field 'incidents' in type "
                f"'{found.group(1)}' is undefined"
            )
            return {"errors": [{"message": message, "extensions": {"classification": "ValidationError"}}]}
        with self._lock:
            total = sum(
                1
                for (_, name), value in self._store.items()
                if name == "incidentInfo" and urn in (value.get("entities") or [])
            )
        return {"data": {"entity": {"incidents": {"total": total}}}}

    def _incident_refusal(self, proposal: Received) -> str | None:
        if proposal.aspect_name != "incidentInfo" or proposal.change_type == "PATCH":
            return None
        for urn in proposal.aspect.get("entities") or []:
            kind = urn.split(":", 3)[2] if urn.count(":") >= 3 else urn
            if kind not in self.incident_types:
                return f"Incidents are not supported on entity type {kind} ({urn})"
        return None

    def _config(self) -> dict[str, Any]:
        if not self.gms:
            return {"config": {"appVersion": self.version}}
        return {
            "noCode": "true",
            "patchCapable": True,
            "versions": {"acryldata/datahub": {"version": self.version, "commit": "0" * 40}},
            "datahub": {"serverType": "quickstart", "serverEnv": "core"},
        }

    def _take_fault(self) -> tuple[int, str, dict[str, str]] | None:
        with self._lock:
            return self._faults.pop(0) if self._faults else None

    def _parse(self, method: str, path: str, query: dict[str, str], body: bytes) -> list[Received] | None:
        payload = json.loads(body or b"null")
        if method == "POST" and path == "/aspects" and query.get("action") == "ingestProposal":
            return [normal_form(payload["proposal"])]
        if method == "POST" and path == "/aspects" and query.get("action") == "ingestProposalBatch":
            return [normal_form(p) for p in payload["proposals"]]
        prefix = "/openapi/v3/entity/"
        if method in ("POST", "PATCH") and path.startswith(prefix) and "/" not in path[len(prefix) :]:
            entity_type = unquote(path[len(prefix) :])
            return [_openapi(entity_type, method, item) for item in payload]
        return None

    def _applied(self, proposals: list[Received]) -> list[Any] | str:
        """Each proposal's aspect once written (a PATCH applied to what is stored, and to the request's earlier
        proposals), or why GMS would refuse one: a patch it cannot apply, or one yielding an invalid aspect."""
        with self._lock:
            pending = dict(self._store)
        out = []
        for proposal in proposals:
            key = (proposal.entity_urn, proposal.aspect_name)
            value = proposal.aspect
            if proposal.change_type == "PATCH":
                try:
                    value = apply_patch(proposal.aspect_name, pending.get(key), proposal.aspect)
                except PatchError as exc:
                    return f"Failed to apply patch to {proposal.aspect_name}: {exc}"
                problem = aspect_refusal(proposal.aspect_name, value)
                if problem is not None:
                    return f"{problem} (after applying the patch to {proposal.entity_urn})"
            pending[key] = value
            out.append(value)
        return out

    def _accept(self, proposal: Received, value: Any) -> None:
        with self._lock:
            self._received.append(proposal)
            self._store[(proposal.entity_urn, proposal.aspect_name)] = value


def refusal(proposal: Received) -> str | None:
    """Why GMS would refuse ``proposal`` (None: it accepts it), checked as the server does: the entity type and
    the aspect against the entity registry (acryl-datahub's ``ENTITY_TYPE_TO_ASPECT_NAMES``), the URN against the
    entity type, and a whole aspect value against its acryl-datahub class (``from_obj`` then ``validate``)."""
    aspects = ENTITY_TYPE_TO_ASPECT_NAMES.get(proposal.entity_type)
    if aspects is None:
        return f"Unknown entity type {proposal.entity_type}"
    if proposal.aspect_name not in aspects:
        return f"Unknown aspect {proposal.aspect_name} for entity {proposal.entity_type}"
    if not proposal.entity_urn.startswith(f"urn:li:{proposal.entity_type}:"):
        return f"Urn {proposal.entity_urn} is not of entity type {proposal.entity_type}"
    if proposal.change_type == "PATCH":
        return None  # checked once applied (FakeGms._applied)
    return aspect_refusal(proposal.aspect_name, proposal.aspect)


def aspect_refusal(aspect_name: str, aspect: Any) -> str | None:
    """Why GMS would refuse ``aspect`` as the value of ``aspect_name`` (None: it accepts it): acryl-datahub's class
    must read it (``from_obj``) and ``validate`` it."""
    cls = ASPECT_NAME_MAP.get(aspect_name)
    if cls is None:
        return f"No schema for aspect {aspect_name}"
    try:
        value = cls.from_obj(post_json_transform(aspect))
    except Exception as exc:  # noqa: BLE001 (avrogen raises assorted errors on a malformed object)
        return f"Failed to validate record with class {cls.RECORD_SCHEMA.fullname}: {type(exc).__name__}: {exc}"
    if not value.validate():
        return f"Failed to validate record with class {cls.RECORD_SCHEMA.fullname}"
    return None


def _openapi(entity_type: str, method: str, item: dict[str, Any]) -> Received:
    urn = item["urn"]
    (aspect_name,) = (k for k in item if k != "urn")
    entry = item[aspect_name]
    value = entry["value"]
    if method == "PATCH" and isinstance(value, dict) and set(value) == {"patch"}:
        value = value["patch"]  # the emitter wraps a bare list of operations; Rest.li carries it as is
    return Received(
        entity_type=entity_type,
        entity_urn=urn,
        change_type="PATCH" if method == "PATCH" else "UPSERT",
        aspect_name=aspect_name,
        aspect=value,
        system_metadata=normal_system_metadata(entry.get("systemMetadata")),
    )


def _error(status: int, message: str) -> dict[str, Any]:
    return {
        "exceptionClass": "com.linkedin.restli.server.RestLiServiceException",
        "stackTrace": f"com.linkedin.restli.server.RestLiServiceException [HTTP Status:{status}]: {message}",
        "message": message,
        "status": status,
    }


def _reply(request: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
    body = json.dumps(payload).encode()
    request.send_response(status)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        request.send_header(name, value)
    request.end_headers()
    request.wfile.write(body)
