"""Everything the read side knows about one incident, found by its URN: Mission Control's incident page.

An incident URN is a guid of (incident key, first failure) (DESIGN §3), so the incident is found by walking the
incident list (:func:`pareis.answers.incidents.incident_list`) to its key and first failure, then analysing that
window of the key's timeline exactly as :func:`pareis.answers.incidents.analysis` analyses the latest one — so an
older, resolved incident of a dataset gets its own analysis, not its successor's. Beside the analysis: the blast
graph (:mod:`pareis.answers.graph`), the live incident state when the sources have one (when Pareis opened it, its
revision, what it tagged), and the postmortem once it healed (:func:`pareis.core.incident_text.postmortem`, opened
and resolved at the live state's times when known, else at the first failure and the heal). Its tickets (the
summary's, read from the effect ledger: :mod:`pareis.answers.tickets`) are in both the summary and the analysis.

JSON (keys sorted)::

    {"analysis": <pareis analyze --json>, "graph": <blast graph>, "summary": <incident list row>,
     "live": {"status", "revision", "opened_at_ms", "at_risk"} | null,
     "postmortem": {"time_to_detect_ms", "time_to_heal_ms", "failure_class", "text", "timeline": [...]} | null}
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pareis.answers.decisions import decided
from pareis.answers.graph import COLLAPSE_OVER, BlastGraph, blast_graph
from pareis.answers.incidents import IncidentAnswer, IncidentSummary, incident_list
from pareis.answers.sources import CannotEvaluate, Sources
from pareis.answers.timelines import class_timeline
from pareis.core.analysis import incident_facts
from pareis.core.graph import Memo
from pareis.core.incident_text import postmortem
from pareis.core.intents import IncidentFacts, Postmortem
from pareis.core.lifecycle import IncidentState
from pareis.core.window import incidents


@dataclass(frozen=True)
class IncidentDossier:
    summary: IncidentSummary
    answer: IncidentAnswer
    graph: BlastGraph
    live: IncidentState | None
    postmortem: Postmortem | None

    def to_json(self) -> dict[str, Any]:
        live = None
        if self.live is not None and self.live.incident is not None:
            tracked = self.live.incident
            live = {
                "at_risk": list(self.live.at_risk),
                "opened_at_ms": tracked.opened_at_ms,
                "revision": tracked.revision,
                "status": self.live.status.value,
            }
        return {
            "analysis": self.answer.to_json(),
            "graph": self.graph.to_json(),
            "live": live,
            "postmortem": self.postmortem.to_json() if self.postmortem else None,
            "summary": self.summary.to_json(),
        }


def dossier(sources: Sources, urn: str, *, collapse_over: int | None = None) -> IncidentDossier:
    """The incident ``urn`` (CannotEvaluate when the run history holds no such incident)."""
    summary = next((s for s in incident_list(sources) if s.urn == urn), None)
    if summary is None:
        raise CannotEvaluate(f"no incident {urn} in the run history")
    return dossier_of(sources, summary, collapse_over=collapse_over)


def facts_of(sources: Sources, summary: IncidentSummary) -> IncidentFacts:
    """The analysis of the incident ``summary`` names (its own window, not necessarily the dataset's latest)."""
    return _analysed(sources, summary)[0]


def _analysed(sources: Sources, summary: IncidentSummary) -> tuple[IncidentFacts, Memo]:
    """:func:`facts_of`, and the view it read (what the analysis reads stays remembered for the blast graph). The
    decisions are the summary's when it has one for each group the analysis finds (the list decided them over every
    incident), else decided again (:mod:`pareis.answers.decisions`)."""
    view = Memo(sources.lineage)
    key, timeline = class_timeline(view, sources.runs, summary.dataset)
    window = next((w for w in incidents(timeline) if w.first_failure_ms == summary.first_failure_ms), None)
    if window is None:
        raise CannotEvaluate(f"incident {summary.urn} is no longer in the run history")
    facts = incident_facts(view, key, timeline, window, sources.serving_aliases)
    if [d.group for d in summary.decisions] == [g.group for g in facts.contamination]:
        return dataclasses.replace(facts, decisions=summary.decisions), view
    return decided(sources, view, [facts], None)[0], view


def dossier_of(sources: Sources, summary: IncidentSummary, *, collapse_over: int | None = None) -> IncidentDossier:
    """The dossier of an incident already found in the list."""
    facts, view = _analysed(sources, summary)
    window = facts.window
    live = None
    if sources.incidents is not None:
        state = sources.incidents.get(facts.dataset)
        live = state if state.incident is not None and state.incident.urn == summary.urn else None
    report = None
    if window.healed_ms is not None:
        opened = live.incident.opened_at_ms if live and live.incident else window.first_failure_ms
        report = postmortem(facts, opened, window.healed_ms)
    # Drawn over the analysis's own view: the lookups the blast made are answered again from memory (the graph only
    # keeps edges between the blast's nodes, none of them removed, so the Memo's answers draw the same graph).
    graph = blast_graph(view, facts.blast, collapse_over=COLLAPSE_OVER if collapse_over is None else collapse_over)
    return IncidentDossier(summary, IncidentAnswer(facts, tickets=summary.tickets), graph, live, report)
