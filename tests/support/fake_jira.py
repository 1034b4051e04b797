"""A fake Jira Cloud REST API v3: create issue, JQL search, get issue, add comment, transitions.

Speaks the documented shapes: basic auth ``email:api-token`` (else 401), ``POST /rest/api/3/issue`` with
``fields`` (project key, issue type name, summary, ADF description, labels) answering 201 ``{id, key, self}``,
field errors as 400 ``{"errorMessages": [...], "errors": {field: message}}``, the enhanced search
``/rest/api/3/search/jql`` (the legacy ``/rest/api/3/search`` answers 410 Gone), comments with ADF bodies,
``GET``/``POST …/transitions`` on a To Do → In Progress → Done workflow (POST answers 204), 404 for unknown
issues, and 429 with ``Retry-After``. ``accounts`` are the site's users: ``fields.assignee.accountId`` must be one
(else 400 on ``assignee``), and ``POST …/watchers`` with a JSON string body (an account id) answers 204 (404 for an
unknown account), idempotently. JQL understands ``field = "value"`` terms joined by ``AND`` (fields
project, labels, key, status) and ``ORDER BY created|key [ASC|DESC]``.

Comments carry entity properties (``properties`` on create); ``GET …/comment`` lists an issue's comments
(``startAt``, ``maxResults``, ``orderBy``) without them, ``POST /rest/api/3/comment/list`` with ``expand=properties``
gives them. The search is eventually consistent (``search_lag``); reads by key are not.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from tests.support.fake_http import FakeServer, Recorded, Reply

_STATUSES = {
    "To Do": {"id": "10000", "name": "To Do", "statusCategory": {"key": "new", "name": "To Do"}},
    "In Progress": {
        "id": "3",
        "name": "In Progress",
        "statusCategory": {"key": "indeterminate", "name": "In Progress"},
    },
    "Done": {"id": "10001", "name": "Done", "statusCategory": {"key": "done", "name": "Done"}},
}
_WORKFLOW = {  # from status: [(transition id, name, to status)]
    "To Do": [("11", "Start progress", "In Progress"), ("31", "Done", "Done")],
    "In Progress": [("21", "Stop progress", "To Do"), ("31", "Done", "Done")],
    "Done": [("41", "Reopen", "To Do")],
}
_ISSUE = re.compile(r"^/rest/api/3/issue/([^/]+)(/comment|/transitions|/watchers)?$")
_ORDER = re.compile(r"^\s*(created|key)(?:\s+(ASC|DESC))?\s*$", re.IGNORECASE)
_TERM = re.compile(r'^\s*(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([\w.-]+))\s*$')


class FakeJira(FakeServer):
    """One site with the projects given (default ``PAR``) and issue types Bug and Task."""

    def __init__(
        self, email: str = "bot@example.com", token: str = "jira-token", projects: tuple[str, ...] = ("PAR",)
    ) -> None:
        super().__init__()
        self.credential = "Basic " + base64.b64encode(f"{email}:{token}".encode()).decode()
        self.projects = set(projects)
        self.accounts: set[str] = set()
        self.issues: dict[str, dict[str, Any]] = {}  # by key, in creation order
        self.search_lag = 0
        """Jira Cloud's search index is eventually consistent: a new issue is missing from the next
        ``search_lag`` searches (0: found at once)."""
        self._unindexed: dict[str, int] = {}  # key → searches it still misses

    def error_reply(self, status: int) -> Reply:
        if status == 429:
            return Reply.json(429, {"errorMessages": ["Rate limit exceeded."], "errors": {}})
        return Reply.json(status, {"errorMessages": ["Internal server error"], "errors": {}})

    def authenticate(self, request: Recorded) -> Reply | None:
        if request.headers.get("authorization") == self.credential:
            return None
        return Reply.text(401, "Client must be authenticated to access this resource.")

    def handle(self, request: Recorded) -> Reply:
        route = (request.method, request.path)
        if route == ("POST", "/rest/api/3/issue"):
            return self._create(request.json())
        if request.path == "/rest/api/3/search/jql" and request.method in ("GET", "POST"):
            args = request.query if request.method == "GET" else request.json()
            return self._search(args)
        if route == ("POST", "/rest/api/3/comment/list"):
            return self._comment_list(request.json(), request.query.get("expand", ""))
        if request.path == "/rest/api/3/search":
            return Reply.json(
                410,
                {
                    "errorMessages": [
                        "The requested API has been removed. Please migrate to the /rest/api/3/search/jql API."
                    ]
                },
            )
        match = _ISSUE.match(request.path)
        if match is None:
            return Reply.json(404, {"errorMessages": ["Not found"], "errors": {}})
        issue = self._issue(match.group(1))
        if issue is None:
            return _errors(404, ["Issue does not exist or you do not have permission to see it."])
        sub = match.group(2)
        if sub is None and request.method == "GET":
            return Reply.json(200, self._view(issue, request.query.get("fields")))
        if sub == "/comment" and request.method == "POST":
            return self._comment(issue, request.json())
        if sub == "/comment" and request.method == "GET":
            return self._comments(issue, request.query)
        if sub == "/transitions" and request.method == "GET":
            return Reply.json(200, {"expand": "transitions", "transitions": _transitions(issue)})
        if sub == "/transitions" and request.method == "POST":
            return self._transition(issue, request.json())
        if sub == "/watchers" and request.method == "POST":
            account = request.json()
            if not isinstance(account, str) or account not in self.accounts:
                return _errors(404, ["The user does not exist."])
            if account not in issue["watchers"]:
                issue["watchers"].append(account)
            return Reply(204)
        return Reply.json(405, {"errorMessages": ["Method not allowed"], "errors": {}})

    # --- endpoints -------------------------------------------------------------------------------------------
    def _create(self, payload: Any) -> Reply:
        fields = payload.get("fields") if isinstance(payload, dict) else None
        if not isinstance(fields, dict):
            return _errors(400, ["Request body is missing 'fields'."])
        errors: dict[str, str] = {}
        project = (fields.get("project") or {}).get("key")
        if project not in self.projects:
            errors["project"] = "valid project is required"
        if (fields.get("issuetype") or {}).get("name") not in {"Bug", "Task"}:
            errors["issuetype"] = "valid issue type is required"
        if not str(fields.get("summary") or "").strip():
            errors["summary"] = "You must specify a summary of the issue."
        elif len(fields["summary"]) > 255:
            errors["summary"] = "Summary must be less than 255 characters."
        problem = adf_problem(fields["description"]) if "description" in fields else None
        if problem is not None:
            errors["description"] = f"Operation value must be an Atlassian Document: {problem}"
        labels = fields.get("labels", [])
        if not isinstance(labels, list) or any(not isinstance(x, str) or " " in x or not x for x in labels):
            errors["labels"] = "Labels must be non-empty strings without spaces."
        if "assignee" in fields and (fields["assignee"] or {}).get("accountId") not in self.accounts:
            errors["assignee"] = "Specify a valid value for assignee."
        if errors:
            return _errors(400, [], errors)
        number = sum(1 for key in self.issues if key.startswith(f"{project}-")) + 1
        issue_id = str(10000 + len(self.issues) + 1)
        key = f"{project}-{number}"
        self.issues[key] = {
            "id": issue_id,
            "key": key,
            "fields": {**fields, "labels": list(labels), "status": _STATUSES["To Do"]},
            "comments": [],
            "watchers": [],
        }
        if self.search_lag:
            self._unindexed[key] = self.search_lag
        return Reply.json(201, {"id": issue_id, "key": key, "self": f"{self.url}/rest/api/3/issue/{issue_id}"})

    def _search(self, args: dict[str, Any]) -> Reply:
        jql = str(args.get("jql") or "")
        where, _, order = re.sub(r"\s+ORDER\s+BY\s+", "\0", jql, count=1, flags=re.IGNORECASE).partition("\0")
        sort = _ORDER.match(order) if order else None
        if order and sort is None:
            return _errors(400, [f"Error in the JQL Query: cannot order by '{order.strip()}'."])
        terms: list[tuple[str, str]] = []
        for part in re.split(r"\s+AND\s+", where, flags=re.IGNORECASE) if where.strip() else []:
            term = _TERM.match(part)
            if term is None or term.group(1).lower() not in {"project", "labels", "key", "status"}:
                return _errors(400, [f"Error in the JQL Query: cannot parse '{part.strip()}'."])
            terms.append((term.group(1).lower(), term.group(2) if term.group(2) is not None else term.group(3)))
        for name, value in terms:
            if name == "project" and value not in self.projects:
                return _errors(400, [f"The value '{value}' does not exist for the field 'project'."])
        indexed = [i for i in self.issues.values() if i["key"] not in self._unindexed]
        for key in list(self._unindexed):  # the index catches up, one search at a time
            self._unindexed[key] -= 1
            if self._unindexed[key] <= 0:
                del self._unindexed[key]
        hits = [i for i in indexed if all(_matches(i, n, v) for n, v in terms)]
        if sort is not None and (sort.group(2) or "ASC").upper() == "DESC":
            hits.reverse()  # created and key order are both creation order here
        limit = int(args.get("maxResults") or 50)
        wanted = args.get("fields")
        wanted = ",".join(wanted) if isinstance(wanted, list) else wanted
        # The enhanced search answers ids only unless fields are asked for.
        issues = [self._view(i, wanted) if wanted else {"id": i["id"]} for i in hits[:limit]]
        return Reply.json(200, {"issues": issues, "isLast": len(hits) <= limit})

    def _comment(self, issue: dict[str, Any], payload: Any) -> Reply:
        body = payload.get("body") if isinstance(payload, dict) else None
        if not _is_adf(body) or not body.get("content"):
            return _errors(400, [], {"comment": "Comment body can not be empty!"})
        properties = payload.get("properties", [])
        if not isinstance(properties, list) or any(
            not isinstance(p, dict) or not isinstance(p.get("key"), str) or "value" not in p for p in properties
        ):
            return _errors(400, [], {"properties": "Properties must be a list of {key, value}."})
        comment = {"id": str(20000 + sum(len(i["comments"]) for i in self.issues.values()) + 1), "body": body}
        issue["comments"].append({**comment, "properties": properties})
        return Reply.json(
            201, {**comment, "self": f"{self.url}/rest/api/3/issue/{issue['id']}/comment/{comment['id']}"}
        )

    def _comments(self, issue: dict[str, Any], query: dict[str, str]) -> Reply:
        comments = list(issue["comments"])
        if query.get("orderBy", "created").lstrip("+") == "-created":
            comments.reverse()
        start, limit = int(query.get("startAt") or 0), min(5000, int(query.get("maxResults") or 5000))
        page = [{"id": c["id"], "body": c["body"]} for c in comments[start : start + limit]]
        return Reply.json(200, {"startAt": start, "maxResults": limit, "total": len(comments), "comments": page})

    def _comment_list(self, payload: Any, expand: str) -> Reply:
        ids = payload.get("ids") if isinstance(payload, dict) else None
        if not isinstance(ids, list) or len(ids) > 1000:
            return _errors(400, ["Provide up to 1000 comment ids."])
        wanted = {str(i) for i in ids}
        found = [c for i in self.issues.values() for c in i["comments"] if c["id"] in wanted]
        shown = "properties" in expand.split(",")
        values = [
            {"id": c["id"], "body": c["body"], **({"properties": c["properties"]} if shown else {})} for c in found
        ]
        return Reply.json(
            200, {"startAt": 0, "maxResults": len(values), "total": len(values), "isLast": True, "values": values}
        )

    def _transition(self, issue: dict[str, Any], payload: Any) -> Reply:
        wanted = ((payload or {}).get("transition") or {}).get("id")
        for transition_id, _name, target in _WORKFLOW[issue["fields"]["status"]["name"]]:
            if transition_id == wanted:
                issue["fields"]["status"] = _STATUSES[target]
                return Reply(204)
        return _errors(400, [f"Transition id '{wanted}' is not valid for this issue."])

    # --- helpers ---------------------------------------------------------------------------------------------
    def _issue(self, id_or_key: str) -> dict[str, Any] | None:
        return self.issues.get(id_or_key) or next((i for i in self.issues.values() if i["id"] == id_or_key), None)

    def _view(self, issue: dict[str, Any], fields: str | None) -> dict[str, Any]:
        names = [f for f in (fields or "").split(",") if f] or list(issue["fields"])
        shown = {n: issue["fields"][n] for n in names if n in issue["fields"]}
        return {
            "id": issue["id"],
            "key": issue["key"],
            "self": f"{self.url}/rest/api/3/issue/{issue['id']}",
            "fields": shown,
        }


def _transitions(issue: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"id": tid, "name": name, "to": _STATUSES[target], "hasScreen": False, "isAvailable": True}
        for tid, name, target in _WORKFLOW[issue["fields"]["status"]["name"]]
    ]


def _matches(issue: dict[str, Any], name: str, value: str) -> bool:
    if name == "project":
        return bool(issue["fields"]["project"].get("key") == value)
    if name == "labels":
        return value in issue["fields"]["labels"]
    if name == "key":
        return bool(issue["key"] == value)
    return bool(issue["fields"]["status"]["name"].lower() == value.lower())


def _is_adf(node: Any) -> bool:
    return adf_problem(node) is None


_BLOCKS = {"paragraph", "heading", "bulletList", "orderedList", "rule", "blockquote", "codeBlock"}
_CHILDREN = {  # node type → the node types its content may hold (ADF's document structure)
    "doc": _BLOCKS,
    "paragraph": {"text", "hardBreak", "mention", "emoji", "inlineCard"},
    "heading": {"text", "hardBreak", "mention", "emoji", "inlineCard"},
    "bulletList": {"listItem"},
    "orderedList": {"listItem"},
    "listItem": {"paragraph", "bulletList", "orderedList", "codeBlock"},
    "blockquote": {"paragraph", "bulletList", "orderedList"},
    "codeBlock": {"text"},
}
_MARKS = {"strong", "em", "code", "strike", "underline", "link", "subsup", "textColor"}


def adf_problem(node: Any, path: str = "doc") -> str | None:
    """Why Jira would refuse ``node`` as an Atlassian Document (None: it takes it), by the documented structure:
    a version-1 ``doc``; each node's children of the types its type allows (lists hold list items, a list item
    starts with a paragraph, paragraphs and headings hold inline nodes); a heading's ``attrs.level`` from 1 to 6;
    text nodes with non-empty text and known marks, a ``link`` mark with an ``href``."""
    if path == "doc" and (not isinstance(node, dict) or node.get("type") != "doc" or node.get("version") != 1):
        return "not a version-1 doc"
    kind = node.get("type") if isinstance(node, dict) else None
    if kind == "text":
        if not isinstance(node.get("text"), str) or not node["text"]:
            return f"{path}: empty text"
        for mark in node.get("marks", []):
            if not isinstance(mark, dict) or mark.get("type") not in _MARKS:
                return f"{path}: unknown mark {mark!r}"
            if mark["type"] == "link" and not isinstance((mark.get("attrs") or {}).get("href"), str):
                return f"{path}: a link mark needs attrs.href"
        return None
    if kind == "heading" and (node.get("attrs") or {}).get("level") not in range(1, 7):
        return f"{path}: a heading needs attrs.level 1-6"
    content = node.get("content", [])
    if not isinstance(content, list):
        return f"{path}: content must be a list"
    allowed = _CHILDREN.get(str(kind), set())
    if kind in ("bulletList", "orderedList", "listItem") and not content:
        return f"{path}: {kind} must not be empty"
    if kind == "listItem" and content[0].get("type") != "paragraph":
        return f"{path}: a list item starts with a paragraph"
    for i, child in enumerate(content):
        child_kind = child.get("type") if isinstance(child, dict) else None
        if child_kind not in allowed:
            return f"{path}.content[{i}]: {child_kind!r} is not allowed in {kind}"
        problem = adf_problem(child, f"{path}.content[{i}]")
        if problem is not None:
            return problem
    return None


def _errors(status: int, messages: list[str], errors: dict[str, str] | None = None) -> Reply:
    return Reply.json(status, {"errorMessages": messages, "errors": errors or {}})
