"""A fake Linear GraphQL API, executing each request against a schema with graphql-core.

Speaks what the documented API does: ``POST /graphql`` with ``{"query", "variables"}``, a personal API key in
``Authorization`` with no ``Bearer`` prefix, results under ``data``, failures as ``errors`` whose
``extensions.code`` names them (``AUTHENTICATION_ERROR``, ``INVALID_INPUT``, ``RATELIMITED``,
``GRAPHQL_VALIDATION_FAILED``, …) with HTTP 400, ``IssueCreateInput.id`` and ``CommentCreateInput.id`` as
optional client-chosen UUID v4s, ``assigneeId`` and ``subscriberIds`` naming the workspace's ``users``,
workflow states typed ``backlog`` / ``unstarted`` / ``started`` / ``completed`` / ``canceled``, and 429 with
``Retry-After`` on demand.

:data:`SCHEMA` is a subset of Linear's published schema (``packages/sdk/src/schema.graphql`` of linear/linear):
the types, fields, arguments and input types Pareis uses, with Linear's names and nullability. Queries are
parsed, validated against it and executed, so a field Linear does not have is refused, and the answer holds
exactly the fields the query selects — a ticketer that asks for too little fails here as it would on Linear.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from graphql import GraphQLError, build_schema, graphql_sync

from tests.support.fake_http import FakeServer, Recorded, Reply

TEAM_ID = "8f0a9d3e-6c1b-4e2a-9b7d-3c5e1f2a4b6c"
TEAM = {"id": TEAM_ID, "key": "ENG", "name": "Engineering"}
_UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
_STATES = [("Backlog", "backlog"), ("Todo", "unstarted"), ("In Progress", "started"), ("Done", "completed")]

SCHEMA = build_schema(
    """
    scalar DateTime

    type Query {
      issue(id: String!): Issue!
      issues(filter: IssueFilter, first: Int, after: String, includeArchived: Boolean): IssueConnection!
      comment(id: String): Comment!
      comments(filter: CommentFilter, first: Int, after: String, includeArchived: Boolean): CommentConnection!
      workflowStates(filter: WorkflowStateFilter, first: Int, after: String): WorkflowStateConnection!
    }

    type Mutation {
      issueCreate(input: IssueCreateInput!): IssuePayload!
      issueUpdate(id: String!, input: IssueUpdateInput!): IssuePayload!
      commentCreate(input: CommentCreateInput!): CommentPayload!
    }

    type PageInfo { hasNextPage: Boolean! hasPreviousPage: Boolean! startCursor: String endCursor: String }
    type Team { id: ID! key: String! name: String! }
    type WorkflowState { id: ID! name: String! type: String! position: Float! team: Team! }
    type Issue {
      id: ID!
      identifier: String!
      number: Float!
      title: String!
      description: String
      priority: Float!
      url: String!
      createdAt: DateTime!
      team: Team!
      state: WorkflowState!
      assignee: User
    }
    type User { id: ID! }
    type Comment { id: ID! body: String! url: String! createdAt: DateTime! issue: Issue issueId: String }
    type IssueConnection { nodes: [Issue!]! pageInfo: PageInfo! }
    type CommentConnection { nodes: [Comment!]! pageInfo: PageInfo! }
    type WorkflowStateConnection { nodes: [WorkflowState!]! pageInfo: PageInfo! }
    type IssuePayload { success: Boolean! lastSyncId: Float! issue: Issue }
    type CommentPayload { success: Boolean! lastSyncId: Float! comment: Comment! }

    input IDComparator { eq: ID neq: ID in: [ID!] nin: [ID!] }
    input IssueIDComparator { eq: ID neq: ID in: [ID!] nin: [ID!] }
    input StringComparator { eq: String neq: String in: [String!] nin: [String!] contains: String }
    input NullableStringComparator {
      eq: String neq: String in: [String!] nin: [String!] contains: String null: Boolean
    }
    input TeamFilter { id: IDComparator key: StringComparator name: StringComparator }
    input WorkflowStateFilter { id: IDComparator name: StringComparator type: StringComparator team: TeamFilter }
    input IssueFilter {
      id: IssueIDComparator
      description: NullableStringComparator
      title: StringComparator
      team: TeamFilter
      state: WorkflowStateFilter
    }
    input CommentFilter { id: IDComparator body: StringComparator }
    input IssueCreateInput {
      id: String
      teamId: String!
      title: String
      description: String
      priority: Int
      stateId: String
      assigneeId: String
      labelIds: [String!]
      subscriberIds: [String!]
    }
    input IssueUpdateInput {
      title: String
      description: String
      priority: Int
      stateId: String
      assigneeId: String
      subscriberIds: [String!]
    }
    input CommentCreateInput { id: String issueId: String body: String parentId: String }
    """
)


class FakeLinear(FakeServer):
    """One workspace (``acme``) with one team ``ENG`` (``TEAM_ID``) and its default workflow."""

    def __init__(self, api_key: str = "lin_api_test") -> None:
        super().__init__()
        self.api_key = api_key
        self.states = [
            {"id": str(uuid.uuid4()), "name": name, "type": kind, "position": float(i), "team": TEAM}
            for i, (name, kind) in enumerate([*_STATES, ("Canceled", "canceled")])
        ]
        self.issues: dict[str, dict[str, Any]] = {}  # by id, in creation order
        self.users: set[str] = set()
        """The workspace's user ids: ``assigneeId`` and ``subscriberIds`` must name them (else INVALID_INPUT)."""
        self.users: set[str] = set()
        """The workspace's user ids: ``assigneeId`` and ``subscriberIds`` must name them (else INVALID_INPUT)."""
        self.comments: list[dict[str, Any]] = []
        self.sync = 0

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
        result = graphql_sync(SCHEMA, query, root_value=_Root(self), variable_values=variables)
        if result.errors:
            errors = [_formatted(e) for e in result.errors]
            return Reply.json(400, {"errors": errors, "data": result.data})
        return Reply.json(200, {"data": result.data})


