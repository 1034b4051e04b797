"""Every model group and its versions with their verdicts (DESIGN §2.3): Mission Control's Models page.

One group is exactly :func:`pareis.answers.verdicts.model_verdicts` of it — the answer the MCP tool
``get_model_verdicts`` and ``pareis analyze --model`` give — so the verdicts, the rollback target and the incidents
are the same on every surface (DESIGN §6). The groups are those of every ``mlModel`` the index holds
(``entities("mlModelProperties")``): its model group, or the version itself when it is in none; every group is
answered over one incident list (:func:`pareis.answers.incidents.incident_analyses`, computed once).

JSON (keys sorted by the renderer)::

    {"groups": [{"at_risk": bool, <get_model_verdicts of the group>}, …]}   # by group (or lone version) URN

Each group's ``decision`` (what to do now about it) is decided with every other group's, over the same list.
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
    from pareis.answers.verdicts import verdicts_over
    from pareis.core import catalog
    from pareis.core.contamination import ModelVersion, age
    from pareis.core.graph import Memo

    view = Memo(sources.lineage)
    found = catalog.model_versions(view, sources.lineage.entities("mlModelProperties"))
    grouped = sorted({v.group for v in found.values() if v.group})
    members = catalog.versions_by_group(view, grouped)
    asked: list[tuple[str, str | None, list[ModelVersion]]] = [
        (g, g, sorted(members.get(g, ()), key=age)) for g in grouped
    ]
    asked += [(urn, None, [v]) for urn, v in found.items() if not v.group]
    answers = verdicts_over(sources, asked, incident_analyses(sources), None)
    return ModelsAnswer(tuple(sorted(answers, key=lambda a: a.model)))
