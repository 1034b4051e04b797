"""Which incidents a person asked for: the one filter of the incident list (DESIGN §4 "pareis incidents"), used alike
by ``pareis incidents``, Mission Control's list (and ``/api/incidents``) and the MCP tool ``list_incidents``.

A filter keeps the rows of :func:`pareis.answers.incidents.incident_list` (in its order) that match every criterion
given: ``state`` (``ACTIVE`` or ``RESOLVED``; None: both), ``severity``, ``dataset`` — sibling-aware: any member of
the incident's sibling class names it, so a dbt node finds its warehouse table's incident and the reverse (DESIGN
§2.1) —, ``model`` (a version or a group: the incidents whose blast radius reaches it or one of the group's
versions) and ``text`` (case-insensitive, in the failing dataset's or an affected model's URN). A value outside
:data:`STATES` or :data:`SEVERITIES` is CannotEvaluate with one line naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pareis.answers.incidents import IncidentSummary, incident_list
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.core.graph import Memo
from pareis.core.impact import Severity
from pareis.core.keys import sibling_classes

STATES = ("ACTIVE", "RESOLVED")
SEVERITIES = tuple(s.value for s in sorted(Severity, key=lambda s: -s.rank))
"""``HIGH``, ``MEDIUM``, ``LOW``, ``NONE``: the order a person scans them in."""


@dataclass(frozen=True)
class IncidentFilter:
    """What to keep of the incident list (see the module docstring); every field None keeps everything."""

    state: str | None = None
    severity: str | None = None
    dataset: str | None = None
    model: str | None = None
    text: str | None = None

    def problems(self) -> list[str]:
        """One sentence per value this filter does not know (empty when it is sound)."""
        out = []
        for name, value, allowed in (("state", self.state, STATES), ("severity", self.severity, SEVERITIES)):
            if value is not None and value not in allowed:
                out.append(f"{name} {value!r} is not one of {', '.join(allowed)}")
        return out


def listed(sources: Sources, chosen: IncidentFilter, at_ms: int | None = None) -> list[IncidentSummary]:
    """The incidents as of ``at_ms`` (None: everything known) that ``chosen`` keeps, in the list's order, each with
    its recommendation per affected group."""
    problems = chosen.problems()
    if problems:
        raise CannotEvaluate("; ".join(problems))
    return matching(sources, incident_list(sources, at_ms), chosen)


def matching(sources: Sources, rows: Sequence[IncidentSummary], chosen: IncidentFilter) -> list[IncidentSummary]:
    """The rows ``chosen`` keeps (its values assumed sound: :meth:`IncidentFilter.problems`), in their order."""
    view = Memo(sources.lineage)
    datasets: frozenset[str] | None = None
    if chosen.dataset is not None:
        datasets = sibling_classes(view, [chosen.dataset])[chosen.dataset]
    versions: set[str] | None = None
    if chosen.model is not None:
        from pareis.answers.verdicts import model_versions

        versions = {v.urn for v in model_versions(sources, chosen.model)[1]} | {chosen.model}
    text = chosen.text.casefold() if chosen.text else None
    return [
        s
        for s in rows
        if (chosen.state is None or s.state == chosen.state)
        and (chosen.severity is None or s.severity == chosen.severity)
        and (datasets is None or s.dataset in datasets)
        and (versions is None or not versions.isdisjoint(s.models))
        and (text is None or text in s.dataset.casefold() or any(text in m.casefold() for m in s.models))
    ]
