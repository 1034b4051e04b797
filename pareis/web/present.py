"""How answers look on a page: short names, times, durations, the timeline's geometry and the decision panel.
Presentation only — every fact shown comes from an answer unchanged (the recommendation per group from the answers
layer: :mod:`pareis.answers.decisions`)."""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from markupsafe import Markup, escape

from pareis.core.names import short_name

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from pareis.answers.graph import BlastGraph
    from pareis.answers.tickets import TicketLink
    from pareis.core.intents import IncidentFacts


@functools.lru_cache(maxsize=65_536)
def short(urn: str | None) -> str:
    """The readable name of an entity (:func:`pareis.core.names.short_name`, the one rule); ``—`` for None. Kept:
    a page names the same groups and versions hundreds of times, and the rule reads a URN character by character."""
    return short_name(urn)


def named(urn: str | None) -> str:
    """:func:`short`, plus the platform for a dataset (a dbt node and its warehouse table share a name)."""
    prefix = "urn:li:dataset:(urn:li:dataPlatform:"
    if urn and urn.startswith(prefix):
        return f"{short(urn)} ({urn[len(prefix) :].split(',', 1)[0]})"
    return short(urn)


def when(ms: int | None) -> str:
    if ms is None:
        return "—"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def duration(ms: int | None) -> str:
    """``3d 4h``, ``2h 5m``, ``40s``; ``—`` when unknown."""
    if ms is None:
        return "—"
    seconds = max(ms, 0) // 1000
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m"
    return f"{secs}s"


def link(urn: str) -> str:
    """A URN as one path segment."""
    return quote(urn, safe="")


def tickets(links: Sequence[TicketLink]) -> Markup:
    """An incident's ticket links (:mod:`pareis.answers.tickets`), one ``span.ticket`` per tool, ``—`` when none.
    Only an http(s) URL becomes a link; a ref without one (Slack's) shows its tool and id. A filter, not a
    template macro: the Incidents page draws a hundred rows of them."""
    if not links:
        return Markup("—")
    out = []
    for t in links:
        tool, label = escape(t.tool), escape(t.label)
        if t.url and t.url.startswith(("https://", "http://")):
            inner = f'<a href="{escape(t.url)}" rel="noopener noreferrer" target="_blank">{tool} {label}</a>'
        else:
            inner = f'{tool} <span class="mono">{label}</span>'
        out.append(f'<span class="ticket" data-tool="{tool}" data-ticket="{escape(t.id)}">{inner}</span>')
    return Markup(" · ".join(out))  # every value above is escaped


@dataclass(frozen=True)
class Mark:
    """One thing on the timeline: x in 0..1000, a row (0 = the data's row), a label and a CSS class."""

    x: float
    row: int
    label: str
    css: str
    at_ms: int
    title: str


@dataclass(frozen=True)
class Timeline:
    marks: tuple[Mark, ...]
    blind: tuple[float, float] | None  # x range of (last success, first failure]
    failing: tuple[float, float]  # x range of [first failure, heal or the right edge)
    rows: tuple[str, ...]  # row labels: "data", then each model group
    ticks: tuple[tuple[float, str], ...]

    @property
    def events(self) -> list[str]:
        """The marks as sentences in time order: the timeline as text (screen readers, phones)."""
        ordered = sorted(self.marks, key=lambda m: (m.at_ms, m.row, m.label))
        return [f"{when(m.at_ms)}: {m.label}" if m.row == 0 else m.title for m in ordered]


WIDTH = 1000.0


def _format(ms: int, fmt: str) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime(fmt)


