"""Linear (GraphQL API) as a ticket tool.

* open: ``issueCreate`` with a Markdown description (the incident's brief, decision first:
  :func:`pareis.core.incident_text.markdown`, which the ticket's ``body`` is) and a client-chosen ``id``: a UUID
  v4-shaped digest of the incident URN. The same
  incident always asks for the same issue id, so even a create whose answer was lost (timeout, crash) cannot
  make a second issue: Linear refuses the duplicate id, and ``open`` then finds the first one.
* find: ``issues(filter: {id: {eq: <that id>}})`` (a read by id, consistent right after the create).
* comment: ``commentCreate`` with a client-chosen ``id`` derived from the effect id the same way: a repeat is
  refused as a duplicate and then found (``comments(filter: {id: …})``, which is also ``posted``).
* close: nothing when the issue's state type is already ``completed`` or ``canceled``; else ``issueUpdate`` to
  the team's first workflow state of type ``completed`` (looked up once with ``workflowStates``).

Owners (``users``: ``tickets.linear.users``, owner URN / email / user name → Linear user id): the first mapped
owner is the issue's ``assigneeId``, the others its ``subscriberIds``, set at creation.

The personal API key goes in ``Authorization`` as is (no ``Bearer``). Linear reports failures as GraphQL
``errors`` whose ``extensions.code`` names them: ``RATELIMITED`` → Retriable (the wait from
``X-RateLimit-Requests-Reset``, epoch milliseconds, or ``Retry-After``), ``AUTHENTICATION_ERROR`` → Fatal (see
:mod:`pareis.tickets.failures`), ``INTERNAL_SERVER_ERROR`` → Retriable, anything else → Poison.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from pareis.config import LinearSettings
from pareis.core.impact import Severity
from pareis.errors import Fatal, PareisError, Retriable
from pareis.tickets.failures import Rejected, Unauthorized, dig, for_status, header, retry_after_seconds
from pareis.tickets.port import IncidentTicket, TicketRef, mapped, marker

PRIORITY = {Severity.HIGH: 2, Severity.MEDIUM: 3, Severity.LOW: 4, Severity.NONE: 0}
"""Linear priorities: 0 none, 1 urgent, 2 high, 3 medium, 4 low."""

_ISSUE = "id identifier url state { type }"
CREATE = f"""mutation PareisIssueCreate($input: IssueCreateInput!) {{
  issueCreate(input: $input) {{ success issue {{ {_ISSUE} }} }}
}}"""
FIND = f"""query PareisIssueFind($filter: IssueFilter, $first: Int) {{
  issues(filter: $filter, first: $first) {{ nodes {{ {_ISSUE} }} }}
}}"""
COMMENT = """mutation PareisCommentCreate($input: CommentCreateInput!) {
  commentCreate(input: $input) { success comment { id } }
}"""
COMMENTS = """query PareisCommentFind($filter: CommentFilter, $first: Int) {
  comments(filter: $filter, first: $first) { nodes { id } }
}"""
UPDATE = f"""mutation PareisIssueUpdate($id: String!, $input: IssueUpdateInput!) {{
  issueUpdate(id: $id, input: $input) {{ success issue {{ {_ISSUE} }} }}
}}"""
STATES = """query PareisCompletedStates($filter: WorkflowStateFilter) {
  workflowStates(filter: $filter) { nodes { id name type position } }
}"""
_CLOSED = {"completed", "canceled"}


class LinearTicketer:
    """Tickets as issues of one Linear team, through an injectable :class:`httpx.Client`."""

    def __init__(
        self,
        *,
        api_key: str,
        team_id: str,
        url: str = "https://api.linear.app/graphql",
        http: httpx.Client | None = None,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.time,
        users: Mapping[str, str] | None = None,
    ) -> None:
        self._users = dict(users or {})
        self._api_key = api_key
        self._team_id = team_id
        self._url = url
        # A few seconds per call (3 s to connect): a hung tool must not hold the partition past its poll interval.
        self._http = http or httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(3.0, timeout_s)))
        self._clock = clock
        self._completed_state: str | None = None

    @classmethod
    def from_settings(cls, settings: LinearSettings, *, http: httpx.Client | None = None) -> LinearTicketer:
        if settings.api_key is None or not settings.team_id:
            raise Fatal("linear: tickets.linear.api_key and tickets.linear.team_id are both needed")
        return cls(
            api_key=settings.api_key.get_secret_value(),
            team_id=settings.team_id,
            url=settings.url,
            http=http,
            users=settings.users,
        )

    @property
    def tool(self) -> str:
        return "linear"

    @staticmethod
    def issue_id(incident_urn: str) -> str:
        """The issue id an incident asks for: a digest of its URN with UUID v4's version and variant bits."""
        return _uuid("pareis:" + incident_urn)

    @staticmethod
    def comment_id(effect_id: str) -> str:
        """The comment id an effect asks for (like :meth:`issue_id`)."""
        return _uuid("pareis-effect:" + effect_id)

    def mark(self, ticket: TicketRef | None = None) -> str:
        return ""  # the ids are ours: nothing to narrow

    def open(self, incident: IncidentTicket) -> TicketRef:
        body = incident.body.strip()  # the brief's Markdown, its links included, when it has one
        if incident.url and incident.brief is None:
            body += f"\n\n[Open the incident]({incident.url})"
        fields = {
            "id": self.issue_id(incident.incident_urn),
            "teamId": self._team_id,
            "title": f"[{incident.severity}] {incident.title}",
            "description": f"{body}\n\n_{marker(incident.incident_urn)}_",
            "priority": PRIORITY[incident.severity],
        }
        people = mapped(incident.owners, self._users)
        if people:
            fields["assigneeId"] = people[0]
        if people[1:]:
            fields["subscriberIds"] = people[1:]
        try:
            created = dig("linear", self._graphql(CREATE, {"input": fields}), "issueCreate")
        except Rejected:
            # An earlier create may have landed without our hearing back: the id is then taken, by our issue.
            existing = self.find(incident.incident_urn)
            if existing is not None:
                return existing
            raise
        return self._ref(dig("linear", _succeeded(created, "issueCreate"), "issue"))

    def find(self, incident_urn: str, since: str = "") -> TicketRef | None:
        variables = {"filter": {"id": {"eq": self.issue_id(incident_urn)}}, "first": 1}
        nodes = dig("linear", self._graphql(FIND, variables), "issues", "nodes")
        return self._ref(nodes[0]) if nodes else None

    def comment(self, ticket: TicketRef, text: str, effect_id: str | None = None) -> None:
        fields = {"issueId": _id(ticket), "body": text}
        if effect_id is not None:
            fields["id"] = self.comment_id(effect_id)
        try:
            result = dig("linear", self._graphql(COMMENT, {"input": fields}), "commentCreate")
        except Rejected:
            # An earlier create may have landed without our hearing back: the id is then taken, by our comment.
            if effect_id is not None and self.posted(ticket, effect_id):
                return
            raise
        _succeeded(result, "commentCreate")

    def posted(self, ticket: TicketRef, effect_id: str, since: str = "") -> bool:
        variables = {"filter": {"id": {"eq": self.comment_id(effect_id)}}, "first": 1}
        return bool(dig("linear", self._graphql(COMMENTS, variables), "comments", "nodes"))

    def close(self, ticket: TicketRef, final: IncidentTicket | None = None) -> None:
        nodes = dig(
            "linear", self._graphql(FIND, {"filter": {"id": {"eq": _id(ticket)}}, "first": 1}), "issues", "nodes"
        )
        if not nodes:
            raise Rejected("linear", 200, "", what=f"no issue {ticket.id}")
        if (nodes[0].get("state") or {}).get("type") in _CLOSED:
            return
        update = {"id": _id(ticket), "input": {"stateId": self._completed()}}
        result = dig("linear", self._graphql(UPDATE, update), "issueUpdate")
        _succeeded(result, "issueUpdate")

    def _completed(self) -> str:
        if self._completed_state is None:
            wanted = {"team": {"id": {"eq": self._team_id}}, "type": {"eq": "completed"}}
            nodes = dig("linear", self._graphql(STATES, {"filter": wanted}), "workflowStates", "nodes")
            if not nodes:
                raise Fatal(f"linear: team {self._team_id} has no workflow state of type 'completed'")
            self._completed_state = str(dig("linear", min(nodes, key=lambda s: s.get("position", 0)), "id"))
        return self._completed_state

    def _ref(self, issue: dict[str, Any]) -> TicketRef:
        return TicketRef(self.tool, str(dig("linear", issue, "id")), issue.get("url"))

    def _graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self._http.post(
                self._url, json={"query": query, "variables": variables}, headers={"Authorization": self._api_key}
            )
        except httpx.RequestError as error:
            raise Retriable(f"linear unreachable: {error!r}") from error
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if isinstance(payload, dict) and payload.get("errors"):
            raise self._translate(response, payload["errors"])
        if not response.is_success:
            raise for_status("linear", response.status_code, response.headers, response.text)
        if not isinstance(payload, dict) or not isinstance(payload.get("data"), dict):
            raise Retriable(f"linear answered without data: {response.text[:200]}")
        return payload["data"]

    def _translate(self, response: httpx.Response, errors: list[Any]) -> PareisError:
        codes = {str((e.get("extensions") or {}).get("code", "")) for e in errors if isinstance(e, dict)}
        body = response.text
        if "RATELIMITED" in codes or response.status_code == 429:
            return Retriable("linear: rate limited", retry_after=self._rate_limit_wait(response.headers))
        if "AUTHENTICATION_ERROR" in codes or response.status_code == 401:
            return Unauthorized("linear", response.status_code, body)
        if "INTERNAL_SERVER_ERROR" in codes or response.status_code >= 500:
            return Retriable(f"linear: server error: {body[:200]}")
        return Rejected("linear", response.status_code, body, what=",".join(sorted(codes)))

    def _rate_limit_wait(self, headers: httpx.Headers) -> float | None:
        reset_ms = header(headers, "X-RateLimit-Requests-Reset")
        if reset_ms is not None:
            try:
                return max(0.0, float(reset_ms) / 1000 - self._clock())
            except ValueError:
                pass
        return retry_after_seconds(header(headers, "Retry-After"))


def _uuid(name: str) -> str:
    """A digest of ``name`` with UUID v4's version and variant bits (what Linear's client-chosen ids must be)."""
    return str(uuid.UUID(bytes=uuid.uuid5(uuid.NAMESPACE_URL, name).bytes, version=4))


def _succeeded(result: Any, what: str) -> dict[str, Any]:
    if not isinstance(result, dict) or not result.get("success"):
        raise Rejected("linear", 200, json.dumps(result), what=f"{what} did not succeed")
    return result


def _id(ticket: TicketRef) -> str:
    if ticket.tool != "linear" or not ticket.id:
        raise Rejected("linear", 0, "", what=f"not a Linear ticket: {ticket}")
    return ticket.id
