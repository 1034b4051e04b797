"""The incidents role: runs the incident state machine; its outputs and input offsets commit in one transaction.

Exactly-once to Kafka: DataHub writes (MetadataChangeProposal_v1, when the write path is Kafka), effects for the
effects role, dead letters and the consumed offsets are one Kafka transaction.
"""

from __future__ import annotations

from pareis.compose.roles import role_spec

ROLE = role_spec("incidents")
