"""The assertions role: records every assertion run and forwards a signal keyed by the asserted dataset; records
every dataset ``operation`` (when its data changed) for the retrain gate's freshness check.

At-least-once: the run history is idempotent by assertion + timestamp, and the incidents role tolerates a
repeated signal (its state machine ignores a run it has already applied).
"""

from __future__ import annotations

from pareis.compose.roles import role_spec

ROLE = role_spec("assertions")
