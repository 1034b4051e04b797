"""``pareis blast``: what a failing assertion, column or dataset poisons, down to models (DESIGN §2.2).

Reads the lineage index from ``--metadata FILE…`` (loaded in memory as the lineage role would build it),
``--redis URL`` (the live index) or ``--datahub URL`` (GMS). ``--json`` prints the contract of
:mod:`pareis.answers.blast`. Exit 2, with a one-line reason on stderr, when the answer cannot be computed (an
unknown assertion or column, an unreadable file); exit 1 when Redis or GMS is down.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

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
from pareis.core.impact import ratio_text

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).


def blast(
    assertion: Annotated[str | None, typer.Option("--assertion", help="URN of the failing assertion")] = None,
    column: Annotated[
        list[str] | None, typer.Option("--column", help="URN of a failing column (repeatable)", show_default=False)
    ] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="URN of a failing dataset (all its columns)")] = None,
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    datahub_url: DatahubOption = None,
    token: TokenOption = None,
    as_json: JsonOption = False,
) -> None:
    """The blast radius of a failing assertion, column or dataset: affected columns, datasets, features, models."""
    from pareis.answers.blast import blast as blast_of

    with evaluating("blast"), opened(metadata, redis_url, datahub_url, token) as sources:
        answer = blast_of(sources, assertion=assertion, columns=column or (), dataset=dataset).to_json()
    if as_json:
        print(dump(answer))
        return
    subject = assertion or dataset or ", ".join(answer["blast"]["failing_columns"])
    print_blast(Console(), subject, answer["blast"])


def print_blast(console: Console, subject: str, blast: dict[str, Any]) -> None:
    """Rich tables of a blast radius in its JSON form; every URN printed verbatim (:func:`shown`)."""
    summary = Table(title=Text("Blast radius of ") + shown(subject), show_header=False, title_justify="left")
    summary.add_column("what", style="bold")
    summary.add_column("value", overflow="fold")
    summary.add_row("severity", blast["severity"])
    summary.add_row("failed rows", "unknown" if blast["failed_rows"] is None else f"{blast['failed_rows']:,}")
    for key, label in (
        ("failing_columns", "failing columns"),
        ("origin_columns", "origin columns"),
        ("columns", "affected columns"),
        ("datasets", "datasets"),
        ("features", "features"),
        ("table_precision_features", "features at table precision"),
    ):
        items = blast.get(key, [])
        summary.add_row(f"{label} ({len(items)})", lines(items))
    console.print(summary)
    models = Table(title=f"Models ({len(blast['models'])})", title_justify="left")
    for name in ("model", "group", "poisoned", "ratio", "severity", "precision"):
        models.add_column(name, overflow="fold")
    for m in blast["models"]:
        models.add_row(
            shown(m["urn"]),
            shown(m["group"] or "—"),
            f"{len(m['poisoned_features'])}/{m['total_features']}",
            ratio_text(m["ratio"]),
            m["severity"],
            m["precision"],
        )
    console.print(models)
