"""Slack as a ticket tool: one channel message per incident, its thread for updates.

* open: ``chat.postMessage`` with message metadata ``{"event_type": "pareis_incident", "event_payload":
  {"incident_urn", "severity", "status": "open"}}`` — the metadata is how :meth:`SlackTicketer.find` knows the
  message again after a crash, with nothing stored on our side.
* comment: a thread reply (``thread_ts``).
* close: a closing thread reply, then ``chat.update`` of the parent: marked resolved, metadata status
  ``resolved`` (which is how a second close knows there is nothing left to do).
* find: ``conversations.history`` of the channel with ``include_all_metadata``, newest first, back to
  ``lookback_s`` ago.
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
import time
from collections.abc import Callable
from typing import Any

import structlog
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from pareis.config import SlackSettings
from pareis.core.owners import Owner
from pareis.errors import Fatal, PareisError, Retriable
from pareis.tickets.failures import Rejected, Unauthorized, dig, for_status
from pareis.tickets.port import IncidentTicket, TicketRef, marker

EVENT_TYPE = "pareis_incident"
_EMOJI = {"HIGH": ":red_circle:", "MEDIUM": ":large_orange_circle:", "LOW": ":large_yellow_circle:"}
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
        page_size: int = 200,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._channel = channel
        self._lookback_s = lookback_s
        self._page_size = page_size
        self._clock = clock
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
        existing = self.find(incident.incident_urn)
        if existing is not None:
            return existing
        payload = {"incident_urn": incident.incident_urn, "severity": str(incident.severity), "status": "open"}
        mentions = [self._mention(o) for o in incident.owners]
        response = _call(
            lambda: self._client.chat_postMessage(
                channel=self._channel,
                text=_render(incident, mentions),
                metadata={"event_type": EVENT_TYPE, "event_payload": payload},
                unfurl_links=False,
            )
        )
        return TicketRef(self.tool, f"{dig('slack', response.data, 'channel')}/{dig('slack', response.data, 'ts')}")

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

    def find(self, incident_urn: str) -> TicketRef | None:
        oldest = f"{self._clock() - self._lookback_s:.6f}"
        cursor: str | None = None
        while True:
            page = self._history_page(oldest, cursor)
            for message in page.get("messages") or []:
                if _urn_of(message) == incident_urn:
                    return TicketRef(self.tool, f"{self._channel}/{dig('slack', message, 'ts')}")
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if not page.get("has_more") or cursor is None:
                return None

    def _history_page(self, oldest: str, cursor: str | None) -> Any:
        return _call(
            lambda: self._client.conversations_history(
                channel=self._channel, include_all_metadata=True, limit=self._page_size, oldest=oldest, cursor=cursor
            )
        )

    def comment(self, ticket: TicketRef, text: str) -> None:
        channel, ts = _split(ticket)
        _call(lambda: self._client.chat_postMessage(channel=channel, thread_ts=ts, text=text, unfurl_links=False))

    def close(self, ticket: TicketRef, text: str | None) -> None:
        channel, ts = _split(ticket)
        thread = _call(
            lambda: self._client.conversations_replies(channel=channel, ts=ts, limit=1, include_all_metadata=True)
        )
        parent = (thread.get("messages") or [{}])[0]
        metadata = parent.get("metadata") or {}
        payload = dict(metadata.get("event_payload") or {})
        if payload.get("status") == "resolved":
            return
        if text is not None:
            _call(lambda: self._client.chat_postMessage(channel=channel, thread_ts=ts, text=text, unfurl_links=False))
        payload["status"] = "resolved"
        _call(
            lambda: self._client.chat_update(
                channel=channel,
                ts=ts,
                text=":white_check_mark: *Resolved* — " + str(parent.get("text", "")),
                metadata={"event_type": metadata.get("event_type", EVENT_TYPE), "event_payload": payload},
            )
        )


def _render(incident: IncidentTicket, mentions: list[str] | None = None) -> str:
    emoji = _EMOJI.get(str(incident.severity), ":white_circle:")
    lines = [f"{emoji} *[{incident.severity}] {incident.title}*", "", incident.body.strip()]
    if mentions:
        lines += ["", "Owners: " + ", ".join(mentions)]
    if incident.url:
        lines += ["", f"<{incident.url}|Open the incident>"]
    return "\n".join([*lines, "", f"_{marker(incident.incident_urn)}_"])


def _urn_of(message: dict[str, Any]) -> str | None:
    metadata = message.get("metadata") or {}
    if metadata.get("event_type") != EVENT_TYPE:
        return None
    urn = (metadata.get("event_payload") or {}).get("incident_urn")
    return urn if isinstance(urn, str) else None


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
