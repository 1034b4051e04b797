"""Markdown and HTML renderings of an evidence pack's JSON (:meth:`pareis.answers.evidence.EvidencePack.to_json`).

The JSON is the source: both renderings read only it, so they say nothing the JSON does not. Facts render
generically — a list of objects as a table, a list of strings as a bullet list, a multi-line string as a code
block, an object as a nested list. The HTML is one self-contained page (inline CSS, no script, no external
resource) laid out for printing.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

STATUS_LABEL = {"assessed": "assessed", "partial": "partly assessed", "not_assessed": "not assessed by Pareis"}


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value) if value else "—"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def _keys(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    keys: list[str] = []
    for row in rows:
        keys.extend(k for k in row if k not in keys)
    return keys


def _is_table(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


# ---------------------------------------------------------------------------------------------------- Markdown


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_value(name: str, value: Any, depth: int) -> list[str]:
    label = name.replace("_", " ")
    if _is_table(value):
        keys = _keys(value)
        out = [f"**{label}**", "", "| " + " | ".join(k.replace("_", " ") for k in keys) + " |"]
        out.append("|" + "---|" * len(keys))
        out += ["| " + " | ".join(_md_escape(_cell(row.get(k))) for k in keys) + " |" for row in value]
        return [*out, ""]
    if isinstance(value, list):
        if not value:
            return [f"**{label}**: none", ""]
        return [f"**{label}**", "", *[f"- `{_cell(v)}`" for v in value], ""]
    if isinstance(value, dict):
        out = [f"**{label}**", ""]
        for k, v in value.items():
            out += ["  " * depth + line for line in _md_value(k, v, depth + 1)]
        return out
    if isinstance(value, str) and "\n" in value:
        return [f"**{label}**", "", "```yaml", value.rstrip("\n"), "```", ""]
    return [f"**{label}**: {_cell(value)}", ""]


def _as_of(header: Mapping[str, Any]) -> str:
    """One line for ``time_travel``: what the pack read as of its time, and what as the index holds it today."""
    read = header["time_travel"]
    then = ", ".join(k.replace("_", " ") for k, v in read.items() if v)
    now = ", ".join(k.replace("_", " ") for k, v in read.items() if not v)
    return f"{then} as of {header['generated_at']}; {now} as the index holds them today"


def markdown(pack: Mapping[str, Any]) -> str:
    """The pack as Markdown."""
    h = pack["header"]
    lines = [
        f"# Evidence pack — {h['article']}",
        "",
        f"- **Model**: `{h['model']}`",
        f"- **Versions**: {', '.join(f'`{v}`' for v in h['versions']) or '—'}",
        f"- **Generated**: {h['generated_at']} (from {h['generated_from']})",
        f"- **As of**: {_as_of(h)}",
        f"- **Regulation**: {h['regulation']}",
        "- **Applicable dates**: "
        + "; ".join(f"{d['date']} for {d['applies_to']}" for d in h["applicable_dates"])
        + f". {h['amendment']}",
        "",
        f"> **{h['disclaimer']}**",
        "",
    ]
    for s in pack["sections"]:
        lines += [f"## {s['id']} — {s['title']}", "", f"*{s['requirement']}*", ""]
        lines += [f"**Status**: {STATUS_LABEL.get(s['status'], s['status'])}. {s['summary']}", ""]
        for name, value in s["facts"].items():
            lines += _md_value(name, value, 0)
        if s["missing"]:
            lines += ["**Missing from the metadata**", "", *[f"- {m}" for m in s["missing"]], ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------------------------------- HTML

_CSS = """
body { font: 11pt/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1b1b1b; max-width: 60rem;
       margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.6rem; border-bottom: 2px solid #333; padding-bottom: .3rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #bbb; page-break-after: avoid; }
.req { color: #555; font-style: italic; }
.status { display: inline-block; padding: 0 .4rem; border-radius: .2rem; font-size: .85rem; font-weight: 600; }
.assessed { background: #dff0d8; } .partial { background: #fcf8e3; } .not_assessed { background: #eee; }
.disclaimer { border: 1px solid #c00; padding: .5rem .8rem; font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: .85rem; margin: .4rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: .2rem .4rem; text-align: left; vertical-align: top;
         word-break: break-word; }
th { background: #f4f4f4; }
pre { background: #f7f7f7; padding: .5rem; overflow-x: auto; font-size: .8rem; }
code { font-size: .85em; word-break: break-all; }
section { page-break-inside: auto; }
@media print { body { margin: 0; max-width: none; } a { color: inherit; } }
"""


def _h(text: Any) -> str:
    return html.escape(_cell(text))


def _html_value(name: str, value: Any) -> str:
    label = html.escape(name.replace("_", " "))
    if _is_table(value):
        keys = _keys(value)
        head = "".join(f"<th>{html.escape(k.replace('_', ' '))}</th>" for k in keys)
        body = "".join("<tr>" + "".join(f"<td>{_h(row.get(k))}</td>" for k in keys) + "</tr>" for row in value)
        return f"<p><strong>{label}</strong></p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    if isinstance(value, list):
        if not value:
            return f"<p><strong>{label}</strong>: none</p>"
        items = "".join(f"<li><code>{_h(v)}</code></li>" for v in value)
        return f"<p><strong>{label}</strong></p><ul>{items}</ul>"
    if isinstance(value, dict):
        inner = "".join(f"<li>{_html_value(k, v)}</li>" for k, v in value.items())
        return f"<p><strong>{label}</strong></p><ul>{inner}</ul>"
    if isinstance(value, str) and "\n" in value:
        return f"<p><strong>{label}</strong></p><pre>{html.escape(value)}</pre>"
    return f"<p><strong>{label}</strong>: {_h(value)}</p>"


def to_html(pack: Mapping[str, Any]) -> str:
    """The pack as one self-contained, printable HTML page."""
    h = pack["header"]
    dates = "; ".join(f"{html.escape(d['date'])} for {html.escape(d['applies_to'])}" for d in h["applicable_dates"])
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Evidence pack — {html.escape(h['model'])}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Evidence pack — {html.escape(h['article'])}</h1>",
        "<ul>",
        f"<li><strong>Model</strong>: <code>{html.escape(h['model'])}</code></li>",
        f"<li><strong>Versions</strong>: {', '.join(f'<code>{html.escape(v)}</code>' for v in h['versions'])}</li>",
        f"<li><strong>Generated</strong>: {html.escape(h['generated_at'])} "
        f"(from {html.escape(h['generated_from'])})</li>",
        f"<li><strong>As of</strong>: {html.escape(_as_of(h))}</li>",
        f"<li><strong>Regulation</strong>: {html.escape(h['regulation'])}</li>",
        f"<li><strong>Applicable dates</strong>: {dates}. {html.escape(h['amendment'])}</li>",
        "</ul>",
        f'<p class="disclaimer">{html.escape(h["disclaimer"])}</p>',
    ]
    for s in pack["sections"]:
        status = html.escape(s["status"])
        parts += [
            f'<section id="{html.escape(s["id"])}">',
            f"<h2>{html.escape(s['id'])} — {html.escape(s['title'])}</h2>",
            f'<p class="req">{html.escape(s["requirement"])}</p>',
            f'<p><span class="status {status}">{html.escape(STATUS_LABEL.get(s["status"], s["status"]))}</span> '
            f"{html.escape(s['summary'])}</p>",
        ]
        parts += [_html_value(name, value) for name, value in s["facts"].items()]
        if s["missing"]:
            items = "".join(f"<li>{html.escape(m)}</li>" for m in s["missing"])
            parts.append(f"<p><strong>Missing from the metadata</strong></p><ul>{items}</ul>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
