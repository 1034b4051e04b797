"""``pareis analyze``: the incident analysis of a dataset or assertion (DESIGN §2.2, §2.3).

The answer is :func:`pareis.answers.incidents.analysis` (found and analysed exactly as the incidents role does);
``--json`` prints its contract. Exit 2 with a one-line reason when the assertion (or no assertion of the dataset)
never failed or the source can't be read; exit 1 when Redis or GMS is down.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

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


def analyze(
    assertion: Annotated[str | None, typer.Option("--assertion", help="URN of an assertion that failed")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="URN of a dataset whose assertions failed")] = None,
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    datahub_url: DatahubOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """Analyse a dataset's latest incident: blast radius, blind window, contaminated versions, safe rollbacks."""
    from pareis.answers.incidents import analysis

    with evaluating("analyze"), opened(metadata, redis_url, datahub_url, token) as sources:
        answer = analysis(sources, assertion=assertion, dataset=dataset).to_json()
    if as_json:
        print(dump(answer))
        return
    console = Console()
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


def _when(ms: int | None) -> str:
    if ms is None:
        return "—"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