class _Root:
    """The root value graphql-core resolves the root fields on (each a method named as Linear's field)."""

    def __init__(self, fake: FakeLinear) -> None:
        self.fake = fake

    def issueCreate(self, _info: Any, input: dict[str, Any]) -> dict[str, Any]:
        if input["teamId"] != TEAM_ID:
            raise _invalid("Entity not found: Team")
        if not str(input.get("title") or "").strip():
            raise _invalid("title should not be empty")
        if input.get("priority", 0) not in range(5):
            raise _invalid("priority must be an integer from 0 to 4")
        issue_id = input.get("id") or str(uuid.uuid4())
        if not _UUID4.match(issue_id):
            raise _invalid("id must be a UUID v4")
        if issue_id in self.fake.issues:
            raise _invalid("An issue with this id already exists")
        people = [input["assigneeId"]] if input.get("assigneeId") else []
        people += list(input.get("subscriberIds") or [])
        if any(p not in self.fake.users for p in people):
            raise _invalid("Entity not found: User")
        number = len(self.fake.issues) + 1
        identifier = f"ENG-{number}"
        self.fake.issues[issue_id] = {
            "id": issue_id,
            "identifier": identifier,
            "number": number,
            "title": input["title"],
            "description": input.get("description"),
            "priority": input.get("priority", 0),
            "assigneeId": input.get("assigneeId"),
            "url": f"https://linear.app/acme/issue/{identifier}",
            "createdAt": _now(),
            "team": TEAM,
            "state": self.fake.states[1],
            "assignee": {"id": input["assigneeId"]} if input.get("assigneeId") else None,
            "subscriberIds": list(input.get("subscriberIds") or []),
        }
        return self._payload(issue=self.fake.issues[issue_id])

    def commentCreate(self, _info: Any, input: dict[str, Any]) -> dict[str, Any]:
        issue = self.fake.issues.get(str(input.get("issueId")))
        if issue is None:
            raise _invalid("Entity not found: Issue")
        if not str(input.get("body") or "").strip():
            raise _invalid("body should not be empty")
        comment_id = input.get("id") or str(uuid.uuid4())
        if not _UUID4.match(comment_id):
            raise _invalid("id must be a UUID v4")
        if any(c["id"] == comment_id for c in self.fake.comments):
            raise _invalid("A comment with this id already exists")
        comment = {
            "id": comment_id,
            "issueId": issue["id"],
            "issue": issue,
            "body": input["body"],
            "url": f"{issue['url']}#comment-{comment_id[:8]}",
            "createdAt": _now(),
        }
        self.fake.comments.append(comment)
        return self._payload(comment=comment)

    def issueUpdate(self, _info: Any, id: str, input: dict[str, Any]) -> dict[str, Any]:
        issue = self.fake.issues.get(id)
        if issue is None:
            raise _invalid("Entity not found: Issue")
        if "stateId" in input:
            state = next((s for s in self.fake.states if s["id"] == input["stateId"]), None)
            if state is None:
                raise _invalid("Entity not found: WorkflowState")
            issue["state"] = state
        return self._payload(issue=issue)

    def workflowStates(self, _info: Any, filter: dict[str, Any] | None = None, **_: Any) -> dict[str, Any]:
        return _connection([s for s in self.fake.states if _state_matches(s, filter or {})], None)

    def issues(self, _info: Any, filter: dict[str, Any] | None = None, first: int | None = None, **_: Any) -> Any:
        wanted = filter or {}
        nodes = [
            i
            for i in self.fake.issues.values()
            if _compare(i["id"], wanted.get("id"))
            and _compare(i["description"], wanted.get("description"))
            and _compare(i["title"], wanted.get("title"))
            and _state_matches(i["state"], wanted.get("state") or {})
            and _team_matches(wanted.get("team"))
        ]
        return _connection(nodes, first)

    def issue(self, _info: Any, id: str) -> dict[str, Any]:
        found = self.fake.issues.get(id) or next((i for i in self.fake.issues.values() if i["identifier"] == id), None)
        if found is None:
            raise _invalid("Entity not found: Issue")
        return found

    def comments(self, _info: Any, filter: dict[str, Any] | None = None, first: int | None = None, **_: Any) -> Any:
        wanted = filter or {}
        nodes = [
            c
            for c in self.fake.comments
            if _compare(c["id"], wanted.get("id")) and _compare(c["body"], wanted.get("body"))
        ]
        return _connection(nodes, first)

    def comment(self, _info: Any, id: str | None = None) -> dict[str, Any]:
        found = next((c for c in self.fake.comments if c["id"] == id), None)
        if found is None:
            raise _invalid("Entity not found: Comment")
        return found

    def _payload(self, **entity: Any) -> dict[str, Any]:
        self.fake.sync += 1
        return {"success": True, "lastSyncId": float(self.fake.sync), **entity}


