"""What a demo session leaves behind in its output folder.

* ``datahub-writes.json`` — every proposal Pareis wrote to DataHub, in DataHub's file format (ingestible with
  ``datahub ingest mcps``);
* ``tickets.jsonl`` — one line per ticket per tool: title, body, comments, closed;
* ``postmortem-<incident>.md`` — each postmortem Document's Markdown, as published to DataHub;
* ``evidence-<model>.{md,html,json}`` — the Article 10 evidence pack of the churn model group (written by
  ``pareis demo`` after the timeline, and published to DataHub as a Document);
* ``report.html`` — one self-contained page: timeline, blast radius per model, window, verdicts, rollbacks,
  retrain gate, tickets.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from datahub.ingestion.sink.file import write_metadata_file

from pareis.core.impact import ratio_text
from pareis.core.intents import IncidentFacts
from pareis.demo.session import DemoSession, StepOutcome


def when(ms: int | None) -> str:
    """UTC time of epoch ``ms`` to the minute, or ``—``."""
    if ms is None:
        return "—"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M")


def aspect_json(mcp: Any) -> Any:
    """A proposal's aspect as JSON, whether it is a wrapper with a typed aspect or a raw (patch) proposal."""
    return orjson.loads(mcp.to_obj()["aspect"]["value"])


def write_outputs(session: DemoSession, outcomes: Sequence[StepOutcome], folder: Path) -> list[Path]:
    """Write every output of the session into ``folder`` (created); return the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    writes = folder / "datahub-writes.json"
    write_metadata_file(writes, session.writer.proposals)
    written.append(writes)

    tickets = folder / "tickets.jsonl"
    with tickets.open("w") as out:
        for ticketer in session.ticketers:
            for ticket in ticketer.tickets:
                line = {
                    "tool": ticketer.tool,
                    "id": ticket.ref.id,
                    "incident": ticket.incident.incident_urn,
                    "title": ticket.incident.title,
                    "severity": ticket.incident.severity.value,
                    "body": ticket.incident.body,
                    "comments": ticket.comments,
                    "closed": ticket.closed,
                }
                out.write(json.dumps(line, sort_keys=True) + "\n")
    written.append(tickets)

    for mcp in session.writer.proposals:
        if mcp.aspectName == "documentInfo" and "pareis-evidence-" not in str(mcp.entityUrn):
            document = aspect_json(mcp)
            name = str(mcp.entityUrn).rsplit(":", 1)[-1].removesuffix("-postmortem")
            path = folder / f"postmortem-{name}.md"
            path.write_text(document["contents"]["text"].rstrip("\n") + "\n")
            written.append(path)

    report = folder / "report.html"
    report.write_text(render_html(session, outcomes))
    written.append(report)
    return written


def render_html(session: DemoSession, outcomes: Sequence[StepOutcome]) -> str:
    """The report page: plain HTML and inline CSS, no scripts, no external resources."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Pareis demo report</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:72em}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}th{background:#f3f3f3}"
        ".CONTAMINATED,.HIGH,.BLOCKED{color:#b00020;font-weight:600}.MEDIUM{color:#c77700}.CLEAN,.OK{color:#11700f}"
        "</style></head><body><h1>Pareis demo report</h1>",
        "<h2>Timeline</h2><table><tr><th>step</th><th>change log</th><th>DataHub writes</th><th>tickets</th>"
        "<th>incidents</th></tr>",
    ]
    for o in outcomes:
        logged = ", ".join(f"{n} {t.split('_')[1].lower()}" for t, n in sorted(o.published.items())) or "—"
        tickets = ", ".join(f"{t.tool} {t.action}" for t in o.tickets) or "—"
        incidents = ", ".join(f"{d}: {a.value} → {b.value}" for d, a, b, _ in o.transitions) or "—"
        parts.append(
            f"<tr><td>{e(o.step.name)}</td><td>{e(logged)}</td><td>{len(o.writes)}</td>"
            f"<td>{e(tickets)}</td><td>{e(incidents)}</td></tr>"
        )
    parts.append("</table>")
    seen: set[str] = set()
    for o in outcomes:
        for _, _, _, facts in o.transitions:
            if facts is not None and facts.urn not in seen:
                seen.add(facts.urn)
                parts.append(_incident_html(session.facts(facts.dataset) or facts))
    parts.append("</body></html>\n")
    return "".join(parts)


def _incident_html(facts: IncidentFacts) -> str:
    e = html.escape
    w = facts.window
    state = "ACTIVE" if w.is_open else "RESOLVED"
    out = [
        f"<h2>Incident {e(facts.urn)}</h2><p>Dataset {e(facts.dataset)} — {state}, severity "
        f"<span class='{facts.severity.value}'>{facts.severity.value}</span>, failed rows {w.failed_rows}</p>",
        f"<p>Blind window: last success {when(w.last_success_ms)}, first failure {when(w.first_failure_ms)}, "
        f"healed {when(w.healed_ms)}</p>",
        "<h3>Blast radius</h3><table><tr><th>model</th><th>group</th><th>poisoned features</th><th>ratio</th>"
        "<th>severity</th><th>precision</th></tr>",
    ]
    for m in facts.blast.models:
        out.append(
            f"<tr><td>{e(m.urn)}</td><td>{e(m.group or '—')}</td><td>{len(m.poisoned_features)}/{m.total_features}: "
            f"{e(', '.join(f.rsplit(',', 1)[-1].rstrip(')') for f in m.poisoned_features))}</td>"
            f"<td>{ratio_text(m.ratio)}</td><td class='{m.severity.value}'>{m.severity.value}</td>"
            f"<td>{m.precision}</td></tr>"
        )
    out.append(
        "</table><h3>Model versions</h3><table><tr><th>group</th><th>version</th><th>trained</th>"
        "<th>verdict</th><th>retrain</th></tr>"
    )
    retrain = dict(facts.retrain)
    for group in facts.contamination:
        for v in group.versions:
            status = retrain.get(v.version.urn)
            out.append(
                f"<tr><td>{e(group.group)}</td><td>{e(v.version.urn)}</td><td>{when(v.version.trained_at_ms)}</td>"
                f"<td class='{v.verdict.value}'>{v.verdict.value}</td>"
                f"<td class='{status.value if status else ''}'>{status.value if status else '—'}</td></tr>"
            )
    out.append("</table><h3>Safe rollback</h3><ul>")
    for group in facts.contamination:
        rollback = group.safe_rollback
        out.append(f"<li>{e(group.group)}: {e(rollback.urn) if rollback else 'none'}</li>")
    out.append("</ul>")
    return "".join(out)
