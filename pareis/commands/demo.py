"""``pareis demo``: the recorded timeline through every role's real handlers on embedded backends (no servers).

Each step of the timeline is replayed as GMS would log it into the in-process broker, then the lineage,
assertions, incidents and effects roles run over in-memory stores, DataHub writer and ticket tools until no input
is left. The lifecycle is printed as it unfolds and the outputs land in a folder (see :mod:`pareis.demo.outputs`).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

if TYPE_CHECKING:
    from pareis.core.intents import IncidentFacts
    from pareis.demo.session import StepOutcome

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "deploy" / "demo" / "recorded"
SAMPLE = ROOT / "deploy" / "demo" / "sample" / "timeline.json"
STYLE = {"HIGH": "bold red", "MEDIUM": "yellow", "LOW": "cyan", "CONTAMINATED": "bold red", "CLEAN": "green"}


def default_timeline() -> list[Path]:
    """The recorded scenario (deploy/demo/recorded/NN-*.json) when present, else the bundled sample."""
    recorded = sorted(RECORDED.glob("[0-9][0-9]-*.json"))
    return recorded or [SAMPLE]


def _short(urn: str) -> str:
    """The readable tail of a URN: the name inside ``(platform,name,ENV)`` or after the last colon."""
    if urn.endswith(")") and "," in urn:
        inner = urn[urn.index("(") + 1 : -1]
        parts = inner.split(",")
        return parts[-1] if urn.startswith("urn:li:schemaField") or urn.startswith("urn:li:mlFeature") else parts[1]
    return urn.rsplit(":", 1)[-1]


def demo(
    timeline: Annotated[
        list[Path] | None,
        typer.Option("--timeline", help="DataHub file-format files, one step each (default: the recorded demo)"),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="folder for the outputs")] = Path("pareis-demo-output"),
    serve: Annotated[
        bool, typer.Option("--serve", help="then serve Mission Control on the final in-memory state until Ctrl-C")
    ] = False,
    port: Annotated[int, typer.Option("--port", help="Mission Control's port (with --serve)")] = 9420,
) -> None:
    """Replay a recorded timeline through every role on embedded backends and show the incident lifecycle."""
    from pareis.config import load_settings
    from pareis.demo.outputs import write_outputs
    from pareis.demo.session import DemoSession, steps_of

    started = time.monotonic()
    console = Console()
    files = timeline or default_timeline()
    steps = steps_of(files)
    console.rule("[bold]Pareis demo")
    console.print(f"timeline: {', '.join(str(f.relative_to(ROOT) if f.is_relative_to(ROOT) else f) for f in files)}")
    console.print(f"{len(steps)} steps · roles: lineage → assertions → incidents → effects (in-memory backends)")
    session = DemoSession(load_settings())
    definitions = Counter(str(m.aspectName) for m in session.writer.proposals)
    console.print(f"start-up definitions written: {', '.join(f'{n} {a}' for a, n in sorted(definitions.items()))}")
    outcomes = []
    for step in steps:
        outcome = session.run(step)
        outcomes.append(outcome)
        _print_step(console, outcome)
    written = write_outputs(session, outcomes, out)
    console.rule("[bold]Outputs")
    for path in written:
        console.print(f"  {path}")
    dead = session.broker.size(session.settings.kafka.topics.dlq)
    console.print(f"dead letters: {dead} · {time.monotonic() - started:.1f} s")
    if serve:
        from pareis.web.server import run_app

        # Answers are evaluated at the timeline's last simulated moment, not the wall clock: the demo's "now".
        final_ms = max((step.at_ms for step in steps), default=0)
        run_app(session.sources, port=port, clock=lambda: final_ms, announce=console.print)


def _print_step(console: Console, outcome: StepOutcome) -> None:
    counts = ", ".join(f"{n} {t.split('_')[1].lower()}" for t, n in sorted(outcome.published.items())) or "nothing"
    console.print(f"[bold]▸ {outcome.step.name}[/]  change log: {counts}")
    for dataset, old, new, facts in outcome.transitions:
        console.print(f"  incident on {_short(dataset)}: {old.value} → [bold]{new.value}[/]")
        if facts is not None:
            _print_facts(console, facts, show_blast=new.value != "RESOLVED")
    if outcome.writes:
        aspects = Counter(str(m.aspectName) for m in outcome.writes)
        console.print("  DataHub writes: " + ", ".join(f"{n} {a}" for a, n in sorted(aspects.items())))
    for event in outcome.tickets:
        console.print(f"  {event.tool}: ticket {event.ticket} {event.action}")


def _print_facts(console: Console, facts: IncidentFacts, *, show_blast: bool) -> None:
    from pareis.demo.outputs import when

    w = facts.window
    sev = facts.severity.value
    console.print(
        Panel.fit(
            f"{facts.urn}\nseverity [{STYLE.get(sev, '')}]{sev}[/] (DataHub priority {facts.priority}) · "
            f"failed rows {w.failed_rows} · assertions {len(w.assertions)}\n"
            f"blind window: last success {when(w.last_success_ms)} → first failure {when(w.first_failure_ms)}"
            f" · healed {when(w.healed_ms)}",
            title="incident",
        )
    )
    if show_blast:
        _print_blast(console, facts)
    _print_versions(console, facts)


def _print_blast(console: Console, facts: IncidentFacts) -> None:
    blast = Table(title="blast radius per model", title_justify="left")
    for column in ("model", "poisoned features", "ratio", "severity", "precision"):
        blast.add_column(column)
    for m in facts.blast.models:
        features = ", ".join(_short(f) for f in m.poisoned_features)
        style = STYLE.get(m.severity.value, "")
        blast.add_row(
            _short(m.urn),
            f"{len(m.poisoned_features)}/{m.total_features} {features}",
            f"{m.ratio:.2f}",
            f"[{style}]{m.severity.value}[/]",
            m.precision,
        )
    console.print(blast)


def _print_versions(console: Console, facts: IncidentFacts) -> None:
    from pareis.demo.outputs import when

    retrain = dict(facts.retrain)
    versions = Table(title="versions, verdicts and the retrain gate", title_justify="left")
    for column in ("group", "version", "trained", "verdict", "retrain"):
        versions.add_column(column)
    for group in facts.contamination:
        for v in group.versions:
            status = retrain.get(v.version.urn)
            gate = status.value if status else "—"
            versions.add_row(
                _short(group.group),
                _short(v.version.urn),
                when(v.version.trained_at_ms),
                f"[{STYLE.get(v.verdict.value, '')}]{v.verdict.value}[/]",
                f"[{'bold red' if gate == 'BLOCKED' else 'green'}]{gate}[/]",
            )
    console.print(versions)
    for group in facts.contamination:
        rollback = group.safe_rollback
        console.print(f"  safe rollback for {_short(group.group)}: {_short(rollback.urn) if rollback else 'none'}")
