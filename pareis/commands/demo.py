"""``pareis demo``: the recorded timeline through every role's real handlers on embedded backends (no servers).

Each step of the timeline is replayed as GMS would log it into the in-process broker, then the lineage,
assertions, incidents and effects roles run over in-memory stores, DataHub writer and ticket tools until no input
is left. The lifecycle is printed as it unfolds, then the protect table (reliability scores and ranked test gaps)
and the churn model's evidence pack; the outputs land in a folder (see :mod:`pareis.demo.outputs`).

Exit codes: 0 after the run (``--serve``: then serving until interrupted, 130); 2 an unreadable timeline file or an
``--out`` folder that cannot be written.
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
from rich.text import Text

from pareis.commands.common import plain, shown
from pareis.core.impact import ratio_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pareis.core.intents import IncidentFacts
    from pareis.demo.gates import StepGate
    from pareis.demo.session import DemoSession, Step, StepOutcome

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).

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
    from pareis.config import ROLE_NAMES, load_settings
    from pareis.demo.gates import gates_after, write_gates
    from pareis.demo.outputs import write_outputs
    from pareis.demo.session import DemoSession, steps_of
    from pareis.lineage_loader import check

    started = time.monotonic()
    console = Console()
    files = timeline or default_timeline()
    steps = steps_of(files)
    # The files are input, not a stream: read whole as the roles will read them, and refused (exit 2, naming the file
    # and record) before anything runs, as every command refuses them; dead letters are the running service's.
    check([proposal for step in steps for proposal in step.proposals])
    try:  # before the run, so that a bad --out fails at once and not after the whole scenario
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, f"--out {out}: cannot create the folder: {exc.strerror}") from exc
    console.rule("[bold]Pareis demo")
    console.print(
        Text("timeline: ") + shown(", ".join(str(f.relative_to(ROOT) if f.is_relative_to(ROOT) else f) for f in files))
    )
    console.print(f"{len(steps)} steps · roles: {' → '.join(ROLE_NAMES)} (in-memory backends)")
    session = DemoSession(load_settings())
    definitions = Counter(str(m.aspectName) for m in session.writer.proposals)
    console.print(
        Text("start-up definitions written: ") + shown(", ".join(f"{n} {a}" for a, n in sorted(definitions.items())))
    )
    outcomes = []
    gates: list[StepGate] = []
    for step in steps:
        outcome = session.run(step)
        outcomes.append(outcome)
        _print_step(console, outcome)
        for gate in gates_after(session, outcome):
            gates.append(gate)
            _print_gate(console, gate)
    _print_now(console, session)
    proved = _protect_and_prove(console, session, steps, out)
    written = write_outputs(session, outcomes, out) + write_gates(gates, out) + proved
    console.rule("[bold]Outputs")
    for path in written:
        console.print(Text("  ") + shown(path))
    dead = session.broker.size(session.settings.kafka.topics.dlq)
    console.print(f"dead letters: {dead} · {time.monotonic() - started:.1f} s")
    if serve:
        from pareis.compose.heap import settle
        from pareis.web.server import run_app

        # Answers are evaluated at the timeline's last simulated moment, not the wall clock: the demo's "now".
        final_ms = max((step.at_ms for step in steps), default=0)
        settle()  # the final state is built: out of the collector's way (pareis.compose.heap)
        run_app(session.sources, port=port, clock=lambda: final_ms, announce=console.print)


def _print_now(console: Console, session: DemoSession) -> None:
    """After the timeline: what to do now about every incident (``pareis incidents --all``), over every incident
    that reached each group and the versions that exist now (after the clean retrain: nothing to switch)."""
    from pareis.answers.listing import IncidentFilter, listed
    from pareis.commands.decision import print_decisions

    console.rule("[bold]What to do now (pareis incidents --all)")
    for row in listed(session.sources, IncidentFilter()):
        console.print(Text.assemble(f"{row.state} ", shown(_short(row.dataset))))
        print_decisions(console, row.decisions, indent="  ")


def _protect_and_prove(console: Console, session: DemoSession, steps: Sequence[Step], out: Path) -> list[Path]:
    """After the timeline: the protect table of every model (DESIGN §2.5) at the last step's latest time, and the
    evidence pack of the churn model group (else the first group) written to ``out`` and published as a Document
    to the session's DataHub writer."""
    from pareis.answers.evidence import evidence_pack
    from pareis.answers.evidence_render import markdown
    from pareis.answers.reliability import protect
    from pareis.commands.evidence import write_pack
    from pareis.commands.protect import print_protect
    from pareis.datahub.writes.evidence_doc import document_mcp
    from pareis.demo.outputs import when

    if not steps:
        return []
    at = max((int((p.system_metadata or {}).get("lastObserved") or 0) for p in steps[-1].proposals), default=0)
    at = max(at, steps[-1].at_ms)
    console.rule(f"[bold]Protect: reliability and test gaps at {when(at)}")
    print_protect(console, protect(session.sources, at_ms=at))
    groups = session.sources.lineage.entities("mlModelGroupProperties")
    if not groups:
        return []
    group = next((g for g in groups if ",churn," in g), groups[0])
    pack = evidence_pack(session.sources, group, at)
    data = pack.to_json()
    session.writer.write([document_mcp(data, markdown(data), session.settings.datahub)])
    console.print(
        Text.assemble(
            "evidence pack (EU AI Act Art. 10) of ",
            shown(_short(group)),
            ": ",
            shown(f"{pack.file_stem}.{{md,html,json}}"),
        )
    )
    return write_pack(pack, out)


