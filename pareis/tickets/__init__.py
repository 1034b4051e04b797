"""Ticket tools (Slack, Jira, Linear): one ticket per incident per tool.

:mod:`pareis.tickets.port` is the contract; :mod:`pareis.tickets.delivery` composes ticketers with the effect
ledger and the retry policy for the effects role; :mod:`pareis.tickets.factory` builds the configured tools.
"""

from pareis.tickets.port import IncidentTicket, Ticketer, TicketRef

__all__ = ["IncidentTicket", "TicketRef", "Ticketer"]
