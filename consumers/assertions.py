"""The assertions role: records every assertion run and forwards a signal keyed by the asserted dataset; records
every dataset ``operation`` (when its data changed) for the retrain gate's freshness check.

At-least-once: the run history is idempotent by assertion + timestamp, and the incidents role tolerates a
repeated signal (its state machine ignores a run it has already applied).
"""

from __future__ import annotations

from pareis.kafka.role import Delivery, RoleSpec

ASPECTS = frozenset({"assertionRunEvent", "operation"})

ROLE = RoleSpec(
    name="assertions",
    inputs=("mcl_timeseries",),
    outputs=("signals",),
    delivery=Delivery.AT_LEAST_ONCE,
    factory="pareis.bootstrap:assertions_pipeline",
    description="MetadataChangeLog_Timeseries_v1 → RunHistory (Redis) + pareis.signals.v1",
)
