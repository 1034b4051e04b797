"""The human side of an incident: title, description, update comment, postmortem (DESIGN §3, §4).

Pure renderings of :class:`~pareis.core.intents.IncidentFacts` through its brief (:mod:`pareis.core.brief`),
decision first: same facts, same text, byte for byte. Times are rendered in UTC ISO 8601 with milliseconds. The
description and the postmortem are Markdown (headings, plain lists, no tables), their entities linked to DataHub's
web app when its URL is given; :func:`markdown` and :func:`plain_text` render any brief (Linear's description,
Slack's fallback text).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from pareis.core.brief import (
    DECISION,
    EVIDENCE,
    MODELS,
    NEXT_STEP,
    OWNERS,
    RETRAIN,
    VERSIONS,
    Brief,
    Line,
    Section,
    Span,
    action_words,
    brief,
    iso,
)
from pareis.core.intents import IncidentFacts, Postmortem, TimelineEntry
from pareis.core.names import short_name
from pareis.core.serving import short_version_name

__all__ = [
    "described",
    "description",
    "iso",
    "markdown",
    "plain_text",
    "postmortem",
    "title",
    "update_comment",
]


def title(facts: IncidentFacts) -> str:
    """The brief's headline: the decision, then the failing dataset (:func:`pareis.core.brief.headline`)."""
    return brief(facts).headline


def description(facts: IncidentFacts, ui_url: str | None = None) -> str:
    """The brief as Markdown, decision first; entities linked to DataHub's web app at ``ui_url``."""
    return markdown(brief(facts, ui_url=ui_url))


def described(facts: IncidentFacts) -> tuple[str, str, Brief]:
    """:func:`title` and :func:`description` (without links) of ``facts``, and the brief both render (an intent
    carries it: :func:`pareis.core.brief.linked` links it for the tickets without analysing the facts again)."""
    found = brief(facts)
    return found.headline, markdown(found), found


def markdown(found: Brief, *, level: int = 3) -> str:
    """A brief as Markdown: a heading (of ``level``) per section, a list item per line, then its links."""
    blocks = [_md_section(s, level) for s in found.sections]
    if found.links:
        blocks.append(" · ".join(_md_span(s) for s in found.links))
    return "\n\n".join(blocks)


def plain_text(found: Brief, only: Collection[str] | None = None) -> str:
    """A brief as plain text (no markup): ``Title:`` then ``- line`` per section (the sections titled in ``only``,
    when given, and then no links); links as ``label: url``."""
    sections = [s for s in found.sections if only is None or s.title in only]
    blocks = ["\n".join([f"{s.title}:", *(f"- {_plain(line)}" for line in s.lines)]) for s in sections]
    if found.links and only is None:
        blocks.append("\n".join(f"{s.text}: {s.url}" for s in found.links if s.url))
    return "\n\n".join(blocks)


def update_comment(changes: Mapping[str, tuple[Any, Any]], cause: Iterable[str] = ()) -> str:
    """What changed, the decisions first (``- churn: now PROMOTE churn_4 (was ROLL BACK to churn_2)``), then one line
    per other changed fact: ``name: old → new`` for values, ``+added -removed`` for lists, entities by short name;
    last, when a lineage change caused the Update, the entities it changed (``cause``).

    ``blast`` values are digests (see :class:`pareis.core.lifecycle.Published`), so only the fact of a change is said.
    """
    lines = ["Pareis updated this incident:"]
    if "decisions" in changes:
        lines.extend(_decision_changes(*changes["decisions"]))
    for name in sorted(changes):
        old, new = changes[name]
        if name == "decisions":
            continue
        if name == "blast":  # compared by digest: say that it moved, the tag lines say how
            lines.append("- blast: the affected columns, features or models changed")
        elif isinstance(old, list) and isinstance(new, list):
            added = [_item(x) for x in new if x not in old]
            removed = [_item(x) for x in old if x not in new]
            parts = [f"+{x}" for x in added] + [f"-{x}" for x in removed]
            lines.append(f"- {name}: {' '.join(parts) if parts else 'reordered'}")
        else:
            lines.append(f"- {name}: {_item(old)} → {_item(new)}")
    changed = sorted(cause)
    if changed:
        lines.append(f"- after a lineage change of: {', '.join(_name(c) for c in changed)}")
    return "\n".join(lines)


