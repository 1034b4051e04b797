"""Every model group and its versions, with what the incidents say about each (DESIGN §2.3): Mission Control's
Models page.

Versions are every ``mlModel`` the index holds (``entities("mlModelProperties")``), grouped by model group (a model
in no group is its own group), oldest first as :func:`pareis.core.catalog.versions_by_group` orders them. For each
version: its verdict in every incident whose analysis evaluated its group (the incidents of
:func:`pareis.answers.incidents.incident_list`, each analysed as :mod:`pareis.answers.dossier` does), and the
overall verdict — ``CONTAMINATED`` if any incident says so, else ``UNKNOWN`` if any says so, else ``CLEAN`` if an
incident evaluated it, else ``NOT_EVALUATED``. A group's rollback target is the safe rollback of the newest incident
(by first failure) that evaluated it; ``at_risk`` whether an ACTIVE incident's blast radius reaches one of its
versions.

JSON (keys sorted)::

    {"groups": [{"group", "at_risk", "safe_rollback": {urn, version, incident} | null,
                 "versions": [{"urn", "version", "trained_at_ms", "verdict",
                               "incidents": [{"incident", "state", "verdict"}]}]}]}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pareis.answers.sources import Sources

_RANK = {"CONTAMINATED": 0, "UNKNOWN": 1, "CLEAN": 2}


@dataclass(frozen=True)
class VersionRow:
    urn: str
    version: str | None
    trained_at_ms: int | None
    verdict: str
    incidents: tuple[tuple[str, str, str], ...]  # (incident URN, its state, this version's verdict in it)

    def to_json(self) -> dict[str, Any]:
        return {
            "incidents": [{"incident": i, "state": s, "verdict": v} for i, s, v in self.incidents],
            "trained_at_ms": self.trained_at_ms,
            "urn": self.urn,
            "verdict": self.verdict,
            "version": self.version,
        }


@dataclass(frozen=True)
class GroupRow:
    group: str
    versions: tuple[VersionRow, ...]
    safe_rollback: tuple[str, str | None, str] | None  # (urn, version label, incident)
    at_risk: bool

    def to_json(self) -> dict[str, Any]:
        rollback = self.safe_rollback
        return {
            "at_risk": self.at_risk,
            "group": self.group,
            "safe_rollback": None
            if rollback is None
            else {"incident": rollback[2], "urn": rollback[0], "version": rollback[1]},
            "versions": [v.to_json() for v in self.versions],
        }


@dataclass(frozen=True)
class ModelsAnswer:
    groups: tuple[GroupRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {"groups": [g.to_json() for g in self.groups]}


def models(sources: Sources) -> ModelsAnswer:
    """Every group's versions and verdicts (see the module docstring)."""
    from pareis.answers.dossier import facts_of
    from pareis.answers.incidents import incident_list
    from pareis.core import catalog
    from pareis.core.graph import Memo

    view = Memo(sources.lineage)
    found = catalog.model_versions(view, sources.lineage.entities("mlModelProperties"))
    groups = sorted({v.group or urn for urn, v in found.items()})
    versions = dict(catalog.versions_by_group(view, [g for g in groups if g not in found]))
    for urn, v in found.items():
        if not v.group:
            versions[urn] = (v,)
    verdicts: dict[str, list[tuple[str, str, str]]] = {}
    rollbacks: dict[str, tuple[int, tuple[str, str | None, str] | None]] = {}
    at_risk: set[str] = set()
    for summary in incident_list(sources):
        if not summary.models:
            continue
        facts = facts_of(sources, summary)
        if summary.state == "ACTIVE":
            at_risk |= {m.group or m.urn for m in facts.blast.models}
        for g in facts.contamination:
            for judged in g.versions:
                row = (summary.urn, summary.state, judged.verdict.value)
                verdicts.setdefault(judged.version.urn, []).append(row)
            best = rollbacks.get(g.group)
            if best is None or best[0] < summary.first_failure_ms:
                r = g.safe_rollback
                rollbacks[g.group] = (summary.first_failure_ms, None if r is None else (r.urn, r.version, summary.urn))
    rows = []
    for group in groups:
        vrows = []
        for v in versions.get(group, ()):
            seen = tuple(sorted(verdicts.get(v.urn, ())))
            overall = min((s[2] for s in seen), key=_RANK.__getitem__, default="NOT_EVALUATED")
            vrows.append(VersionRow(v.urn, v.version, v.trained_at_ms, overall, seen))
        rollback = rollbacks.get(group)
        rows.append(GroupRow(group, tuple(vrows), rollback[1] if rollback else None, group in at_risk))
    return ModelsAnswer(tuple(rows))