def _print_step(console: Console, outcome: StepOutcome) -> None:
    counts = ", ".join(f"{n} {t.split('_')[1].lower()}" for t, n in sorted(outcome.published.items())) or "nothing"
    console.print(Text.assemble(("▸ ", "bold"), (plain(outcome.step.name), "bold"), f"  change log: {counts}"))
    for dataset, old, new, facts in outcome.transitions:
        console.print(Text.assemble("  incident on ", shown(_short(dataset)), f": {old.value} → ", (new.value, "bold")))
        if facts is not None:
            _print_facts(console, facts, show_blast=new.value != "RESOLVED")
    if outcome.writes:
        aspects = Counter(str(m.aspectName) for m in outcome.writes)
        console.print(Text("  DataHub writes: ") + shown(", ".join(f"{n} {a}" for a, n in sorted(aspects.items()))))
    for event in outcome.tickets:
        console.print(shown(f"  {event.tool}: ticket {event.ticket} {event.action}"))


def _print_facts(console: Console, facts: IncidentFacts, *, show_blast: bool) -> None:
    """The decision first (the brief every ticket leads with), then the evidence."""
    from pareis.commands.decision import print_lead
    from pareis.demo.outputs import when

    print_lead(console, facts, indent="  ")
    w = facts.window
    sev = facts.severity.value
    console.print(
        Panel.fit(
            Text.assemble(
                shown(facts.urn),
                "\nseverity ",
                (sev, STYLE.get(sev, "")),
                f" (DataHub priority {facts.priority}) · failed rows {w.failed_rows} · assertions {len(w.assertions)}\n"
                f"blind window: last success {when(w.last_success_ms)} → first failure {when(w.first_failure_ms)}"
                f" · healed {when(w.healed_ms)}",
            ),
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
            shown(_short(m.urn)),
            shown(f"{len(m.poisoned_features)}/{m.total_features} {features}"),
            ratio_text(m.ratio),
            Text(m.severity.value, style=style),
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
                shown(_short(group.group)),
                shown(_short(v.version.urn)),
                when(v.version.trained_at_ms),
                Text(v.verdict.value, style=STYLE.get(v.verdict.value, "")),
                Text(gate, style="bold red" if gate == "BLOCKED" else "green"),
            )
    console.print(versions)
    for group in facts.contamination:
        rollback = group.safe_rollback
        target = shown(_short(rollback.urn)) if rollback else Text("none")
        console.print(Text("  safe rollback for ") + shown(_short(group.group)) + Text(": ") + target)


def _print_gate(console: Console, gate: StepGate) -> None:
    """``pareis gate`` of one group: the checks that did not pass, then the decision."""
    answer = gate.answer
    decision = answer.decision
    style = "bold green" if decision == "GO" else "bold red"
    console.print(
        Text.assemble(
            "  retrain gate for ",
            shown(_short(gate.group)),
            " (evaluates ",
            shown(_short(answer.evaluated)),
            "): ",
            (decision, style),
        ),
        highlight=False,
    )
    for check in answer.result.checks:
        if check.status.value == "PASS":
            continue
        colour = "bold red" if check.status.value == "FAIL" else "yellow"
        reason = check.reason
        for urn in check.evidence:
            reason = reason.replace(urn, _short(urn))
        console.print(
            Text.assemble("    ", (check.status.value, colour), f" {check.id}: ", shown(reason)), highlight=False
        )