def _compare(value: Any, comparator: dict[str, Any] | None) -> bool:
    """Linear's comparators: ``eq``, ``neq``, ``in``, ``nin``, ``contains``, ``null``."""
    if not comparator:
        return True
    checks = {
        "eq": lambda v: value == v,
        "neq": lambda v: value != v,
        "in": lambda v: value in v,
        "nin": lambda v: value not in v,
        "contains": lambda v: v in (value or ""),
        "null": lambda v: (value is None) == v,
    }
    return all(checks[name](wanted) for name, wanted in comparator.items() if wanted is not None)


def _team_matches(team: dict[str, Any] | None) -> bool:
    return not team or (_compare(TEAM["id"], team.get("id")) and _compare(TEAM["key"], team.get("key")))


def _state_matches(state: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return (
        _compare(state["id"], wanted.get("id"))
        and _compare(state["name"], wanted.get("name"))
        and _compare(state["type"], wanted.get("type"))
        and _team_matches(wanted.get("team"))
    )


def _connection(nodes: list[dict[str, Any]], first: int | None) -> dict[str, Any]:
    limit = 50 if first is None else first
    page = nodes[:limit]
    info = {"hasNextPage": len(nodes) > limit, "hasPreviousPage": False, "startCursor": None, "endCursor": None}
    return {"nodes": page, "pageInfo": info}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def _invalid(message: str) -> GraphQLError:
    return GraphQLError(message, extensions={"code": "INVALID_INPUT"})


def _formatted(error: GraphQLError) -> dict[str, Any]:
    """Linear's error shape: ``extensions.code`` always (a query the schema refuses: validation failed)."""
    formatted = dict(error.formatted)
    code = (error.extensions or {}).get("code") or "GRAPHQL_VALIDATION_FAILED"
    message = str(formatted.get("message", ""))
    formatted["extensions"] = {"code": code, "type": code.lower().replace("_", " "), "userPresentableMessage": message}
    return formatted


def _error(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> Reply:
    extensions = {"code": code, "type": code.lower().replace("_", " "), "userPresentableMessage": message}
    return Reply.json(status, {"errors": [{"message": message, "extensions": extensions}], "data": None}, headers)
