"""``pareis blast``: what a failing assertion (or column) poisons, down to models (DESIGN §2.2).

Reads the lineage index from ``--metadata FILE…`` (loaded in memory as the lineage role would build it) or
``--redis URL`` (the live index). ``--json`` prints the contract, keys and lists sorted::

    {"assertion": URN | null,
     "blast": {failing_columns, origin_columns, columns, datasets, features,
               models: [{urn, group, poisoned_features, total_features, ratio, severity, precision}],
               severity, failed_rows}}

``failed_rows`` is the count of the assertion's latest FAILURE run in the run history (null for columns, or when
the assertion never failed or its count is unknown). Exit 2, with a one-line reason on stderr, when the answer
cannot be computed: an unknown assertion or column, an unreadable file, an unreachable index.

The shared pieces of the analysis commands (the ``--metadata``/``--redis`` source and the exit-2 handling) live
here too; :mod:`pareis.commands.analyze` uses them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from pareis.analysis import CannotEvaluate
from pareis.core.impact import ratio_text

if TYPE_CHECKING:
    from pareis.bootstrap import AnalysisSource
    from pareis.core.graph import LineageView
    from pareis.store.runs import RunHistory

EXIT_CANNOT_EVALUATE = 2
err = Console(stderr=True)

MetadataOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--metadata",
        help="DataHub file-format metadata: a file, or a folder of .json files (repeat for several)",
        show_default=False,
    ),
]
RedisOption = Annotated[
    str | None, typer.Option("--redis", help="the live index in Redis, e.g. redis://localhost:6379/0")
]
JsonOption = Annotated[bool, typer.Option("--json", help="print the JSON contract instead of tables")]


def dump(obj: Any) -> str:
    """The JSON form of a command's answer: keys sorted, two-space indent."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False)


@contextmanager
def evaluating(command: str) -> Iterator[None]:
    """Turn every reason the command can't answer into exit 2 with ``pareis <command>: <reason>`` on stderr."""
    from pareis.core.blast import UnknownAssertion
    from pareis.errors import PareisError

    try:
        yield
    except (CannotEvaluate, UnknownAssertion, PareisError, ValueError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        err.print(f"pareis {command}: {reason}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_CANNOT_EVALUATE) from exc


@contextmanager
def opened(metadata: Sequence[Path] | None, redis_url: str | None) -> Iterator[AnalysisSource]:
    """The analysis source named by ``--metadata`` or ``--redis`` (exactly one), closed on exit."""
    from pareis import bootstrap

    if bool(metadata) == (redis_url is not None):
        raise CannotEvaluate("give --metadata FILE… or --redis URL (one of them)")
    source = bootstrap.analysis_source(metadata=metadata or (), redis_url=redis_url)
    try:
        yield source
    finally:
        source.close()


def known_column(view: LineageView, column: str) -> str:
    """The canonical URN of ``column`` if the index knows it (in its dataset's schema, in column lineage, as a
    feature source or an assertion's field); CannotEvaluate otherwise."""
    from pareis.core.fieldpath import canonical_column, parent_of
    from pareis.core.graph import Query, Rel

    try:
        urn = canonical_column(column)
    except ValueError as exc:
        raise CannotEvaluate(f"{column!r} is not a schemaField URN") from exc
    parent = parent_of(urn)
    answers = view.lookup(
        [
            Query(Rel.HAS_COLUMN, [parent]),
            Query(Rel.COLUMN, [urn]),
            Query(Rel.COLUMN, [urn], True),
            Query(Rel.FEATURE_SOURCE, [urn]),
            Query(Rel.ASSERTS_COLUMN, [urn], True),
        ]
    )
    schema = answers[0][parent]
    if urn in schema or any(a[urn] for a in answers[1:]):
        return urn
    raise CannotEvaluate(f"unknown column {column} (not in the index)")


def latest_failed_rows(runs: RunHistory, assertion: str) -> int | None:
    """The failing-row count of ``assertion``'s latest FAILURE run; None when it never failed or the count is
    unknown."""
    from pareis.core.runs import ResultType

    failures = [r for r in runs.runs(assertion) if r.result is ResultType.FAILURE]
    return failures[-1].failed_rows if failures else None


def blast_answer(source: AnalysisSource, assertion: str | None, columns: Sequence[str]) -> dict[str, Any]:
    """The ``--json`` answer for one assertion, or for explicit columns (``assertion`` None)."""
    from pareis.core.blast import blast_radius

    if (assertion is None) == (not columns):
        raise CannotEvaluate("give --assertion URN or --column URN (one of them)")
    if assertion is not None:
        radius = blast_radius(source.lineage, assertions=[assertion])
        radius = replace(radius, failed_rows=latest_failed_rows(source.runs, assertion))
    else:
        radius = blast_radius(source.lineage, columns=[known_column(source.lineage, c) for c in columns])
    return {"assertion": assertion, "blast": radius.to_json()}


def blast(
    assertion: Annotated[str | None, typer.Option("--assertion", help="URN of the failing assertion")] = None,
    column: Annotated[
        list[str] | None, typer.Option("--column", help="URN of a failing column (repeatable)", show_default=False)
    ] = None,
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    as_json: JsonOption = False,
) -> None:
    """The blast radius of a failing assertion or column: affected columns, datasets, features and models."""
    with evaluating("blast"), opened(metadata, redis_url) as source:
        answer = blast_answer(source, assertion, column or [])
    if as_json:
        print(dump(answer))
        return
    subject = assertion or ", ".join(answer["blast"]["failing_columns"])
    print_blast(Console(), subject, answer["blast"])


def print_blast(console: Console, subject: str, blast: dict[str, Any]) -> None:
    """Rich tables of a blast radius in its JSON form."""
    summary = Table(title=f"Blast radius of {subject}", show_header=False, title_justify="left")
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
    ):
        items = blast[key]
        summary.add_row(f"{label} ({len(items)})", "\n".join(items) or "—")
    console.print(summary)
    models = Table(title=f"Models ({len(blast['models'])})", title_justify="left")
    for name in ("model", "group", "poisoned", "ratio", "severity", "precision"):
        models.add_column(name, overflow="fold")
    for m in blast["models"]:
        models.add_row(
            m["urn"],
            m["group"] or "—",
            f"{len(m['poisoned_features'])}/{m['total_features']}",
            ratio_text(m["ratio"]),
            m["severity"],
            m["precision"],
        )
    console.print(models)
