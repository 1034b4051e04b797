"""The lineage role: keeps the lineage index current from every lineage-bearing aspect on the versioned change log.

At-least-once: the lineage store's writes are idempotent (an aspect replaces that entity's edges from that aspect;
an older aspect version never overwrites a newer one), so a redone batch changes nothing.
"""

from __future__ import annotations

from pareis.kafka.role import Delivery, RoleSpec

ASPECTS = frozenset(
    {
        "upstreamLineage",
        "schemaMetadata",
        "siblings",
        "dataJobInputOutput",
        "mlFeatureProperties",
        "mlFeatureTableProperties",
        "mlModelProperties",
        "mlModelGroupProperties",
        "versionProperties",
        "dataProcessInstanceProperties",
        "dataProcessInstanceInput",
        "dataProcessInstanceOutput",
        "assertionInfo",
        "status",
        "deprecation",
    }
)
"""The aspects the role decodes; the decoder drops every other message after reading only its header."""

ROLE = RoleSpec(
    name="lineage",
    inputs=("mcl_versioned",),
    delivery=Delivery.AT_LEAST_ONCE,
    factory="pareis.bootstrap:lineage_pipeline",
    description="MetadataChangeLog_Versioned_v1 → LineageStore (Redis)",
)
