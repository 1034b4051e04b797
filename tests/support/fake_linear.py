"""A fake Linear GraphQL API: issueCreate (with ``assigneeId`` and ``subscriberIds``), commentCreate, issueUpdate,
workflowStates, issues, issue.

Speaks what the documented API does: ``POST /graphql`` with ``{"query", "variables"}``, a personal API key in
``Authorization`` with no ``Bearer`` prefix, results under ``data``, failures as ``errors`` whose
``extensions.code`` names them (``AUTHENTICATION_ERROR``, ``INVALID_INPUT``, ``RATELIMITED``, …) with HTTP 400,
``IssueCreateInput.id`` as an optional client-chosen UUID v4, workflow states typed ``backlog`` / ``unstarted`` /
``started`` / ``completed`` / ``canceled``, and 429 with ``Retry-After`` on demand.

It does not parse GraphQL: it reads the operation's root field (one per operation, as the client sends) and
its variables, checks that the operation declares the input types Linear's schema has for that field, and
answers with whole objects whatever the selection set asks.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from tests.support.fake_http import FakeServer, Recorded, Reply

TEAM_ID = "8f0a9d3e-6c1b-4e2a-9b7d-3c5e1f2a4b6c"
_UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_ROOT = re.compile(r"^\s*(?:(query|mutation)\b[^{]*)?\{\s*(\w+)", re.DOTALL)
_SCHEMA = {  # root field: (operation type, an input type the operation must declare)
    "issueCreate": ("mutation", "IssueCreateInput!"),
    "commentCreate": ("mutation", "CommentCreateInput!"),
    "issueUpdate": ("mutation", "IssueUpdateInput!"),
    "workflowStates": ("query", "WorkflowStateFilter"),
    "issues": ("query", "IssueFilter"),
    "issue": ("query", "String!"),
}
_STATES = [("Backlog", "backlog"), ("Todo", "unstarted"), ("In Progress", "started"), ("Done", "completed")]


class FakeLinear(FakeServer):
    """One workspace (``acme``) with one team ``ENG`` (``TEAM_ID``) and its default workflow."""

    def __init__(self, api_key: str = "lin_api_test") -> None:
        super().__init__()
        self.api_key = api_key
        self.states = [
            {"id": str(uuid.uuid4()), "name": name, "type": kind, "position": float(i), "team": {"id": TEAM_ID}}
            for i, (name, kind) in enumerate([*_STATES, ("Canceled", "canceled")])
        ]
        self.issues: dict[str, dict[str, Any]] = {}  # by id, in creation order
        self.users: set[str] = set()
        """The workspace's user ids: ``assigneeId`` and ``subscriberIds`` must name them (else INVALID_INPUT)."""
        self.comments: list[dict[str, Any]] = []

    def comments_on(self, issue_id: str) -> list[str]:
        return [c["body"] for c in self.comments if c["issueId"] == issue_id]

    def rate_limited_reply(self, reset_in_s: float) -> Reply:
        """Linear's own rate-limit answer: code ``RATELIMITED`` and the reset time (epoch ms) in a header."""
        reset_ms = str(int((time.time() + reset_in_s) * 1000))
        return _error(400, "Rate limit exceeded", "RATELIMITED", headers={"X-RateLimit-Requests-Reset": reset_ms})

    # --- the API ---------------------------------------------------------------------------------------------
    def error_reply(self, status: int) -> Reply:
        if status == 429:
            return _error(429, "Too many requests", "RATELIMITED")
        return Reply.text(status, "<html><body>Bad gateway</body></html>")

    def authenticate(self, request: Recorded) -> Reply | None:
        if request.headers.get("authorization") == self.api_key:
            return None
        return _error(400, "Authentication required, not authenticated", "AUTHENTICATION_ERROR")

    def handle(self, request: Recorded) -> Reply:
        if request.method != "POST" or request.path != "/graphql":
            return Reply.text(404, "Not found")
        try:
            payload = request.json()
            query = str(payload["query"])
            variables = payload.get("variables") or {}
        except (ValueError, KeyError, TypeError):
            return _error(400, "Must provide query string.", "BAD_REQUEST")
        match = _ROOT.match(query)
        root = match.group(2) if match else ""
        if root not in _SCHEMA:
            return _error(400, f"Cannot query field '{root}' on type 'Query'.", "GRAPHQL_VALIDATION_FAILED")
        operation, input_type = _SCHEMA[root]
        if (match.group(1) or "query") != operation or input_type not in query:  # type: ignore[union-attr]
            return _error(400, f"'{root}' must be a {operation} declaring {input_type}", "GRAPHQL_VALIDATION_FAILED")
        data = getattr(self, "_" + root)(variables)
        return data if isinstance(data, Reply) else Reply.json(200, {"data": {root: data}})

    def _issueCreate(self, variables: dict[str, Any]) -> Any:
        fields = variables.get("input") or {}
        if fields.get("teamId") != TEAM_ID:
            return _error(400, "Entity not found: Team", "INVALID_INPUT")
        if not str(fields.get("title") or "").strip():
            return _error(400, "title should not be empty", "INVALID_INPUT")
        if fields.get("priority", 0) not in range(5):
            return _error(400, "priority must be an integer from 0 to 4", "INVALID_INPUT")
        issue_id = fields.get("id") or str(uuid.uuid4())
        if not _UUID4.match(issue_id):
            return _error(400, "id must be a UUID v4", "INVALID_INPUT")
        if issue_id in self.issues:
            return _error(400, "An issue with this id already exists", "INVALID_INPUT")
        people = [fields["assigneeId"]] if "assigneeId" in fields else []
        people += list(fields.get("subscriberIds") or [])
        if any(p not in self.users for p in people):
            return _error(400, "Entity not found: User", "INVALID_INPUT")
        identifier = f"ENG-{len(self.issues) + 1}"
        self.issues[issue_id] = {
            "id": issue_id,
            "identifier": identifier,
            "title": fields["title"],
            "description": fields.get("description"),
            "priority": fields.get("priority", 0),
            "url": f"https://linear.app/acme/issue/{identifier}",
            "team": {"id": TEAM_ID},
            "state": self.states[1],
            "assignee": {"id": fields["assigneeId"]} if "assigneeId" in fields else None,
            "subscriberIds": list(fields.get("subscriberIds") or []),
        }
        return {"success": True, "issue": self.issues[issue_id]}

    def _commentCreate(self, variables: dict[str, Any]) -> Any:
        fields = variables.get("input") or {}
        if fields.get("issueId") not in self.issues:
            return _error(400, "Entity not found: Issue", "INVALID_INPUT")
        if not str(fields.get("body") or "").strip():
            return _error(400, "body should not be empty", "INVALID_INPUT")
        comment = {"id": str(uuid.uuid4()), "issueId": fields["issueId"], "body": fields["body"]}
        self.comments.append(comment)
        return {"success": True, "comment": comment}

    def _issueUpdate(self, variables: dict[str, Any]) -> Any:
        issue = self.issues.get(str(variables.get("id")))
        if issue is None:
            return _error(400, "Entity not found: Issue", "INVALID_INPUT")
        fields = variables.get("input") or {}
        if "stateId" in fields:
            state = next((s for s in self.states if s["id"] == fields["stateId"]), None)
            if state is None:
                return _error(400, "Entity not found: WorkflowState", "INVALID_INPUT")
            issue["state"] = state
        return {"success": True, "issue": issue}

    def _workflowStates(self, variables: dict[str, Any]) -> Any:
        wanted = variables.get("filter") or {}
        team = ((wanted.get("team") or {}).get("id") or {}).get("eq")
        kind = (wanted.get("type") or {}).get("eq")
        nodes = [s for s in self.states if team in (None, TEAM_ID) and kind in (None, s["type"])]
        return {"nodes": nodes if team in (None, TEAM_ID) else [], "pageInfo": {"hasNextPage": False}}

    def _issues(self, variables: dict[str, Any]) -> Any:
        wanted = variables.get("filter") or {}
        issue_id = (wanted.get("id") or {}).get("eq")
        contains = (wanted.get("description") or {}).get("contains")
        nodes = [
            i
            for i in self.issues.values()
            if issue_id in (None, i["id"]) and (contains is None or contains in (i["description"] or ""))
        ]
        first = int(variables.get("first") or 50)
        return {"nodes": nodes[:first], "pageInfo": {"hasNextPage": len(nodes) > first}}

    def _issue(self, variables: dict[str, Any]) -> Any:
        wanted = str(variables.get("id"))
        issue = self.issues.get(wanted) or next((i for i in self.issues.values() if i["identifier"] == wanted), None)
        return issue if issue is not None else _error(400, "Entity not found: Issue", "INVALID_INPUT")


def _error(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> Reply:
    extensions = {"code": code, "type": code.lower().replace("_", " "), "userPresentableMessage": message}
    return Reply.json(status, {"errors": [{"message": message, "extensions": extensions}], "data": None}, headers)
