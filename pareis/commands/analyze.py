"""``pareis analyze``: the incident analysis of a dataset or assertion, or a model's verdicts (DESIGN §2.2, §2.3).

The answer is :func:`pareis.answers.incidents.analysis` (found and analysed exactly as the incidents role does), or
with ``--model`` :func:`pareis.answers.verdicts.model_verdicts` (the MCP tool ``get_model_verdicts``' and Mission
Control's Models page's answer); ``--json`` prints its contract. ``--at`` answers as of a time (runs after it
unseen, versions trained after it not yet there); default: everything known. Exit 2 with a one-line reason when
the assertion (or no assertion of the dataset) never failed, the model is unknown or the source can't be read; exit 1
when Redis or GMS is down.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pareis.answers.sources import CannotEvaluate
from pareis.commands.blast import print_blast
from pareis.commands.common import (
    DatahubOption,
    JsonOption,
    MetadataOption,
    RedisOption,
    TokenOption,
    dump,
    evaluating,
    lines,
    opened,
    shown,
)
from pareis.commands.decision import print_decisions, print_lead
from pareis.commands.times import AtOption

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).


def analyze(
    assertion: Annotated[str | None, typer.Option("--assertion", help="URN of an assertion that failed")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="URN of a dataset whose assertions failed")] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="URN of a model version or group: its verdicts in every incident that reached it"),
    ] = None,
    at: AtOption = None,
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    datahub_url: DatahubOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """What to do about a dataset's latest incident (per model group: roll back, promote, retrain or nothing), then
    its analysis (blast radius, blind window, contaminated versions, safe rollbacks); or a model's verdicts across
    every incident."""
    from pareis.answers.incidents import analysis
    from pareis.answers.times import at_ms
    from pareis.answers.verdicts import model_verdicts

    with evaluating("analyze"):
        if [assertion, dataset, model].count(None) != 2:
            raise CannotEvaluate("give --assertion, --dataset or --model (one of them)")
        when = None if at is None else at_ms(at)
        with opened(metadata, redis_url, datahub_url, token) as sources:
            if model is not None:
                verdicts = model_verdicts(sources, model, at_ms=when)
                answer = verdicts.to_json()
            else:
                found = analysis(sources, assertion=assertion, dataset=dataset, at_ms=when)
                answer = found.to_json()
    if as_json:
        print(dump(answer))
        return
    console = Console()
    if model is not None:
        print_decisions(console, [verdicts.decision])
        _print_verdicts(console, answer)
        return
    print_lead(console, found.facts)
    incident, window = answer["incident"], answer["window"]
    head = Table(title=Text("Incident ") + shown(incident["urn"]), show_header=False, title_justify="left")
    head.add_column("what", style="bold")
    head.add_column("value", overflow="fold")
    head.add_row("dataset", shown(incident["dataset"]))
    head.add_row("state", incident["state"])
    head.add_row("assertions", lines(incident["assertions"]))
    head.add_row("last success", _when(window["last_success_ms"]))
    head.add_row("first failure", _when(window["first_failure_ms"]))
    head.add_row("healed", _when(window["healed_ms"]))
    head.add_row("tickets", lines([ticket_text(t) for t in answer["tickets"]]))
    console.print(head)
    print_blast(console, ", ".join(incident["assertions"]), answer["blast"])
    versions = Table(title="Contamination", title_justify="left")
    for name in ("group", "version", "trained at", "verdict", "safe rollback"):
        versions.add_column(name, overflow="fold")
    for group in answer["contamination"]:
        rollback = group["safe_rollback"]
        for v in group["versions"]:
            is_rollback = rollback is not None and rollback["urn"] == v["urn"]
            label = v["version"] or v["urn"]
            versions.add_row(
                shown(group["group"]), shown(label), _when(v["trained_at_ms"]), v["verdict"], "◀" if is_rollback else ""
            )
    console.print(versions)


def ticket_text(link: dict[str, Any]) -> str:
    """``jira OPS-7 https://…``: the tool, what a person reads, and the link when the tool gave one."""
    return " ".join(part for part in (link["tool"], link["label"], link["url"]) if part)


def _print_verdicts(console: Console, answer: dict[str, Any]) -> None:
    rollback = answer["safe_rollback"]
    versions = Table(title=Text("Verdicts of ") + shown(answer["model"]), title_justify="left")
    for name in ("version", "trained at", "verdict", "contaminated by", "safe rollback"):
        versions.add_column(name, overflow="fold")
    for v in answer["versions"]:
        is_rollback = rollback is not None and rollback["urn"] == v["urn"]
        versions.add_row(
            shown(v["version"] or v["urn"]),
            _when(v["trained_at_ms"]),
            v["verdict"],
            lines(v["contaminated_by"]),
            "◀" if is_rollback else "",
        )
    console.print(versions)
    incidents = Table(title="Incidents that reached it", title_justify="left")
    for name in ("incident", "dataset", "state", "last success", "first failure", "healed"):
        incidents.add_column(name, overflow="fold")
    for i in answer["incidents"]:
        w = i["window"]
        incidents.add_row(
            shown(i["urn"]),
            shown(i["dataset"]),
            i["state"],
            _when(w["last_success_ms"]),
            _when(w["first_failure_ms"]),
            _when(w["healed_ms"]),
        )
    console.print(incidents if answer["incidents"] else Text("no incident reached it"))


def _when(ms: int | None) -> str:
    if ms is None:
        return "—"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
