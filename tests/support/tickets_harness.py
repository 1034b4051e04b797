"""Each ticket tool with what tests need to look inside it: the production ticketer pointed at its fake server,
and the server's view of the tickets (how many, their comments, closed or not)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import SecretStr

from pareis.config import JiraSettings, LinearSettings, SlackSettings
from pareis.tickets.jira import JiraTicketer
from pareis.tickets.linear import LinearTicketer
from pareis.tickets.memory import MemoryTicketer
from pareis.tickets.port import Ticketer, TicketRef
from pareis.tickets.slack import SlackTicketer
from tests.support.fake_http import FakeServer
from tests.support.fake_jira import FakeJira
from tests.support.fake_linear import TEAM_ID, FakeLinear
from tests.support.fake_slack import CHANNEL_ID, FakeSlack, ManualClock

TOOLS = ("memory", "slack", "jira", "linear")
HTTP_TOOLS = ("slack", "jira", "linear")


@dataclass
class Tool:
    name: str
    server: FakeServer | None
    make: Callable[..., Ticketer]
    """A new ticketer on the same tool (a fresh process); keyword overrides go into its settings."""
    count: Callable[[], int]
    texts: Callable[[TicketRef], list[str]]
    closed: Callable[[TicketRef], bool]
    pass_minute: Callable[[], None] = lambda: None
    """Let a minute pass on the tool's clock (Slack answers its history and replies once a minute)."""

    def __post_init__(self) -> None:
        self.ticketer = self.make()


@contextmanager
def tool(name: str) -> Iterator[Tool]:
    if name == "memory":
        memory = MemoryTicketer()
        yield Tool(
            name,
            None,
            lambda: memory,
            lambda: len(memory.tickets),
            lambda ref: next(t.comments for t in memory.tickets if t.ref == ref),
            lambda ref: next(t.closed for t in memory.tickets if t.ref == ref),
        )
    elif name == "slack":
        with FakeSlack() as slack:
            yield _slack(slack)
    elif name == "jira":
        with FakeJira() as jira, httpx.Client(timeout=10) as http:
            yield _jira(jira, http)
    elif name == "linear":
        with FakeLinear() as linear, httpx.Client(timeout=10) as http:
            yield _linear(linear, http)
    else:
        raise ValueError(name)


def _slack(fake: FakeSlack) -> Tool:
    clock = fake.clock
    assert isinstance(clock, ManualClock)

    def make(**overrides: Any) -> Ticketer:
        settings = SlackSettings(token=SecretStr(fake.token), channel=CHANNEL_ID, base_url=fake.url + "/api/")
        # The fake's clock: Slack's ts and the ticketer's marks agree, as two clocks kept by NTP do (within skew_s).
        return SlackTicketer.from_settings(settings.model_copy(update=overrides), clock=fake.clock)

    def parent(ref: TicketRef) -> dict[str, Any]:
        return next(m for m in fake.top_level() if m["ts"] == ref.id.split("/")[1])

    return Tool(
        "slack",
        fake,
        make,
        lambda: len(fake.top_level()),
        lambda ref: [m["text"] for m in fake.replies(ref.id.split("/")[1])],
        lambda ref: (
            parent(ref)["metadata"]["event_payload"]["status"] == "resolved"
            and parent(ref)["text"].startswith(":white_check_mark:")
        ),
        lambda: clock.advance(61),
    )


def _jira(fake: FakeJira, http: httpx.Client) -> Tool:
    def make(**overrides: Any) -> Ticketer:
        settings = JiraSettings(url=fake.url, email="bot@example.com", token=SecretStr("jira-token"), project="PAR")
        return JiraTicketer.from_settings(settings.model_copy(update=overrides), http=http)

    return Tool(
        "jira",
        fake,
        make,
        lambda: len(fake.issues),
        lambda ref: [adf_text(c["body"]) for c in fake.issues[ref.id]["comments"]],
        lambda ref: fake.issues[ref.id]["fields"]["status"]["statusCategory"]["key"] == "done",
    )


def _linear(fake: FakeLinear, http: httpx.Client) -> Tool:
    def make(**overrides: Any) -> Ticketer:
        settings = LinearSettings(api_key=SecretStr(fake.api_key), team_id=TEAM_ID, url=fake.url + "/graphql")
        return LinearTicketer.from_settings(settings.model_copy(update=overrides), http=http)

    return Tool(
        "linear",
        fake,
        make,
        lambda: len(fake.issues),
        lambda ref: fake.comments_on(ref.id),
        lambda ref: fake.issues[ref.id]["state"]["type"] == "completed",
    )


def adf_text(node: dict[str, Any]) -> str:
    """The text of an Atlassian Document, paragraphs joined by blank lines, hard breaks by newlines."""
    if node.get("type") == "text":
        return str(node["text"])
    if node.get("type") == "hardBreak":
        return "\n"
    joiner = "\n\n" if node.get("type") == "doc" else ""
    return joiner.join(adf_text(child) for child in node.get("content", []))