def timeline(facts: IncidentFacts) -> Timeline:
    """The incident's times and every evaluated version's training time on one axis (DESIGN §2.3)."""
    w = facts.window
    times = [w.first_failure_ms]
    times += [t for t in (w.last_success_ms, w.healed_ms) if t is not None]
    groups = list(facts.contamination)
    times += [v.version.trained_at_ms for g in groups for v in g.versions if v.version.trained_at_ms is not None]
    lo, hi = min(times), max(times)
    pad = max((hi - lo) // 12, 3_600_000)
    lo, hi = lo - pad, hi + pad

    def x(t: int) -> float:
        return round((t - lo) / (hi - lo) * WIDTH, 1)

    marks = [
        Mark(x(w.first_failure_ms), 0, "first failure", "first-failure", w.first_failure_ms, when(w.first_failure_ms))
    ]
    if w.last_success_ms is not None:
        marks.append(
            Mark(x(w.last_success_ms), 0, "last success", "last-success", w.last_success_ms, when(w.last_success_ms))
        )
    if w.healed_ms is not None:
        marks.append(Mark(x(w.healed_ms), 0, "healed", "healed", w.healed_ms, when(w.healed_ms)))
    for row, g in enumerate(groups, start=1):
        for v in g.versions:
            t = v.version.trained_at_ms
            if t is None:
                continue
            label = f"v{v.version.version}" if v.version.version else short(v.version.urn)
            css = "version " + v.verdict.value.lower()
            marks.append(Mark(x(t), row, label, css, t, f"{short(v.version.urn)} trained {when(t)}: {v.verdict.value}"))
    blind = None if w.last_success_ms is None else (x(w.last_success_ms), x(w.first_failure_ms))
    failing = (x(w.first_failure_ms), x(w.healed_ms) if w.healed_ms is not None else WIDTH)
    step = max((hi - lo) // 6, 1)
    fmt = "%Y-%m-%d" if step >= 2 * 86_400_000 else "%m-%d %H:%M"
    ticks = tuple((x(t), _format(t, fmt)) for t in range(lo + step // 2, hi, step))
    return Timeline(tuple(marks), blind, failing, ("data", *(short(g.group) for g in groups)), ticks)


# -- The decision panel (DESIGN §4: the recommendation per group first, then the gate, the owners, the next step) --


def decisions(
    recommendations: Iterable[Mapping[str, Any]], owners: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """The decision panel's entries: each recommendation (``Recommendation.to_json()``), plus ``owners`` (of the
    group's versions, from the analysis's ``owners.models``; deduplicated, by URN) and ``next_step`` (one sentence).
    The retrain gate of each group is fetched apart (``/fragments/gate``): it can take seconds on a large graph."""
    out = []
    for rec in recommendations:
        versions = {rec["group"], *(s["urn"] for s in rec["serving"]), *(v["urn"] for v in rec["contaminated"])}
        if rec["target"]:
            versions.add(rec["target"]["urn"])
        found = {o["urn"]: o for model, given in owners.items() if model in versions for o in given}
        out.append({**rec, "owners": [found[u] for u in sorted(found)], "next_step": next_step(rec)})
    return out


def next_step(rec: Mapping[str, Any]) -> str:
    """What to do first about one group, in one sentence (from its recommendation alone)."""
    group = short(rec["group"])
    target = short(rec["target"]["urn"]) if rec["target"] else None
    action = rec["action"]
    if action == "ROLL_BACK" and target:
        return f"Roll {group} back to {target} now; retrain only once the retrain gate says GO."
    if action == "PROMOTE" and target:
        return f"Promote {target} to serve {group} now."
    if action == "RETRAIN":
        return (
            f"Retrain {group} on clean data as soon as the retrain gate says GO; no clean version exists to switch to."
        )
    spare = [short(u) for u in rec.get("do_not_promote", ())]
    if spare:
        return f"Nothing to switch for {group}; make sure nobody promotes {', '.join(spare)}."
    return f"Nothing to do for {group}."


ACTIONS = {"ROLL_BACK": "Roll back", "PROMOTE": "Promote", "RETRAIN": "Retrain", "NONE": "No switch"}
"""An action as its badge reads."""


def action(value: str) -> str:
    return ACTIONS.get(value, value)


def check_name(check_id: str) -> str:
    """A gate check's id in words (``no_active_incident`` → ``no active incident``)."""
    return check_id.replace("_", " ")


def at_risk(models: Iterable[str], contamination: Sequence[Mapping[str, Any]], healed_ms: int | None) -> list[str]:
    """The model versions an incident put at risk: those in its blast radius (``models``) except versions trained
    after its heal (they were trained on repaired data and never served the bad data)."""
    if healed_ms is None:
        return sorted(models)
    later = {
        v["urn"]
        for g in contamination
        for v in g["versions"]
        if v["trained_at_ms"] is not None and v["trained_at_ms"] > healed_ms
    }
    return sorted(set(models) - later)


def contaminated(contamination: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every CONTAMINATED version of an incident's groups, by URN."""
    return sorted(v["urn"] for g in contamination for v in g["versions"] if v["verdict"] == "CONTAMINATED")


def unknown(value: object) -> object:
    """``unknown`` for a value without data (None: DESIGN §2.5, a component without data is unknown, not 0)."""
    return "unknown" if value is None else value


@dataclass(frozen=True)
class GraphNode:
    """One node of the blast graph as text: its label, kind, role, severity (models) and the nodes it feeds."""

    label: str
    kind: str
    role: str
    severity: str | None
    feeds: tuple[str, ...]
    more: int = 0  # nodes it feeds beyond those named


FEEDS_NAMED = 8
"""How many of the nodes one node feeds the text names (the rest are counted)."""


def layers(graph: BlastGraph) -> list[tuple[str, list[GraphNode]]]:
    """The blast graph as text, layer by layer (what a screen reader reads, and a phone shows instead of the
    drawing): each layer named by what it holds, each node with the labels of the nodes it feeds."""
    label = {n.id: _node_label(n.label, n.kind, n.count) for n in graph.nodes}
    feeds: dict[str, list[str]] = {}
    for e in graph.edges:
        if e.rel != "sibling":
            feeds.setdefault(e.source, []).append(label[e.target])
    out: dict[int, list[GraphNode]] = {}
    for n in graph.nodes:
        fed = sorted(set(feeds.get(n.id, ())))
        node = GraphNode(label[n.id], n.kind, n.role, n.severity, tuple(fed[:FEEDS_NAMED]), len(fed[FEEDS_NAMED:]))
        out.setdefault(n.layer, []).append(node)
    return [(_layer_title(nodes), nodes) for _, nodes in sorted(out.items())]


def _node_label(label: str, kind: str, count: int) -> str:
    return f"{label} ({count:,} columns)" if kind in ("dataset", "schema") else label


def _layer_title(nodes: Sequence[GraphNode]) -> str:
    kinds = {n.kind for n in nodes}
    roles = {n.role for n in nodes}
    if kinds == {"model"}:
        return "models"
    if kinds == {"feature"}:
        return "features"
    if roles == {"failing"}:
        return "failing"
    if "origin" in roles and roles <= {"origin", "failing"}:
        return "origin"
    return "downstream"


_URN = re.compile(r"urn:li:[A-Za-z]+:(?:\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)|[^\s,;()]*[^\s,;().])")


def shorten_urns(text: str | None) -> str:
    """``text`` with every URN in it replaced by its short name (DESIGN §4: sentences name entities by their short
    names; the full URNs stay in the JSON)."""
    return _URN.sub(lambda m: short(m.group(0)), text or "")
