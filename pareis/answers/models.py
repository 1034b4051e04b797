"""Every model group and its versions with their verdicts (DESIGN §2.3): Mission Control's Models page.

One group is exactly :func:`pareis.answers.verdicts.model_verdicts` of it — the answer the MCP tool
``get_model_verdicts`` and ``pareis analyze --model`` give — so the verdicts, the rollback target and the incidents
are the same on every surface (DESIGN §6). The groups are those of every ``mlModel`` the index holds
(``entities("mlModelProperties")``): its model group, or the version itself when it is in none; every group is
answered over one incident list (:func:`pareis.answers.incidents.incident_analyses`, computed once).

JSON (keys sorted by the renderer)::

    {"groups": [{"at_risk": bool, <get_model_verdicts of the group>}, …]}   # by group (or lone version) URN
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pareis.answers.sources import Sources
from pareis.answers.verdicts import VerdictsAnswer


@dataclass(frozen=True)
class ModelsAnswer:
    """One :class:`~pareis.answers.verdicts.VerdictsAnswer` per model group (or lone version), by URN."""

    groups: tuple[VerdictsAnswer, ...]

    def to_json(self) -> dict[str, Any]:
        return {"groups": [{"at_risk": g.at_risk, **g.to_json()} for g in self.groups]}


def models(sources: Sources) -> ModelsAnswer:
    """Every group's versions and verdicts (see the module docstring)."""
    from pareis.answers.incidents import incident_analyses
    from pareis.answers.verdicts import verdicts_of
    from pareis.core import catalog
    from pareis.core.contamination import age
    from pareis.core.graph import Memo

    view = Memo(sources.lineage)
    found = catalog.model_versions(view, sources.lineage.entities("mlModelProperties"))
    grouped = sorted({v.group for v in found.values() if v.group})
    members = catalog.versions_by_group(view, grouped)
    analyses = incident_analyses(sources)
    answers = [verdicts_of(g, g, sorted(members.get(g, ()), key=age), analyses) for g in grouped]
    answers += [verdicts_of(urn, None, (v,), analyses) for urn, v in found.items() if not v.group]
    return ModelsAnswer(tuple(sorted(answers, key=lambda a: a.model)))
