"""Slack as a ticket tool: one channel message per incident, its thread for updates.

* open: ``chat.postMessage`` with Block Kit blocks rendered from the incident's brief, decision first
  (:mod:`pareis.tickets.slack_blocks`), its fallback ``text``, and message metadata ``{"event_type":
  "pareis_incident", "event_payload": {"incident_urn", "severity", "status": "open"}}``; then
  ``chat.getPermalink`` for the message's link. The ref keeps the message's ts, permalink and text (the
  delivery's ledger holds it, so later steps never look the message up).
* comment: a thread reply (``thread_ts``) with metadata ``{"event_type": "pareis_update", "event_payload":
  {"effect_id"}}``.
* close: ``chat.update`` of the parent: the kept text marked resolved, the blocks rendered again from the brief as
  of the heal (the close's ``final``) under a "Resolved" block, metadata status ``resolved`` — the same request
  each time, so a repeat changes nothing. (The blocks are not kept in the ref: the ledger's refs stay small for the
  read side, which lists thousands.)
* mark: the time (less ``skew_s``); find and posted read only what came after it: ``conversations.history``
  (``oldest`` = the mark) for a parent with the incident's metadata, ``conversations.replies`` of the thread for
  a reply with the effect's. Both methods are limited to about one request a minute and 15 messages a page for
  apps outside the Marketplace, so they are read only after a request whose answer was lost, never to find a
  ticket in the normal course.
* owners: the open message ends with ``Owners: <@U…>, …``: each owner with an email is looked up once with
  ``users.lookupByEmail`` (needs the ``users:read.email`` scope; answers cached for the process's life, misses
  too); an owner Slack does not know (``users_not_found``), a group, or an owner without an email is written as
  text. A lookup Slack refuses for another reason (a missing scope) is logged and the owner written as text: a
  mention is not worth losing the ticket over.

The channel must be a channel id (``C…``): history, replies and update take ids only.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import structlog
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from pareis.config import SlackSettings
from pareis.core.owners import Owner
from pareis.errors import Fatal, PareisError, Retriable
from pareis.tickets import slack_blocks
from pareis.tickets.failures import Rejected, Unauthorized, dig, for_status
from pareis.tickets.port import MARKER_PREFIX, IncidentTicket, TicketRef

EVENT_TYPE = "pareis_incident"
UPDATE_EVENT_TYPE = "pareis_update"
T = TypeVar("T")
_TRANSIENT = {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
_BAD_CREDENTIAL = {"not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired"}


class SlackTicketer:
    """Tickets as messages in one Slack channel, through slack-sdk's :class:`WebClient`."""

    def __init__(
        self,
        client: WebClient,
        channel: str,
        *,
        lookback_s: float = 30 * 24 * 3600,
        page_size: int = 15,
        skew_s: float = 120.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._channel = channel
        self._lookback_s = lookback_s
        self._page_size = page_size
        self._skew_s = skew_s
        self._clock = clock
        self._scans: dict[tuple[str, str, str], str] = {}
        """Scans under way: (method, what, since) → the cursor of the next page to read."""
        self._users: dict[str, str | None] = {}
        """Email → Slack user id (None: Slack knows no such user), for mentions."""

    @classmethod
    def from_settings(cls, settings: SlackSettings, **options: Any) -> SlackTicketer:
        """A ticketer on ``settings.base_url``; slack-sdk's own retries are off (the caller's policy retries)."""
        if settings.token is None or not settings.channel:
            raise Fatal("slack: tickets.slack.token and tickets.slack.channel are both needed")
        client = WebClient(  # 5 s per call: a hung Slack must not hold the partition past its poll interval
            token=settings.token.get_secret_value(), base_url=settings.base_url, retry_handlers=[], timeout=5
        )
        return cls(client, settings.channel, **options)

    @property
    def tool(self) -> str:
        return "slack"

    def open(self, incident: IncidentTicket) -> TicketRef:
        payload = {"incident_urn": incident.incident_urn, "severity": str(incident.severity), "status": "open"}
        mentions = {o.email or o.name: self._mention(o) for o in incident.owners}
        text = slack_blocks.text(incident, list(mentions.values()))
        rendered = slack_blocks.blocks(incident, mentions)
        response = _call(
            lambda: self._client.chat_postMessage(
                channel=self._channel,
                text=text,
                blocks=rendered,
                metadata={"event_type": EVENT_TYPE, "event_payload": payload},
                unfurl_links=False,
            )
        )
        channel, ts = str(dig("slack", response.data, "channel")), str(dig("slack", response.data, "ts"))
        return TicketRef(self.tool, f"{channel}/{ts}", self._permalink(channel, ts), text)

    def _permalink(self, channel: str, ts: str) -> str:
        """The message's permalink (``chat.getPermalink``)."""
        found = _call(lambda: self._client.chat_getPermalink(channel=channel, message_ts=ts))
        return str(dig("slack", found.data, "permalink"))

    def mark(self, ticket: TicketRef | None = None) -> str:
        # Slack's ts is the server's time; the margin covers the two clocks' skew.
        return f"{self._clock() - self._skew_s:.6f}"

    def _mention(self, owner: Owner) -> str:
        """``<@U…>`` for an owner Slack knows by email, else the owner as text."""
        text = owner.email or owner.name
        if owner.is_group or not owner.email:
            return text
        if owner.email not in self._users:
            email = owner.email
            try:
                found = _call(lambda: self._client.users_lookupByEmail(email=email))
                self._users[email] = str(dig("slack", found.data, "user", "id"))
            except Rejected as error:
                if "users_not_found" not in str(error):
                    structlog.get_logger(__name__).warning("slack user lookup refused", email=email, error=str(error))
                self._users[email] = None
        user = self._users[owner.email]
        return f"<@{user}>" if user else text

    def find(self, incident_urn: str, since: str = "") -> TicketRef | None:
        oldest = since or f"{self._clock() - self._lookback_s:.6f}"
        # A create follows its mark within a call's timeout: the window ends a little past the two clocks' skew.
        latest = f"{float(since) + 2 * self._skew_s + 60:.6f}" if since else None

        def pick(message: dict[str, Any]) -> TicketRef | None:
            if _payload(message, EVENT_TYPE).get("incident_urn") != incident_urn:
                return None
            ts = dig("slack", message, "ts")
            return TicketRef(self.tool, f"{self._channel}/{ts}", text=str(message.get("text", "")))

        found = self._scan(
            ("history", incident_urn, oldest),
            lambda cursor: self._client.conversations_history(
                channel=self._channel,
                include_all_metadata=True,
                limit=self._page_size,
                oldest=oldest,
                latest=latest,
                cursor=cursor,
            ),
            pick,
        )
        if found is None:
            return None
        channel, ts = _split(found)
        return TicketRef(found.tool, found.id, self._permalink(channel, ts), found.text)

    def comment(self, ticket: TicketRef, text: str, effect_id: str | None = None) -> None:
        channel, ts = _split(ticket)
        metadata = (
            None if effect_id is None else {"event_type": UPDATE_EVENT_TYPE, "event_payload": {"effect_id": effect_id}}
        )
        _call(
            lambda: self._client.chat_postMessage(
                channel=channel, thread_ts=ts, text=text, metadata=metadata, unfurl_links=False
            )
        )

    def posted(self, ticket: TicketRef, effect_id: str, since: str = "") -> bool:
        channel, ts = _split(ticket)
        found = self._scan(
            ("replies", f"{ticket.id}/{effect_id}", since),
            lambda cursor: self._client.conversations_replies(
                channel=channel,
                ts=ts,
                include_all_metadata=True,
                limit=self._page_size,
                oldest=since or None,
                cursor=cursor,
            ),
            lambda m: True if _payload(m, UPDATE_EVENT_TYPE).get("effect_id") == effect_id else None,
        )
        return found is not None

    def close(self, ticket: TicketRef, final: IncidentTicket | None = None) -> None:
        channel, ts = _split(ticket)
        blocks = None
        if final is not None and final.brief is not None:  # the message as of the heal, "Resolved" on top
            mentions = {o.email or o.name: self._mention(o) for o in final.owners}
            blocks = slack_blocks.resolved(slack_blocks.blocks(final, mentions) or [])
        text = ticket.text
        metadata: dict[str, Any] = {"event_payload": _rendered_payload(text)} if text is not None else {}
        if text is None:  # a ref kept before refs carried their text: read the parent (one rate-limited call)
            thread = _call(
                lambda: self._client.conversations_replies(channel=channel, ts=ts, limit=1, include_all_metadata=True)
            )
            parent = (thread.get("messages") or [{}])[0]
            metadata = parent.get("metadata") or {}
            if (metadata.get("event_payload") or {}).get("status") == "resolved":
                return
            text = str(parent.get("text", ""))
        payload = {**(metadata.get("event_payload") or {}), "status": "resolved"}
        _call(
            lambda: self._client.chat_update(
                channel=channel,
                ts=ts,
                text=slack_blocks.RESOLVED + text,
                blocks=blocks,
                metadata={"event_type": EVENT_TYPE, "event_payload": payload},
            )
        )

    def _scan(
        self, key: tuple[str, str, str], page: Callable[[str | None], Any], pick: Callable[[dict[str, Any]], T | None]
    ) -> T | None:
        """The first message ``pick`` takes, page by page. A page refused (history and replies answer about once a
        minute) leaves the scan where it stands: the next call with the same key goes on from that page, so a scan
        longer than one page ends after as many minutes, instead of starting over each time."""
        cursor = self._scans.get(key)
        while True:
            answer = _call(partial(page, cursor))
            for message in answer.get("messages") or []:
                found = pick(message)
                if found is not None:
                    self._scans.pop(key, None)
                    return found
            cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
            if not answer.get("has_more") or cursor is None:
                self._scans.pop(key, None)
                return None
            self._scans[key] = cursor
            while len(self._scans) > 1000:  # bounded: scans abandoned (the effect delivered elsewhere) age out
                self._scans.pop(next(iter(self._scans)))


_SEVERITY = re.compile(r"^\S+ \*\[(\w+)\] ")


def _rendered_payload(text: str) -> dict[str, Any]:
    """The open message's metadata payload, read back from the text :func:`pareis.tickets.slack_blocks.text` made
    (its severity on the first line, its marker on the last): the close rewrites the metadata without reading the
    message."""
    severity = _SEVERITY.match(text)
    last = text.rstrip().rsplit("\n", 1)[-1].strip("_")
    payload = {"incident_urn": last.removeprefix(MARKER_PREFIX)} if last.startswith(MARKER_PREFIX) else {}
    return {**payload, **({"severity": severity.group(1)} if severity else {})}


def _payload(message: dict[str, Any], event_type: str) -> dict[str, Any]:
    """The message's metadata payload when its event type is ``event_type``, else an empty one."""
    metadata = message.get("metadata") or {}
    if metadata.get("event_type") != event_type:
        return {}
    payload = metadata.get("event_payload")
    return payload if isinstance(payload, dict) else {}


def _split(ticket: TicketRef) -> tuple[str, str]:
    channel, _, ts = ticket.id.partition("/")
    if ticket.tool != "slack" or not channel or not ts:
        raise Rejected("slack", 0, "", what=f"not a Slack ticket: {ticket}")
    return channel, ts


def _call(request: Callable[[], Any]) -> Any:
    """Run one Web API call; translate what slack-sdk and urllib raise (see :mod:`pareis.tickets.failures`)."""
    try:
        return request()
    except SlackApiError as error:
        raise _translate(error) from error
    except (OSError, http.client.HTTPException) as error:  # URLError, refused, reset, timeout
        raise Retriable(f"slack unreachable: {error}") from error
    except SlackClientError as error:
        raise Rejected("slack", 0, str(error), what="client error") from error


def _translate(error: SlackApiError) -> PareisError:
    response = error.response
    data = response.data
    body = json.dumps(data) if isinstance(data, dict) else repr(data)
    status = int(response.status_code)
    if status != 200:
        return for_status("slack", status, dict(response.headers or {}), body)
    code = data.get("error", "") if isinstance(data, dict) else ""
    if code in _TRANSIENT:
        return Retriable(f"slack: {code}")
    if code in _BAD_CREDENTIAL:
        return Unauthorized("slack", status, body)
    return Rejected("slack", status, body, what=code)
