"""A fake Slack Web API: chat.postMessage, chat.update, chat.getPermalink, conversations.history,
conversations.replies, users.lookupByEmail (``users``: email → user id; an unknown email answers
``users_not_found``; ``scopes`` without ``users:read.email`` answers ``missing_scope``, as Slack does).

Messages keep their Block Kit ``blocks``, checked as Slack documents them (:func:`block_problem`): at most 50 blocks
of the layout types Pareis may send (``header``, ``section``, ``divider``, ``context``, ``actions``), a header's
``plain_text`` at most 150 characters, a section's text at most 3000, a context at most 10 elements, buttons with a
``plain_text`` of at most 75 characters and a URL of at most 3000; invalid blocks answer ``invalid_blocks``.

Speaks what the documented API does: ``POST /api/<method>`` with a JSON or form body (or query string),
``Authorization: Bearer <token>`` (else HTTP 200 ``{"ok": false, "error": "not_authed"|"invalid_auth"}``),
errors as HTTP 200 ``ok: false`` with an error code, ``message`` metadata (``event_type`` + ``event_payload``)
returned by history and replies only with ``include_all_metadata``, cursor pagination in
``response_metadata.next_cursor``, newest-first history, oldest-first replies, and 429 with ``Retry-After``.

The limits Slack documents for apps outside the Marketplace hold: ``conversations.history`` and
``conversations.replies`` answer about one request a minute each (past it HTTP 429 ``ratelimited`` with
``Retry-After``), at most 15 messages a page. Time is the fake's own ``clock`` (a :class:`ManualClock` by
default, which tests move on), so a test that reads history more than once a minute fails as it would on Slack.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from tests.support.fake_http import FakeServer, Recorded, Reply

CHANNEL_ID = "C0PAREIS01"
READ_METHODS = ("conversations.history", "conversations.replies")
PAGE_MAX = 15
"""Non-Marketplace apps: the maximum and default ``limit`` of history and replies."""


class ManualClock:
    """The fake's time: starts at the real time, moves only when a test says so."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeSlack(FakeServer):
    """One workspace with one channel, ``CHANNEL_ID`` (named ``#data-incidents``)."""

    def __init__(
        self, token: str = "xoxb-test-token", *, reads_per_minute: int = 1, clock: Callable[[], float] | None = None
    ) -> None:
        super().__init__()
        self.token = token
        self.channels: dict[str, list[dict[str, Any]]] = {CHANNEL_ID: []}
        self.names = {"#data-incidents": CHANNEL_ID, "data-incidents": CHANNEL_ID}
        self.clock: Callable[[], float] = clock or ManualClock()
        """The fake's time (a :class:`ManualClock` unless given; roles in other processes need the real one)."""
        self.reads_per_minute = reads_per_minute
        self._reads: dict[str, list[float]] = {m: [] for m in READ_METHODS}
        self.users: dict[str, str] = {}
        self.scopes = {"chat:write", "channels:history", "users:read", "users:read.email"}
        self._last_ts = 0.0

    # --- assertions helpers ----------------------------------------------------------------------------------
    def top_level(self, channel: str = CHANNEL_ID) -> list[dict[str, Any]]:
        return [m for m in self.channels[channel] if m.get("thread_ts", m["ts"]) == m["ts"]]

    def replies(self, ts: str, channel: str = CHANNEL_ID) -> list[dict[str, Any]]:
        return [m for m in self.channels[channel] if m.get("thread_ts") == ts and m["ts"] != ts]

    def calls(self, method: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == f"/api/{method}"]

    # --- the API ---------------------------------------------------------------------------------------------
    def error_reply(self, status: int) -> Reply:
        if status == 429:
            return Reply.json(429, {"ok": False, "error": "ratelimited"})
        return Reply.text(status, "<html><body>upstream error</body></html>")

    def authenticate(self, request: Recorded) -> Reply | None:
        auth = request.headers.get("authorization")
        if auth is None and "token" not in _args(request):
            return _fail("not_authed")
        given = auth.removeprefix("Bearer ") if auth else _args(request)["token"]
        return None if given == self.token else _fail("invalid_auth")

    def handle(self, request: Recorded) -> Reply:
        if request.method != "POST" and request.method != "GET":
            return Reply.text(405, "method not allowed")
        method = request.path.removeprefix("/api/")
        handler = {
            "chat.postMessage": self._post,
            "chat.update": self._update,
            "chat.getPermalink": self._permalink,
            "conversations.history": self._history,
            "conversations.replies": self._replies,
            "users.lookupByEmail": self._lookup,
        }.get(method)
        if handler is None:
            return Reply.json(404, {"ok": False, "error": "unknown_method", "req_method": method})
        try:
            args = _args(request)
        except ValueError:
            return _fail("invalid_json")
        if method in READ_METHODS:
            limited = self._rate_limit(method)
            if limited is not None:
                return limited
        return handler(args)

    def _rate_limit(self, method: str) -> Reply | None:
        now = self.clock()
        recent = [t for t in self._reads[method] if now - t < 60]
        if len(recent) >= self.reads_per_minute:
            self._reads[method] = recent
            wait = max(1, int(60 - (now - recent[0]) + 0.999))
            return Reply.json(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(wait)})
        self._reads[method] = [*recent, now]
        return None

    def _channel(self, args: dict[str, Any], *, names: bool = False) -> str | None:
        given = str(args.get("channel") or "")
        channel = self.names.get(given, given) if names else given
        return channel if channel in self.channels else None

    def _post(self, args: dict[str, Any]) -> Reply:
        channel = self._channel(args, names=True)
        if channel is None:
            return _fail("channel_not_found")
        if not args.get("text") and not args.get("blocks"):
            return _fail("no_text")
        blocks = _blocks(args.get("blocks"))
        if isinstance(blocks, str):
            return _fail("invalid_blocks", blocks)
        message: dict[str, Any] = {"type": "message", "ts": self._next_ts(), "text": args.get("text", "")}
        message |= {"bot_id": "B0PAREIS", "app_id": "A0PAREIS"}
        if blocks is not None:
            message["blocks"] = blocks
        thread_ts = args.get("thread_ts")
        if thread_ts:
            parent = _by_ts(self.channels[channel], str(thread_ts))
            if parent is None:
                return _fail("thread_not_found")
            message["thread_ts"] = parent["ts"]
            parent["thread_ts"] = parent["ts"]
            parent["reply_count"] = parent.get("reply_count", 0) + 1
        if "metadata" in args:
            metadata = _metadata(args["metadata"])
            if metadata is None:
                return _fail("invalid_metadata_format")
            message["metadata"] = metadata
        self.channels[channel].append(message)
        return _ok({"channel": channel, "ts": message["ts"], "message": message})

    def _message(self, args: dict[str, Any], ts_key: str) -> tuple[str, dict[str, Any]] | Reply:
        """The channel and message ``args`` name (the message's ts under ``ts_key``), or Slack's error."""
        channel = self._channel(args)
        if channel is None:
            return _fail("channel_not_found")
        message = _by_ts(self.channels[channel], str(args.get(ts_key, "")))
        return _fail("message_not_found") if message is None else (channel, message)

    def _update(self, args: dict[str, Any]) -> Reply:
        found = self._message(args, "ts")
        if isinstance(found, Reply):
            return found
        channel, message = found
        blocks = _blocks(args.get("blocks"))
        if isinstance(blocks, str):
            return _fail("invalid_blocks", blocks)
        if "text" in args:
            message["text"] = args["text"]
        if blocks is not None:
            message["blocks"] = blocks
        if "metadata" in args:
            metadata = _metadata(args["metadata"])
            if metadata is None:
                return _fail("invalid_metadata_format")
            message["metadata"] = metadata
        message["edited"] = {"user": "U0PAREIS", "ts": self._next_ts()}
        return _ok({"channel": channel, "ts": message["ts"], "text": message["text"], "message": message})

    def _permalink(self, args: dict[str, Any]) -> Reply:
        found = self._message(args, "message_ts")
        if isinstance(found, Reply):
            return found
        channel, message = found
        link = f"https://pareis-test.slack.com/archives/{channel}/p{message['ts'].replace('.', '')}"
        return _ok({"channel": channel, "permalink": link})

    def _history(self, args: dict[str, Any]) -> Reply:
        channel = self._channel(args)
        if channel is None:
            return _fail("channel_not_found")
        oldest = float(args.get("oldest") or 0)
        latest = float(args.get("latest") or "inf")
        messages = [m for m in reversed(self.top_level(channel)) if oldest < float(m["ts"]) < latest]
        return self._page(messages, args)

    def _replies(self, args: dict[str, Any]) -> Reply:
        channel = self._channel(args)
        if channel is None:
            return _fail("channel_not_found")
        parent = _by_ts(self.channels[channel], str(args.get("ts", "")))
        if parent is None:
            return _fail("thread_not_found")
        oldest = float(args.get("oldest") or 0)
        thread = [parent, *(m for m in self.replies(parent["ts"], channel) if float(m["ts"]) > oldest)]
        return self._page(thread, args)

    def _lookup(self, args: dict[str, Any]) -> Reply:
        if "users:read.email" not in self.scopes:
            return Reply.json(200, {"ok": False, "error": "missing_scope", "needed": "users:read.email"})
        user = self.users.get(str(args.get("email") or ""))
        if user is None:
            return _fail("users_not_found")
        return _ok({"user": {"id": user, "name": user.lower(), "profile": {"email": args["email"]}}})

    def _page(self, messages: list[dict[str, Any]], args: dict[str, Any]) -> Reply:
        limit = min(PAGE_MAX, int(args.get("limit") or PAGE_MAX))
        start = int(args.get("cursor") or 0)
        page = messages[start : start + limit]
        if not _true(args.get("include_all_metadata")):
            page = [{k: v for k, v in m.items() if k != "metadata"} for m in page]
        more = start + limit < len(messages)
        meta = {"next_cursor": str(start + limit) if more else ""}
        return _ok({"messages": page, "has_more": more, "response_metadata": meta})

    def _next_ts(self) -> str:
        # Slack's ts: the posting time in seconds, microsecond precision, unique within the channel.
        self._last_ts = max(round(self.clock(), 6), round(self._last_ts + 0.000001, 6))
        return f"{self._last_ts:.6f}"


