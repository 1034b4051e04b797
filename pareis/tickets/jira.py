"""Jira Cloud (REST API v3) as a ticket tool.

* open: ``POST /rest/api/3/issue`` — summary ``[SEVERITY] title``, an ADF description rendered from the
  incident's brief, decision first (:mod:`pareis.tickets.jira_adf`: a heading and a bullet list per section, links
  to the incident) and ending with the incident marker, labels ``pareis`` and ``pareis-<digest of the incident
  URN>``.
* mark (before a create): the number of the project's newest issue as the search shows it (the index may lag,
  which only makes the mark lower); find after a mark reads issues by key, ``GET /rest/api/3/issue/<project>-<n>``
  for n past the mark until the keys run out, and returns the one with the incident's label. Reads by key are
  consistent right after a create, where Jira Cloud's search index is not: a create whose answer was lost (a
  timeout, a 502 after Jira wrote it) is found at once, never created twice.
* find without a mark: the enhanced JQL search ``GET /rest/api/3/search/jql`` on ``project = … AND labels =
  "pareis-<digest>"`` (for issues the ledger has no record of).
* comment: ``POST /rest/api/3/issue/{key}/comment`` with an ADF body and the comment property ``pareis``
  ``{"effect_id": …}``; posted: the issue's comments (``GET …/comment``) with their properties
  (``POST /rest/api/3/comment/list?expand=properties``).
* close: nothing when the issue's status category is already ``done``; else ``GET …/transitions`` and
  ``POST …/transitions`` with the transition named ``done_transition`` (matched on the transition's name or its
  target status's name, case-insensitively).
* owners (``users``: ``tickets.jira.users``, owner URN / email / user name → Jira account id): the issue is
  created with the first mapped owner (the failing dataset's first) as ``assignee``, and every other mapped
  owner is added with ``POST /rest/api/3/issue/{key}/watchers`` (idempotent in Jira). A create whose answer was
  lost and that the delivery then finds by key has no watchers added. Without a mapping nobody is assigned; the
  description names the owners either way.

Authentication is basic auth ``email:api-token``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, overload

import httpx

from pareis.config import JiraSettings
from pareis.errors import Fatal, Retriable
from pareis.tickets.failures import Rejected, dig, for_status
from pareis.tickets.jira_adf import adf, brief_doc
from pareis.tickets.port import IncidentTicket, TicketRef, mapped, marker, urn_digest

API = "/rest/api/3"
PROPERTY = "pareis"
"""The comment property that carries the effect id of a Pareis comment."""


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
        probe_limit: int = 500,
        users: Mapping[str, str] | None = None,
    ) -> None:
        self._users = dict(users or {})
        self._base = base_url.rstrip("/")
        self._auth = httpx.BasicAuth(email, token)
        self._project = project
        self._issue_type = issue_type
        self._done = done_transition.casefold()
        self._probe_limit = probe_limit
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
        accounts = mapped(incident.owners, self._users)
        fields = {
            "project": {"key": self._project},
            "issuetype": {"name": self._issue_type},
            "summary": f"[{incident.severity}] {incident.title}"[:255],
            "description": description(incident),
            "labels": ["pareis", self.label(incident.incident_urn)],
        }
        if accounts:
            fields["assignee"] = {"accountId": accounts[0]}
        created = self._request("POST", f"{API}/issue", json={"fields": fields})
        ref = self._ref(dig("jira", created, "key"))
        self._watch(ref, accounts[1:])
        return ref

    def _watch(self, ticket: TicketRef, accounts: list[str]) -> None:
        for account in accounts:  # adding a watcher twice changes nothing
            self._request("POST", f"{API}/issue/{_key(ticket)}/watchers", json=account)

    def mark(self, ticket: TicketRef | None = None) -> str:
        if ticket is not None:
            return ""  # a comment's property is read on its issue, whatever its time
        jql = f'project = "{self._quoted_project()}" ORDER BY created DESC'
        found = self._request("GET", f"{API}/search/jql", params={"jql": jql, "fields": "created", "maxResults": "1"})
        issues = found.get("issues") or []
        return str(_number(dig("jira", issues, 0, "key"))) if issues else "0"

    def find(self, incident_urn: str, since: str = "") -> TicketRef | None:
        if since:
            return self._probe(incident_urn, int(since))
        jql = f'project = "{self._quoted_project()}" AND labels = "{self.label(incident_urn)}" ORDER BY created ASC'
        found = self._request("GET", f"{API}/search/jql", params={"jql": jql, "fields": "summary", "maxResults": "1"})
        issues = found.get("issues") or []
        return self._ref(dig("jira", issues, 0, "key")) if issues else None

    def _probe(self, incident_urn: str, after: int) -> TicketRef | None:
        """The issue with the incident's label among ``<project>-<n>``, n > ``after``, read by key until two keys
        in a row do not exist (one may be a deleted issue)."""
        label, missing = self.label(incident_urn), 0
        for number in range(after + 1, after + 1 + self._probe_limit):
            key = f"{self._project}-{number}"
            issue = self._request("GET", f"{API}/issue/{key}", params={"fields": "labels"}, absent_ok=True)
            if issue is None:
                missing += 1
                if missing == 2:
                    return None
                continue
            missing = 0
            if label in ((issue.get("fields") or {}).get("labels") or []):
                return self._ref(str(issue.get("key", key)))
        raise Retriable(f"jira: more than {self._probe_limit} issues created in {self._project} since the mark")

    def comment(self, ticket: TicketRef, text: str, effect_id: str | None = None) -> None:
        body: dict[str, Any] = {"body": adf(text)}
        if effect_id is not None:
            body["properties"] = [{"key": PROPERTY, "value": {"effect_id": effect_id}}]
        self._request("POST", f"{API}/issue/{_key(ticket)}/comment", json=body)

    def posted(self, ticket: TicketRef, effect_id: str, since: str = "") -> bool:
        key, ids, start = _key(ticket), [], 0
        while True:
            page = self._request(
                "GET",
                f"{API}/issue/{key}/comment",
                params={"startAt": str(start), "maxResults": "100", "orderBy": "-created"},
            )
            comments = page.get("comments") or []
            ids += [int(dig("jira", c, "id")) for c in comments]
            start += len(comments)
            if not comments or start >= int(page.get("total") or 0) or len(ids) >= 1000:
                break
        if not ids:
            return False
        listed = self._request("POST", f"{API}/comment/list", params={"expand": "properties"}, json={"ids": ids[:1000]})
        return any(
            p.get("key") == PROPERTY and (p.get("value") or {}).get("effect_id") == effect_id
            for c in listed.get("values") or []
            for p in c.get("properties") or []
        )

    def close(self, ticket: TicketRef, final: IncidentTicket | None = None) -> None:
        key = _key(ticket)
        issue = self._request("GET", f"{API}/issue/{key}", params={"fields": "status"})
        status = (issue.get("fields") or {}).get("status") or {}
        if (status.get("statusCategory") or {}).get("key") == "done":
            return
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

    def _quoted_project(self) -> str:
        return self._project.replace("\\", "\\\\").replace('"', '\\"')

    def _ref(self, key: str) -> TicketRef:
        return TicketRef(self.tool, key, f"{self._base}/browse/{key}")

    @overload
    def _request(self, method: str, path: str, *, absent_ok: Literal[True], **kwargs: Any) -> dict[str, Any] | None: ...

    @overload
    def _request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]: ...

    def _request(self, method: str, path: str, *, absent_ok: bool = False, **kwargs: Any) -> dict[str, Any] | None:
        """One call; with ``absent_ok`` a 404 is None (a key that does not exist) instead of Poison."""
        try:
            response = self._http.request(
                method, self._base + path, auth=self._auth, headers={"Accept": "application/json"}, **kwargs
            )
        except httpx.RequestError as error:
            raise Retriable(f"jira unreachable: {error!r}") from error
        if absent_ok and response.status_code == 404:
            return None
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


def _number(key: str) -> int:
    """The number of an issue key (``PAR-17`` → 17)."""
    number = key.rpartition("-")[2]
    if not number.isdigit():
        raise Retriable(f"jira answered an issue key without a number: {key!r}")
    return int(number)


def _key(ticket: TicketRef) -> str:
    if ticket.tool != "jira" or not ticket.id:
        raise Rejected("jira", 0, "", what=f"not a Jira ticket: {ticket}")
    return ticket.id


def description(incident: IncidentTicket) -> dict[str, Any]:
    """The issue's ADF description: the brief (the text without one), then the marker."""
    footer = marker(incident.incident_urn)
    if incident.brief is not None:
        return brief_doc(incident.brief, footer=footer)
    return adf(incident.body, link=incident.url, footer=footer)
