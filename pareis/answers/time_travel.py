"""What an answer evaluated at a time ``at`` (``--at``) reads as it stood then, and what as the index holds it now
(issue 31 point 9): every such answer says so in one JSON field, ``time_travel``, input → true when replayed as of
``at``, false when read as it is today (for an ``at`` in the past, today's state stands in for then).

* ``runs`` — assertion runs: only those at or before ``at`` (latest runs, pass rates, freshness);
* ``incidents`` — the incidents of those runs, as they stood at ``at`` (one healed later is active);
* ``versions`` — the model versions named: those trained at or before ``at`` (a group's newest, protect's version
  list and gaps, the evidence pack's header);
* ``dataset_changes`` — ``operation`` timestamps (the gate's freshness rule): those at or before ``at``;
* ``lineage`` — lineage, siblings, features, their sources and the models' feature lists: today's;
* ``schemas`` — schemas and profiles: today's;
* ``deprecation`` — deprecation flags: today's;
* ``removals`` — soft deletions (``status.removed``): today's.

The index keeps no history of aspects, so the last four cannot be replayed.
"""

from __future__ import annotations

from types import MappingProxyType

_CURRENT = {"lineage": False, "schemas": False, "removals": False}

GATE = MappingProxyType(
    {"runs": True, "incidents": True, "versions": True, "dataset_changes": True, **_CURRENT, "deprecation": False}
)
"""What ``pareis gate`` reads: it also judges dataset changes (check 4) and deprecation (check 7)."""

PROTECT = MappingProxyType({"runs": True, "incidents": True, "versions": True, **_CURRENT})
"""What ``pareis protect`` and the evidence pack read."""


def field(read: MappingProxyType[str, bool]) -> dict[str, bool]:
    """The ``time_travel`` value of an answer that reads ``read``, keys sorted."""
    return dict(sorted(read.items()))
