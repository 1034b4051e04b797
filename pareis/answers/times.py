"""The evaluation time of a question (``--at`` on the CLI, ``at`` on the MCP tools), as epoch milliseconds.

One reader for every surface, so that the same text means the same instant everywhere: epoch milliseconds (a
number or its digits), or an ISO-8601 time (``Z`` or an offset; none means UTC); absent means now.
"""

from __future__ import annotations

import datetime as dt
import time

from pareis.answers.sources import CannotEvaluate


def at_ms(value: str | int | None, now_ms: int | None = None) -> int:
    """``value`` as epoch ms; ``now_ms`` (else the wall clock) when None. CannotEvaluate for anything else."""
    if value is None:
        return now_ms if now_ms is not None else time.time_ns() // 1_000_000
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError as exc:
        raise CannotEvaluate(f"--at {value!r} is neither epoch milliseconds nor an ISO-8601 time") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)
