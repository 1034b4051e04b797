"""The lineage role: keeps the lineage index current from every lineage-bearing aspect on the versioned change log.

At-least-once: the lineage store's writes are idempotent (an aspect replaces that entity's edges from that aspect;
an older aspect version never overwrites a newer one), so a redone batch changes nothing. The decoder keeps only
the aspects in :data:`pareis.datahub.translate.lineage.LINEAGE_ASPECTS`, reading just the header of every other message.
"""

from __future__ import annotations

from pareis.compose.roles import role_spec

ROLE = role_spec("lineage")
