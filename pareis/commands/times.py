"""``--at TIME``: the evaluation time of a command, as epoch milliseconds (the core takes time as an input)."""

from __future__ import annotations

from typing import Annotated

import typer

from pareis.answers.times import at_ms

AtOption = Annotated[
    str | None,
    typer.Option("--at", help="evaluate at TIME: ISO 8601 (2025-10-08T06:00:00Z; no zone = UTC) or epoch ms"),
]


def at_ms_of(text: str | None) -> int:
    """``--at``'s value as epoch ms (:func:`pareis.answers.times.at_ms`); now when None."""
    return at_ms(text)
