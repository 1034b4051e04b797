"""``pareis incidents``: what is broken now (with ``--all``, what was), each incident with what to do per affected
model group (DESIGN §4): the CLI twin of Mission Control's list and of the MCP tool ``list_incidents``.

The rows are :func:`pareis.answers.listing.listed` — the one filter all three surfaces use (state, severity, a
sibling-aware ``--dataset``: a dbt node finds its warehouse table's incidents and the reverse) — as of ``--at``
(default: everything known). ``--json`` prints the list as ``/api/incidents`` answers it (an array of incident
summaries, each with its ``decisions``). Exit 0 with an answer (an empty list included), 2 when the question can't
be evaluated (a bad value, an unknown model, an unreadable source), 1 when Redis or GMS is down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from pareis.answers.sources import CannotEvaluate
from pareis.commands.common import (
    DatahubOption,
    JsonOption,
    MetadataOption,
    RedisOption,
    TokenOption,
    dump,
    evaluating,
    opened,
    plain,
)
from pareis.commands.times import AtOption

if TYPE_CHECKING:
    from pareis.answers.incidents import IncidentSummary
    from pareis.answers.listing import IncidentFilter

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).


def incidents(
    show_all: Annotated[bool, typer.Option("--all", help="resolved incidents too (default: active ones)")] = False,
    state: Annotated[str | None, typer.Option("--state", help="ACTIVE or RESOLVED")] = None,
    severity: Annotated[str | None, typer.Option("--severity", help="HIGH, MEDIUM, LOW or NONE")] = None,
    dataset: Annotated[
        str | None,
        typer.Option("--dataset", help="only incidents of this dataset or one of its siblings (dbt node ↔ table)"),
    ] = None,
    at: AtOption = None,
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    datahub_url: DatahubOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """What is broken now, and what to do about each affected model group (roll back, promote, retrain or nothing)."""
    from pareis.answers.listing import IncidentFilter, listed
    from pareis.answers.times import at_ms

    with evaluating("incidents"):
        if show_all and state is not None:
            raise CannotEvaluate("give --all or --state, not both")
        when = None if at is None else at_ms(at)
        chosen = IncidentFilter(
            state=None if show_all else (state or "ACTIVE").strip().upper(),
            severity=None if severity is None else severity.strip().upper(),
            dataset=dataset,
        )
        with opened(metadata, redis_url, datahub_url, token) as sources:
            rows = listed(sources, chosen, when)
    if as_json:
        print(dump([r.to_json() for r in rows]))
        return
    _print_rows(Console(), rows, chosen, when)


def _print_rows(console: Console, rows: list[IncidentSummary], chosen: IncidentFilter, at: int | None) -> None:
    from pareis.commands.analyze import ticket_text
    from pareis.commands.decision import print_decisions
    from pareis.core.brief import iso
    from pareis.core.names import short_name

    what = "incident" if chosen.state is None else f"{chosen.state.lower()} incident"
    as_of = "" if at is None else f" as of {iso(at)}"
    if not rows:
        console.print(Text(f"No {what}{as_of}."))
        return
    console.print(Text(f"{len(rows)} {what}{'' if len(rows) == 1 else 's'}{as_of}", style="bold"))
    for r in rows:
        healed = "still failing" if r.healed_ms is None else f"healed {iso(r.healed_ms)}"
        console.print(
            Text.assemble(
                "\n",
                (r.state, "bold red" if r.state == "ACTIVE" else "bold green"),
                f" {r.severity} ",
                (plain(short_name(r.dataset)), "bold"),
                f" · failing since {iso(r.first_failure_ms)} · {healed}",
            ),
            soft_wrap=True,
        )
        print_decisions(console, r.decisions, indent="  ")
        tickets = " · ".join(plain(ticket_text(t.to_json())) for t in r.tickets)
        console.print(Text(f"  {plain(r.urn)}" + (f" · {tickets}" if tickets else ""), style="dim"), soft_wrap=True)
