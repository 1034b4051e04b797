"""``--at TIME``: the evaluation time of a command, as epoch milliseconds (the core takes time as an input)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Annotated

import typer

from pareis.answers.sources import CannotEvaluate

AtOption = Annotated[
    str | None,
    typer.Option("--at", help="evaluate at TIME: ISO 8601 (2025-10-08T06:00:00Z; no zone = UTC) or epoch ms"),
]


def at_ms_of(text: str | None) -> int:
    """``text`` as epoch ms; now when None. CannotEvaluate (exit 2) for a value that is neither form."""
    if text is None:
        return time.time_ns() // 1_000_000
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        return int(stripped)
    try:
        when = dt.datetime.fromisoformat(stripped.replace("Z", "+00:00") if stripped.endswith("Z") else stripped)
    except ValueError as exc:
        raise CannotEvaluate(f"--at {text!r} is neither ISO 8601 nor epoch milliseconds") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)
