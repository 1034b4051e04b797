"""``pareis gate``: may this model be retrained (or this version promoted) now? (DESIGN §2.4)

Reads ``--metadata FILE…``, ``--redis URL`` or ``--datahub URL`` and answers with the ten checks of
:mod:`pareis.core.gate` through :func:`pareis.answers.gate.gate`. Output formats:

* ``text`` (default): a table of check, status, reason and evidence, then the decision in one line;
* ``json`` (or ``--json``): exactly one object, :meth:`~pareis.answers.gate.GateAnswer.to_json` (its JSON Schema is
  ``schemas/pareis/gate.schema.json``); when the gate cannot answer, ``{"model", "decision": "CANNOT_EVALUATE",
  "exit_code": 2, "reason"}``;
* ``github``: one ``::error`` / ``::warning`` workflow annotation per failing / warning check, then the decision.

``--summary FILE`` also appends a Markdown table to FILE (for ``$GITHUB_STEP_SUMMARY``).

Exit codes: 0 GO, 1 NO-GO, 2 cannot evaluate — an unknown model, a model with no features and no training runs,
unreadable input, and, unlike the other commands, a dependency that is down (a pipeline must not train when the
gate cannot answer). The reason is one line on stderr.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pareis.answers import times
from pareis.answers.render import dump
from pareis.answers.sources import CannotEvaluate, SourceUnavailable
from pareis.commands.common import (
    EXIT_CANNOT_EVALUATE,
    DatahubOption,
    JsonOption,
    MetadataOption,
    RedisOption,
    TokenOption,
    fail,
    lines,
    opened,
    shown,
)
from pareis.errors import Fatal, PareisError, Retriable

if TYPE_CHECKING:
    from pareis.answers.gate import GateAnswer

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).

STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red", "GO": "bold green", "NO-GO": "bold red"}


class Format(StrEnum):
    text = "text"
    json = "json"
    github = "github"


def parse_at(value: str | None, now_ms: int | None = None) -> int:
    """``--at`` (:func:`pareis.answers.times.at_ms`); default ``now_ms``, else now."""
    return times.at_ms(value, now_ms)


@contextmanager
def _answering(model: str, fmt: Format, summary: Path | None) -> Iterator[None]:
    """Every reason the gate can't answer → exit 2, one line on stderr (and the JSON object with ``json``)."""
    from pareis.answers.gate import cannot_evaluate_json

    try:
        yield
    except (SourceUnavailable, Retriable, Fatal) as exc:
        reason = f"{_one_line(exc)} — the gate cannot answer, so do not train"
        _cannot(model, fmt, summary, reason, cannot_evaluate_json(model, reason))
        raise fail("gate", reason, EXIT_CANNOT_EVALUATE) from exc
    except (CannotEvaluate, PareisError, ValueError, OSError) as exc:
        reason = _one_line(exc)
        _cannot(model, fmt, summary, reason, cannot_evaluate_json(model, reason))
        raise fail("gate", reason, EXIT_CANNOT_EVALUATE) from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _cannot(model: str, fmt: Format, summary: Path | None, reason: str, obj: dict[str, object]) -> None:
    if fmt is Format.json:
        print(dump(obj))
    elif fmt is Format.github:
        print(f"::error title=retrain gate::{_escape(f'cannot evaluate {model}: {reason}')}")
    if summary is not None:
        with summary.open("a", encoding="utf-8") as out:
            out.write(f"### Retrain gate: CANNOT EVALUATE — `{model}`\n\n{_cell(reason)}\n\n")


