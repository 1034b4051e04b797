"""Building the configured ticketers from settings (called by the wiring, never at import time)."""

from __future__ import annotations

import httpx
import structlog

from pareis.config import TicketSettings
from pareis.errors import Fatal
from pareis.tickets.jira import JiraTicketer
from pareis.tickets.linear import LinearTicketer
from pareis.tickets.port import Ticketer
from pareis.tickets.slack import SlackTicketer


def ticketers_from_settings(settings: TicketSettings, *, http: httpx.Client | None = None) -> list[Ticketer]:
    """One ticketer per tool that is configured, in the order Slack, Jira, Linear.

    A tool counts as configured when any of its identifying settings is set (Slack token or channel; Jira URL,
    token or project; Linear API key or team); a half-configured tool raises :class:`~pareis.errors.Fatal`.
    Jira and Linear share ``http`` when given (one connection pool); Slack uses slack-sdk's own transport.
    """
    ticketers: list[Ticketer] = []
    if settings.slack.token is not None or settings.slack.channel:
        ticketers.append(SlackTicketer.from_settings(settings.slack))
    if settings.jira.url or settings.jira.token is not None or settings.jira.project:
        ticketers.append(JiraTicketer.from_settings(settings.jira, http=http))
    if settings.linear.api_key is not None or settings.linear.team_id:
        ticketers.append(LinearTicketer.from_settings(settings.linear, http=http))
    return ticketers


def check_ticket_tools(settings: TicketSettings) -> list[str]:
    """The configured tools' names, logged, for the effects role, which must know where its ticket effects go.

    :class:`~pareis.errors.Fatal` when no tool is configured unless ``tickets.no_tools`` says so explicitly (a
    typo in a tool's settings must not turn every ticket into a no-op), and when both are set.
    """
    tools = [t.tool for t in ticketers_from_settings(settings)]
    if settings.no_tools and tools:
        raise Fatal(f"tickets.no_tools is true but ticket tools are configured: {', '.join(tools)}")
    if not tools and not settings.no_tools:
        raise Fatal(
            "no ticket tool is configured (tickets.slack, tickets.jira or tickets.linear); "
            "set PAREIS_TICKETS__NO_TOOLS=true to run the effects role without one"
        )
    structlog.get_logger(__name__).info("ticket tools", tools=tools or "none (tickets.no_tools)")
    return tools
