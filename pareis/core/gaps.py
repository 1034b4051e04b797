"""Gaps: untested columns that feed models, ranked (DESIGN §2.5).

A column is **tested** when an assertion names it (field level); siblings are one column (DESIGN §2.1), so a
test on the dbt node covers its warehouse table. A gap's exposure is what lies downstream of it: the features
and model versions its lineage reaches. Rank, best first:

1. gaps whose blast pattern matches a past incident's — the column is in the incident's affected set (which
   holds every column sharing an origin with its failing columns: DESIGN §2.2 step 3);
2. more distinct model groups downstream (a model version without a group counts once, as itself);
3. more features downstream;
4. column URN.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SuggestedTest:
    """One dbt test for a gap: its name and a ``schema.yml`` document holding just it."""

    name: str
    yaml: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "yaml": self.yaml}


@dataclass(frozen=True)
class Gap:
    """One untested column feeding models, with its exposure, the past incidents it matches and tests to add."""

    column: str
    dataset: str
    models: tuple[str, ...]
    features: tuple[str, ...]
    groups: int
    incidents: tuple[str, ...]
    tests: tuple[SuggestedTest, ...]

    @property
    def matches_past_incident(self) -> bool:
        return bool(self.incidents)

    def rank_key(self) -> tuple[bool, int, int, str]:
        return (not self.matches_past_incident, -self.groups, -len(self.features), self.column)

    def to_json(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "dataset": self.dataset,
            "models": list(self.models),
            "features": list(self.features),
            "matches_past_incident": self.matches_past_incident,
            "incidents": list(self.incidents),
            "tests": [t.to_json() for t in self.tests],
        }


def distinct_groups(models: Iterable[str], group_of: Mapping[str, str | None]) -> int:
    """The number of distinct model groups of ``models``; a model without a group counts once, as itself."""
    return len({group_of.get(m) or m for m in models})


def ranked(gaps: Iterable[Gap], limit: int | None = None) -> list[Gap]:
    """``gaps`` in rank order (see the module docstring), the first ``limit`` of them when given."""
    out = sorted(gaps, key=Gap.rank_key)
    return out if limit is None else out[: max(0, limit)]


def matching_incidents(columns: Iterable[str], affected: Mapping[str, frozenset[str]]) -> tuple[str, ...]:
    """The incidents (URN → affected columns) whose affected set holds any of ``columns`` (one column's sibling
    spellings), sorted."""
    cols = set(columns)
    return tuple(sorted(urn for urn, hit in affected.items() if cols & hit))