def postmortem(facts: IncidentFacts, opened_at_ms: int, resolved_at_ms: int, ui_url: str | None = None) -> Postmortem:
    """The postmortem of a healed incident (``facts.window.healed_ms`` must be set): the decision as of the heal
    first, then the durations, the evidence and the timeline; entities linked at ``ui_url``."""
    w = facts.window
    if w.healed_ms is None:
        raise ValueError(f"{facts.urn} is still failing: no postmortem before it heals")
    entries = [TimelineEntry(opened_at_ms, "opened", facts.urn), TimelineEntry(resolved_at_ms, "resolved", facts.urn)]
    if w.last_success_ms is not None:
        entries.append(TimelineEntry(w.last_success_ms, "last_success", facts.dataset, "blind window opens"))
    for run in w.runs:
        rows = "" if run.failed_rows is None else f"{run.failed_rows} failed rows"
        entries.append(TimelineEntry(run.timestamp_ms, run.result.value.lower(), run.assertion, rows))
    entries.append(TimelineEntry(w.first_failure_ms, "first_failure", facts.dataset, "incident begins"))
    entries.append(TimelineEntry(w.healed_ms, "healed", facts.dataset, "no assertion fails any more"))
    timeline = tuple(sorted(entries, key=lambda e: (e.at_ms, e.event, e.subject, e.detail)))
    detect = None if w.last_success_ms is None else w.first_failure_ms - w.last_success_ms
    heal = w.healed_ms - w.first_failure_ms
    found = brief(facts, ui_url=ui_url)
    decided = [s for s in found.sections if s.title in (DECISION, RETRAIN, OWNERS, NEXT_STEP)]
    evidence = [s for s in found.sections if s.title not in (DECISION, RETRAIN, OWNERS, NEXT_STEP)]
    contaminated = sorted({v for g in facts.contamination for v in g.contaminated}, key=lambda v: v.urn)
    rollbacks = "; ".join(
        f"{short_name(g.group)} → {short_version_name(g.safe_rollback) if g.safe_rollback else 'none'}"
        for g in facts.contamination
    )
    text = "\n".join(
        [
            f"# Postmortem: {found.headline}",
            "",
            "## As of the heal",
            "",
            *(_md_section(s, 3) + "\n" for s in decided),
            "## Summary",
            "",
            f"- Incident: {short_name(facts.urn)}",
            f"- Class of failure: {facts.failure_class}",
            f"- Time to detect (blind window): {_duration(detect)}",
            f"- Time to heal: {_duration(heal)}",
            f"- Contaminated versions: {', '.join(short_version_name(v) for v in contaminated) or 'none'}",
            f"- Safe rollback: {rollbacks or 'no model affected'}",
            "",
            "## What happened",
            "",
            *(_md_section(s, 3) + "\n" for s in evidence if s.title in (EVIDENCE, MODELS, VERSIONS)),
            "## Timeline (UTC)",
            "",
            *(
                f"- {iso(e.at_ms)} {e.event} {short_name(e.subject)}{' — ' + e.detail if e.detail else ''}"
                for e in timeline
            ),
        ]
    )
    return Postmortem(
        timeline=timeline,
        time_to_detect_ms=detect,
        time_to_heal_ms=heal,
        contaminated_versions=facts.contaminated_versions,
        rollbacks=facts.rollbacks,
        failure_class=facts.failure_class,
        text=text,
    )


def _md_section(section: Section, level: int) -> str:
    return "\n".join([f"{'#' * level} {section.title}", "", *(f"- {_md_line(line)}" for line in section.lines)])


def _md_line(line: Line) -> str:
    return "".join(_md_span(s) for s in line)


def _md_span(span: Span) -> str:
    text = _md_escape(span.text)
    if span.url:
        text = f"[{text}]({span.url})"
    if span.strong and span.text.strip():
        lead, core, trail = _split_space(text)
        text = f"{lead}**{core}**{trail}"
    return text


def _md_escape(text: str) -> str:
    """Escape what Markdown would read as markup in a name (``_`` is left: names such as ``churn_2`` read fine in
    CommonMark, where intraword underscores are not emphasis)."""
    for ch in ("\\", "*", "[", "]", "`"):
        text = text.replace(ch, "\\" + ch)
    return text


def _split_space(text: str) -> tuple[str, str, str]:
    """Leading space, the rest, trailing space: emphasis must not begin or end with a space."""
    core = text.strip(" ")
    lead = text[: len(text) - len(text.lstrip(" "))]
    trail = text[len(text.rstrip(" ")) :]
    return lead, core, trail


def _plain(line: Iterable[Span]) -> str:
    return "".join(s.text for s in line)


def _decision_changes(old: Sequence[Sequence[Any]], new: Sequence[Sequence[Any]]) -> list[str]:
    """``[[group, action, target], …]`` before and after, as one line per group whose decision moved."""
    before = {str(d[0]): (d[1], d[2]) for d in old}
    after = {str(d[0]): (d[1], d[2]) for d in new}
    lines = []
    for group in sorted(before.keys() | after.keys()):
        was, now = before.get(group), after.get(group)
        if was == now:
            continue
        name = short_name(group)
        if now is None:
            lines.append(f"- {name}: no longer affected (was {_words(was)})")
        elif was is None:
            lines.append(f"- {name}: {_words(now)}")
        else:
            lines.append(f"- {name}: now {_words(now)} (was {_words(was)})")
    return lines


def _words(decision: tuple[Any, Any] | None) -> str:
    if decision is None:
        return "-"
    action, target = decision
    return action_words(str(action), short_name(target) if target else None)


def _duration(ms: int | None) -> str:
    if ms is None:
        return "unknown (never known good)"
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"


def _item(value: Any) -> str:
    if isinstance(value, list):
        return "/".join("-" if x is None else _name(x) for x in value)
    return "-" if value is None else _name(value)


def _name(value: Any) -> str:
    """A URN by its short name; any other value as it is."""
    text = str(value)
    return short_name(text) if text.startswith("urn:li:") else text
