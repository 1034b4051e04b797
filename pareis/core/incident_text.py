"""The human side of an incident: title, description, update comment, postmortem (DESIGN §3).

Pure renderings of :class:`~pareis.core.intents.IncidentFacts`: same facts, same text, byte for byte. Times are
rendered in UTC ISO 8601 with milliseconds. The description is Markdown that reads well in DataHub, Slack,
Jira and Linear alike (plain lists, no tables).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pareis.core.intents import IncidentFacts, Postmortem, TimelineEntry
from pareis.core.owners import Owner

_MAX_LISTED = 20  # past this many models or assertions, a description lists the first ones and counts the rest


def iso(ms: int | None) -> str:
    """``2024-05-01T12:00:00.000Z``; ``-`` for None."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def dataset_name(urn: str) -> str:
    """The name part of a dataset URN (``urn:li:dataset:(platform,name,env)`` → ``name``), else the URN."""
    if urn.startswith("urn:li:dataset:(") and urn.endswith(")"):
        parts = urn[len("urn:li:dataset:(") : -1].split(",")
        if len(parts) >= 3:
            return ",".join(parts[1:-1])
    return urn


def title(facts: IncidentFacts) -> str:
    models = len(facts.blast.models)
    return (
        f"ML data incident on {dataset_name(facts.dataset)}: {models} model(s) at risk, severity {facts.severity.value}"
    )


def description(facts: IncidentFacts) -> str:
    """Blast radius, blind window and rollback, in that order of importance."""
    w = facts.window
    blast = facts.blast
    rows = "unknown" if w.failed_rows is None else str(w.failed_rows)
    good = iso(w.last_success_ms) if w.last_success_ms is not None else "never (no earlier passing run)"
    lines = [
        f"Pareis: {len(w.assertions)} failing assertion(s) on {facts.dataset}; failed rows: {rows}. "
        f"Class of failure: {facts.failure_class}.",
        f"Severity {facts.severity.value} (priority {facts.priority}): {len(blast.models)} model(s), "
        f"{len(blast.features)} feature(s), {len(blast.columns)} column(s) downstream.",
        f"Blind window: last known good {good}, first failure {iso(w.first_failure_ms)}; "
        + ("still failing." if w.is_open else f"healed {iso(w.healed_ms)}."),
    ]
    if blast.incomplete:
        lines.append(
            f"Lineage incomplete: part of the lineage of {', '.join(blast.incomplete[:_MAX_LISTED])} could not be "
            "indexed (see the dead-letter topic); the blast radius may be larger."
        )
    if blast.models:
        lines.append("")
        lines.append("Models at risk:")
        for model in blast.models[:_MAX_LISTED]:
            poisoned = len(model.poisoned_features)
            named = ", ".join(model.poisoned_features[:_MAX_LISTED])
            if poisoned > _MAX_LISTED:
                named += f" and {poisoned - _MAX_LISTED} more"
            lines.append(
                f"- {model.urn}: {model.severity.value}, {poisoned}/{model.total_features} feature(s) poisoned"
                f" ({model.precision} precision)" + (f": {named}" if named else "")
            )
        lines.extend(_more(len(blast.models)))
    if facts.contamination:
        lines.append("")
        lines.append("Contamination and rollback:")
        for group in facts.contamination:
            verdicts = ", ".join(
                f"{_label(v.version.version, v.version.urn)} {v.verdict.value}" for v in group.versions
            )
            rollback = group.safe_rollback
            advice = (
                f"roll back to {_label(rollback.version, rollback.urn)} ({rollback.urn})"
                if rollback
                else "no safe rollback"
            )
            lines.append(f"- {group.group}: {verdicts}; {advice}.")
    lines.extend(_owner_lines(facts))
    lines.append("")
    lines.append("Assertions:")
    lines.extend(f"- {a}" for a in w.assertions[:_MAX_LISTED])
    lines.extend(_more(len(w.assertions)))
    return "\n".join(lines)


def update_comment(changes: Mapping[str, tuple[Any, Any]]) -> str:
    """One line per changed fact: ``name: old → new`` for values, ``+added -removed`` for lists.

    ``blast`` values are digests (see :class:`pareis.core.lifecycle.Published`), so only the fact of a change is said.
    """
    lines = ["Pareis updated this incident:"]
    for name in sorted(changes):
        old, new = changes[name]
        if name == "blast":  # compared by digest: say that it moved, the tag lines say how
            lines.append("- blast: the affected columns, features or models changed")
        elif isinstance(old, list) and isinstance(new, list):
            added = [_item(x) for x in new if x not in old]
            removed = [_item(x) for x in old if x not in new]
            parts = [f"+{x}" for x in added] + [f"-{x}" for x in removed]
            lines.append(f"- {name}: {' '.join(parts) if parts else 'reordered'}")
        else:
            lines.append(f"- {name}: {_item(old)} → {_item(new)}")
    return "\n".join(lines)


def postmortem(facts: IncidentFacts, opened_at_ms: int, resolved_at_ms: int) -> Postmortem:
    """The postmortem of a healed incident (``facts.window.healed_ms`` must be set)."""
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
    text = "\n".join(
        [
            f"# Postmortem: {title(facts)}",
            "",
            f"- Incident: {facts.urn}",
            f"- Class of failure: {facts.failure_class}",
            f"- Time to detect (blind window): {_duration(detect)}",
            f"- Time to heal: {_duration(heal)}",
            f"- Contaminated versions: {', '.join(facts.contaminated_versions) or 'none'}",
            "- Rollback: " + ("; ".join(f"{g} → {r or 'none'}" for g, r in facts.rollbacks) or "no model affected"),
            "",
            "## What happened",
            "",
            description(facts),
            "",
            "## Timeline (UTC)",
            "",
            *(f"- {iso(e.at_ms)} {e.event} {e.subject}{' — ' + e.detail if e.detail else ''}" for e in timeline),
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


def _duration(ms: int | None) -> str:
    if ms is None:
        return "unknown (never known good)"
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"


def _owner_lines(facts: IncidentFacts) -> list[str]:
    """The "Owners" section: the failing dataset's owners, then each affected model's (only those with owners)."""
    owners = facts.owners
    models = [(m, found) for m, found in owners.models if found]
    if not owners.dataset and not models:
        return []
    lines = ["", "Owners:"]
    if owners.dataset:
        lines.append(f"- {dataset_name(facts.dataset)} (failing dataset): {_people(owners.dataset)}")
    lines.extend(f"- {model}: {_people(found)}" for model, found in models[:_MAX_LISTED])
    lines.extend(_more(len(models)))
    return lines


def _people(owners: tuple[Owner, ...]) -> str:
    return ", ".join(o.email or o.urn for o in owners)


def _label(version: str | None, urn: str) -> str:
    return f"v{version}" if version else urn


def _item(value: Any) -> str:
    if isinstance(value, list):
        return "/".join("-" if x is None else str(x) for x in value)
    return "-" if value is None else str(value)


def _more(count: int) -> list[str]:
    return [f"- … and {count - _MAX_LISTED} more"] if count > _MAX_LISTED else []
