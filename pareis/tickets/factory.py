"""Building the configured ticketers from settings (called by the wiring, never at import time)."""

from __future__ import annotations

import httpx

from pareis.config import TicketSettings
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
