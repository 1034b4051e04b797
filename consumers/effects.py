"""The effects role: delivers what must leave Kafka (tickets, DataHub REST writes).

At-least-once with an idempotency ledger: every effect has a deterministic id, so a redelivered effect is a no-op;
a permanent failure is Poison and goes to the DLQ with its reason.
"""

from __future__ import annotations

from pareis.kafka.role import Delivery, RoleSpec

ROLE = RoleSpec(
    name="effects",
    inputs=("effects",),
    delivery=Delivery.AT_LEAST_ONCE,
    factory="pareis.bootstrap:effects_pipeline",
    description="pareis.effects.v1 → Slack / Jira / Linear / DataHub REST",
)
