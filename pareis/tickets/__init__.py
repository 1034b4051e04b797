"""Ticket tools (Slack, Jira, Linear): one ticket per incident per tool."""
