"""The effects role: delivers what must leave Kafka (tickets, DataHub REST writes).

At-least-once with an idempotency ledger: every effect has a deterministic id, so a redelivered effect is a no-op;
a permanent failure is Poison and goes to the DLQ with its reason.
"""

from __future__ import annotations

from pareis.compose.roles import role_spec

ROLE = role_spec("effects")