def gate(
    model: Annotated[str, typer.Option("--model", help="an mlModel (version) or mlModelGroup URN")],
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    datahub_url: DatahubOption = None,
    token: TokenOption = None,
    at: Annotated[
        str | None, typer.Option("--at", help="evaluate at this time: ISO-8601 or epoch ms (default now)")
    ] = None,
    max_age_hours: Annotated[
        float, typer.Option("--max-age-hours", help="an upstream assertion's latest run must be this recent")
    ] = 24,
    min_score: Annotated[
        float, typer.Option("--min-score", help="the lowest reliability score an upstream dataset may have")
    ] = 60,
    strict: Annotated[bool, typer.Option("--strict", help="turn every WARN into FAIL")] = False,
    override_reason: Annotated[
        str | None, typer.Option("--override-reason", help="turn NO-GO into GO, recorded in the answer")
    ] = None,
    as_json: JsonOption = False,
    fmt: Annotated[Format, typer.Option("--format", help="text, json or github (workflow annotations)")] = Format.text,
    summary: Annotated[
        Path | None, typer.Option("--summary", help="append a Markdown table to this file ($GITHUB_STEP_SUMMARY)")
    ] = None,
) -> None:
    """The retrain gate: ten checks on what the model reads; exit 0 GO, 1 NO-GO, 2 cannot evaluate."""
    from pareis.answers.gate import gate as answer_gate

    fmt = Format.json if as_json else fmt
    with _answering(model, fmt, summary):
        at_ms = parse_at(at)
        with opened(metadata, redis_url, datahub_url, token) as sources:
            answer = answer_gate(
                sources,
                model=model,
                at_ms=at_ms,
                max_age_hours=max_age_hours,
                min_score=min_score,
                strict=strict,
                override_reason=override_reason,
            )
    if fmt is Format.json:
        print(dump(answer.to_json()))
    elif fmt is Format.github:
        print_github(answer)
    else:
        print_text(Console(), answer)
    if summary is not None:
        with summary.open("a", encoding="utf-8") as out:
            out.write(markdown(answer))
    raise typer.Exit(answer.exit_code)


def _when(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def decision_line(answer: GateAnswer) -> str:
    """The decision in one line (plain text)."""
    failing = [c.id for c in answer.result.failing]
    line = f"{answer.decision}: {answer.model}"
    if answer.evaluated != answer.model:
        line += f" (evaluated {answer.evaluated})"
    line += f" at {_when(answer.evaluated_at_ms)}"
    if failing:
        line += f"; failing: {', '.join(failing)}"
    if answer.result.override_reason is not None:
        line += f"; OVERRIDDEN: {answer.result.override_reason}"
    return line


def print_text(console: Console, answer: GateAnswer) -> None:
    """The rich table and the decision line."""
    table = Table(title=Text("Retrain gate · ") + shown(answer.evaluated), title_justify="left")
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("reason", overflow="fold", ratio=1)
    table.add_column("evidence", overflow="fold", ratio=1)
    for c in answer.result.checks:  # data is shown verbatim: a ``[`` in a URN or reason is never markup
        status = Text(c.status.value, style=STYLE[c.status.value])
        table.add_row(shown(c.id), status, shown(c.reason), lines(c.evidence) if c.evidence else Text(""))
    console.print(table)
    line = shown(decision_line(answer))
    line.stylize(STYLE[answer.decision])
    console.print(line, highlight=False, soft_wrap=True)


def _escape(text: str, *, prop: bool = False) -> str:
    """GitHub's workflow-command escaping (``%``, CR, LF; in properties also ``:`` and ``,``)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def print_github(answer: GateAnswer) -> None:
    """One annotation per failing (``::error``) or warning (``::warning``) check, then the decision."""
    for c in answer.result.checks:
        if c.status.value == "PASS":
            continue
        level = "error" if c.status.value == "FAIL" else "warning"
        evidence = f" ({', '.join(c.evidence)})" if c.evidence else ""
        print(f"::{level} title={_escape(f'retrain gate {c.id}', prop=True)}::{_escape(c.reason + evidence)}")
    level = "notice" if answer.decision == "GO" else "error"
    print(f"::{level} title=retrain gate::{_escape(decision_line(answer))}")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(answer: GateAnswer) -> str:
    """The Markdown summary: a heading with the decision, the table of checks, the override if any."""
    lines = [
        f"### Retrain gate: {answer.decision} — `{answer.model}`",
        "",
        f"Evaluated `{answer.evaluated}` at {_when(answer.evaluated_at_ms)}.",
        "",
        "| check | status | reason | evidence |",
        "|---|---|---|---|",
    ]
    for c in answer.result.checks:
        evidence = "<br>".join(f"`{_cell(e)}`" for e in c.evidence)
        lines.append(f"| `{c.id}` | {c.status.value} | {_cell(c.reason)} | {evidence} |")
    if answer.result.override_reason is not None:
        lines += ["", f"**Overridden** (NO-GO turned into GO): {_cell(answer.result.override_reason)}"]
    rollback = answer.result.safe_rollback
    if rollback is not None:
        lines += ["", f"Safe rollback: `{rollback.urn}` (version {rollback.version or '—'})."]
    return "\n".join(lines) + "\n\n"
