"""``pareis protect``: reliability scores and the ranked test gaps, with dbt tests to paste (DESIGN §2.5).

``--json`` (or ``--format json``) prints :meth:`pareis.answers.reliability.ProtectAnswer.to_json`::

    {"evaluated_at_ms": int,
     "datasets": [{"urn", "score", "components": [{"name", "value", "weight", "detail"}]}],
     "models":   [{"urn", "score", "components": [...]}],
     "gaps":     [{"column", "dataset", "models", "features", "matches_past_incident", "incidents",
                   "tests": [{"name", "yaml"}]}]}                      # gaps in rank order

``--format yaml`` prints only the gaps' dbt tests merged into one ``schema.yml`` document (dbt ≥ 1.10's
``arguments:`` form; ``--legacy-dbt`` for the older inline form). Text: a table of scores with their components,
then the gaps. Exit 2 with a one-line reason for an unknown model or dataset or unreadable input; 1 when a
dependency is down.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from pareis.commands.common import (
    DatahubOption,
    JsonOption,
    MetadataOption,
    RedisOption,
    TokenOption,
    dump,
    evaluating,
    opened,
    shown,
)
from pareis.commands.times import AtOption, at_ms_of

if TYPE_CHECKING:
    from pareis.answers.reliability import ProtectAnswer
    from pareis.core.reliability import Score

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).


class Format(StrEnum):
    text = "text"
    json = "json"
    yaml = "yaml"


def protect(
    metadata: MetadataOption = None,
    redis_url: RedisOption = None,
    datahub_url: DatahubOption = None,
    token: TokenOption = None,
    model: Annotated[str | None, typer.Option("--model", help="URN of a model version or model group")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="URN of a dataset")] = None,
    at: AtOption = None,
    max_gaps: Annotated[int | None, typer.Option("--max-gaps", min=0, help="list at most N gaps")] = None,
    as_json: JsonOption = False,
    fmt: Annotated[Format, typer.Option("--format", help="text, json, or yaml (the dbt tests only)")] = Format.text,
    legacy_dbt: Annotated[
        bool, typer.Option("--legacy-dbt", help="dbt tests in the pre-1.10 form (arguments inline, `tests:`)")
    ] = False,
) -> None:
    """Reliability scores of datasets and models, and the untested columns that feed models, with dbt tests."""
    from pareis.answers.reliability import protect as answer_protect

    with evaluating("protect"):
        when = at_ms_of(at)
        with opened(metadata, redis_url, datahub_url, token) as sources:
            answer = answer_protect(
                sources, at_ms=when, model=model, dataset=dataset, max_gaps=max_gaps, legacy=legacy_dbt
            )
    if as_json or fmt is Format.json:
        print(dump(answer.to_json()))
    elif fmt is Format.yaml:
        print(answer.yaml, end="")
    else:
        print_protect(Console(), answer)


def _components(score: Score) -> str:
    return "  ".join(
        f"{c.name} {'unknown' if c.value is None else format(c.value, 'g')}×{c.weight:g}" for c in score.components
    )


def print_protect(console: Console, answer: ProtectAnswer, *, title: str = "Reliability") -> None:
    """The text form: scores with their components, then the gaps with their tests."""
    scores = Table(title=title, title_justify="left")
    for name in ("entity", "score", "components (value×weight)"):
        scores.add_column(name, overflow="fold")
    for s in (*answer.models, *answer.datasets):
        scores.add_row(shown(_short(s.urn)), "unknown" if s.score is None else f"{s.score:g}", shown(_components(s)))
    console.print(scores)
    gaps = Table(title="Untested columns feeding models, by rank", title_justify="left")
    for name in ("#", "column", "past incident", "model groups", "features", "dbt tests"):
        gaps.add_column(name, overflow="fold")
    for i, g in enumerate(answer.gaps, 1):
        gaps.add_row(
            str(i),
            shown(_short(g.column)),
            "yes" if g.matches_past_incident else "",
            str(g.groups),
            str(len(g.features)),
            shown(", ".join(t.name for t in g.tests)),
        )
    console.print(gaps)


def _short(urn: str) -> str:
    """A readable name: the dataset name (and column) or the model name of a URN."""
    if urn.startswith("urn:li:schemaField:("):
        inner = urn[len("urn:li:schemaField:(") : -1]
        dataset, _, path = inner.rpartition(",")
        return f"{_short(dataset)}.{path}"
    if urn.startswith(("urn:li:dataset:(", "urn:li:mlModel:(", "urn:li:mlModelGroup:(")):
        parts = urn[urn.find("(") + 1 : -1].split(",")
        platform = parts[0].rsplit(":", 1)[-1]
        return f"{parts[1]} ({platform})" if len(parts) >= 3 else urn
    return urn
