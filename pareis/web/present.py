"""How answers look on a page: short names, times, durations and the timeline's geometry. Presentation only — every
fact shown comes from an answer unchanged."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

from markupsafe import Markup, escape

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pareis.answers.tickets import TicketLink
    from pareis.core.intents import IncidentFacts


def short(urn: str | None) -> str:
    """The readable tail of a URN: the name inside ``(platform,name,ENV)``, a feature's name, else after the last
    colon."""
    if not urn:
        return "—"
    if urn.endswith(")") and "," in urn:
        inner = urn[urn.index("(") + 1 : -1]
        parts = inner.split(",")
        if urn.startswith(("urn:li:schemaField", "urn:li:mlFeature")):
            return parts[-1]
        return parts[1] if len(parts) > 2 else parts[-1]
    return urn.rsplit(":", 1)[-1]


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
