"""Jira Cloud (REST API v3) as a ticket tool.

* open: ``POST /rest/api/3/issue`` — summary ``[SEVERITY] title``, an ADF description ending with the incident
  marker, labels ``pareis`` and ``pareis-<digest of the incident URN>``.
* open after a create whose answer was lost (a timeout, a 5xx after Jira wrote it): Retriable while the search does
  not show the issue, for ``index_grace_s`` — the search index lags the write, and creating again would make a
  second issue.
* find: the enhanced JQL search ``GET /rest/api/3/search/jql`` on ``project = … AND labels = "pareis-<digest>"``.
  Jira Cloud's search index is eventually consistent: an issue created a moment ago may not be found yet
  (a crash and restart take longer than the index does; :class:`~pareis.tickets.delivery.TicketDelivery`
  remembers the refs it made so that updates right after an open never depend on the index).
* comment: ``POST /rest/api/3/issue/{key}/comment`` with an ADF body.
* close: nothing when the issue's status category is already ``done``; else the comment, then
  ``GET …/transitions`` and ``POST …/transitions`` with the transition named ``done_transition`` (matched on
  the transition's name or its target status's name, case-insensitively).

* owners (``users``: ``tickets.jira.users``, owner URN / email / user name → Jira account id): the issue is
  created with the first mapped owner (the failing dataset's first) as ``assignee``, and every other mapped
  owner is added with ``POST /rest/api/3/issue/{key}/watchers`` (idempotent in Jira, so an open that finds its
  issue again adds them again harmlessly). Without a mapping nobody is assigned; the description names the
  owners either way.

Authentication is basic auth ``email:api-token``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from pareis.config import JiraSettings
from pareis.errors import Fatal, Retriable
from pareis.tickets.failures import Rejected, dig, for_status
from pareis.tickets.port import IncidentTicket, TicketRef, mapped, marker, urn_digest

API = "/rest/api/3"


class JiraTicketer:
    """Tickets as issues of one Jira project, through an injectable :class:`httpx.Client`."""

    def __init__(
        self,
        *,
        base_url: str,
        email: str,
        token: str,
        project: str,
        issue_type: str = "Bug",
        done_transition: str = "Done",
        http: httpx.Client | None = None,
        timeout_s: float = 5.0,
        index_grace_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        users: Mapping[str, str] | None = None,
    ) -> None:
        self._users = dict(users or {})
        self._base = base_url.rstrip("/")
        self._auth = httpx.BasicAuth(email, token)
        self._project = project
        self._issue_type = issue_type
        self._done = done_transition.casefold()
        self._uncertain: dict[str, float] = {}
        """Incident URN → when a create's outcome became unknown (its answer lost: it may exist, unindexed)."""
        self._index_grace_s = index_grace_s
        self._clock = clock
        # A few seconds per call (3 s to connect): a hung tool must not hold the partition past its poll interval.
        self._http = http or httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(3.0, timeout_s)))

    @classmethod
    def from_settings(cls, settings: JiraSettings, *, http: httpx.Client | None = None) -> JiraTicketer:
        if not (settings.url and settings.email and settings.token and settings.project):
            raise Fatal("jira: tickets.jira.url, email, token and project are all needed")
        return cls(
            base_url=settings.url,
            email=settings.email,
            token=settings.token.get_secret_value(),
            project=settings.project,
            issue_type=settings.issue_type,
            done_transition=settings.done_transition,
            http=http,
            users=settings.users,
        )

    @property
    def tool(self) -> str:
        return "jira"

    @staticmethod
    def label(incident_urn: str) -> str:
        """The label that finds an incident's issue again (JQL-safe: letters, digits, dashes)."""
        return "pareis-" + urn_digest(incident_urn)

    def open(self, incident: IncidentTicket) -> TicketRef:
        urn = incident.incident_urn
        accounts = mapped(incident.owners, self._users)
        existing = self.find(urn)
        if existing is not None:
            self._uncertain.pop(urn, None)
            self._watch(existing, accounts[1:])
            return existing
        since = self._uncertain.get(urn)
        if since is not None and self._clock() - since < self._index_grace_s:
            # Jira's search lags its writes: creating again now would make a second issue.
            raise Retriable(
                f"jira: an earlier create for {urn} may have succeeded (its answer was lost); "
                "waiting for the search index before creating again"
            )
        fields = {
            "project": {"key": self._project},
            "issuetype": {"name": self._issue_type},
            "summary": f"[{incident.severity}] {incident.title}"[:255],
            "description": adf(incident.body, link=incident.url, footer=marker(incident.incident_urn)),
            "labels": ["pareis", self.label(incident.incident_urn)],
        }
        if accounts:
            fields["assignee"] = {"accountId": accounts[0]}
        try:
            created = self._request("POST", f"{API}/issue", json={"fields": fields})
        except Retriable:
            self._uncertain[urn] = self._clock()
            raise
        self._uncertain.pop(urn, None)
        ref = self._ref(dig("jira", created, "key"))
        self._watch(ref, accounts[1:])
        return ref

    def _watch(self, ticket: TicketRef, accounts: list[str]) -> None:
        for account in accounts:
            self._request("POST", f"{API}/issue/{_key(ticket)}/watchers", json=account)

    def find(self, incident_urn: str) -> TicketRef | None:
        project = self._project.replace("\\", "\\\\").replace('"', '\\"')
        jql = f'project = "{project}" AND labels = "{self.label(incident_urn)}" ORDER BY created ASC'
        found = self._request("GET", f"{API}/search/jql", params={"jql": jql, "fields": "summary", "maxResults": "1"})
        issues = found.get("issues") or []
        return self._ref(dig("jira", issues, 0, "key")) if issues else None

    def comment(self, ticket: TicketRef, text: str) -> None:
        self._request("POST", f"{API}/issue/{_key(ticket)}/comment", json={"body": adf(text)})

    def close(self, ticket: TicketRef, text: str | None) -> None:
        key = _key(ticket)
        issue = self._request("GET", f"{API}/issue/{key}", params={"fields": "status"})
        status = (issue.get("fields") or {}).get("status") or {}
        if (status.get("statusCategory") or {}).get("key") == "done":
            return
        if text is not None:
            self.comment(ticket, text)
        transitions = self._request("GET", f"{API}/issue/{key}/transitions").get("transitions") or []
        for transition in transitions:
            target = str((transition.get("to") or {}).get("name", ""))
            if self._done in (str(transition.get("name", "")).casefold(), target.casefold()):
                self._request(
                    "POST", f"{API}/issue/{key}/transitions", json={"transition": {"id": dig("jira", transition, "id")}}
                )
                return
        names = sorted(str(t.get("name")) for t in transitions)
        raise Rejected("jira", 200, f"available transitions: {names}", what=f"no transition {self._done!r} on {key}")

    def _ref(self, key: str) -> TicketRef:
        return TicketRef(self.tool, key, f"{self._base}/browse/{key}")

    def _request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._http.request(
                method, self._base + path, auth=self._auth, headers={"Accept": "application/json"}, **kwargs
            )
        except httpx.RequestError as error:
            raise Retriable(f"jira unreachable: {error!r}") from error
        if not response.is_success:
            raise for_status("jira", response.status_code, response.headers, response.text, what=f"{method} {path}")
        if not response.content:
            return {}
        try:
            answer = response.json()
        except ValueError as error:  # a proxy's HTML page with a 200: the service is not really there
            raise Retriable(f"jira answered non-JSON to {method} {path}") from error
        if not isinstance(answer, dict):  # every endpoint used here answers an object
            raise Retriable(f"jira answered {type(answer).__name__} to {method} {path}")
        return answer


def _key(ticket: TicketRef) -> str:
    if ticket.tool != "jira" or not ticket.id:
        raise Rejected("jira", 0, "", what=f"not a Jira ticket: {ticket}")
    return ticket.id


def adf(text: str, *, link: str | None = None, footer: str | None = None) -> dict[str, Any]:
    """Plain text as an Atlassian Document: a paragraph per blank-line-separated block, lines joined by hard
    breaks; then the link, then the footer in italics."""
    content: list[dict[str, Any]] = []
    for block in (b for b in text.strip().split("\n\n") if b.strip()):
        nodes: list[dict[str, Any]] = []
        for line in block.strip().split("\n"):
            if nodes:
                nodes.append({"type": "hardBreak"})
            if line:
                nodes.append({"type": "text", "text": line})
        content.append({"type": "paragraph", "content": nodes})
    if link:
        mark = {"type": "link", "attrs": {"href": link}}
        content.append(
            {"type": "paragraph", "content": [{"type": "text", "text": "Open the incident", "marks": [mark]}]}
        )
    if footer:
        text_node = {"type": "text", "text": footer, "marks": [{"type": "em"}]}
        content.append({"type": "paragraph", "content": [text_node]})
    return {"type": "doc", "version": 1, "content": content}