def _args(request: Recorded) -> dict[str, Any]:
    args: dict[str, Any] = dict(request.query)
    content_type = request.headers.get("content-type", "")
    if request.body and content_type.startswith("application/json"):
        body = request.json()
        if not isinstance(body, dict):
            raise ValueError("JSON body must be an object")
        args |= body
    elif request.body:
        args |= request.form()
    return args


def _metadata(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict) or not isinstance(value.get("event_type"), str):
        return None
    if not isinstance(value.get("event_payload"), dict):
        return None
    return {"event_type": value["event_type"], "event_payload": value["event_payload"]}


def _blocks(value: Any) -> list[dict[str, Any]] | str | None:
    """The blocks of a request (None: none given), or why Slack would refuse them."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return "blocks are not JSON"
    problem = block_problem(value)
    return problem if problem is not None else value


def block_problem(blocks: Any) -> str | None:
    """Why Slack would refuse ``blocks`` (None: it takes them), for the layout blocks Pareis sends."""
    if not isinstance(blocks, list) or len(blocks) > 50:
        return "blocks must be a list of at most 50 blocks"
    for i, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        problem = _BLOCK_RULES[kind](block) if kind in _BLOCK_RULES else f"unsupported block type {kind!r}"
        if problem is not None:
            return f"blocks[{i}]: {problem}"
    return None


def _text_problem(text: Any, kinds: tuple[str, ...], limit: int) -> str | None:
    if not isinstance(text, dict) or text.get("type") not in kinds:
        return f"a text object of type {'/'.join(kinds)} is required"
    value = text.get("text")
    if not isinstance(value, str) or not value or len(value) > limit:
        return f"text must be 1 to {limit} characters"
    return None


def _button_problem(element: Any) -> str | None:
    if not isinstance(element, dict) or element.get("type") != "button":
        return "actions take buttons only here"
    url = element.get("url")
    if url is not None and (not isinstance(url, str) or len(url) > 3000):
        return "a button's url is at most 3000 characters"
    return _text_problem(element.get("text"), ("plain_text",), 75)


_BLOCK_RULES: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "header": lambda b: _text_problem(b.get("text"), ("plain_text",), 150),
    "section": lambda b: _text_problem(b.get("text"), ("plain_text", "mrkdwn"), 3000),
    "divider": lambda b: None,
    "context": lambda b: (
        "a context has 1 to 10 elements"
        if not isinstance(b.get("elements"), list) or not 1 <= len(b["elements"]) <= 10
        else next(filter(None, (_text_problem(e, ("plain_text", "mrkdwn"), 3000) for e in b["elements"])), None)
    ),
    "actions": lambda b: (
        "an actions block has 1 to 25 elements"
        if not isinstance(b.get("elements"), list) or not 1 <= len(b["elements"]) <= 25
        else next(filter(None, (_button_problem(e) for e in b["elements"])), None)
    ),
}


def _by_ts(messages: list[dict[str, Any]], ts: str) -> dict[str, Any] | None:
    return next((m for m in messages if m["ts"] == ts), None)


def _true(value: Any) -> bool:
    return value is True or str(value).lower() in {"1", "true"}


def _ok(payload: dict[str, Any]) -> Reply:
    return Reply.json(200, {"ok": True, **payload})


def _fail(error: str, detail: str | None = None) -> Reply:
    extra = {"errors": [detail]} if detail else {}
    return Reply.json(200, {"ok": False, "error": error, **extra})
