"""How a ticket API's refusal becomes one of Pareis's three error classes.

The rule for every ticket adapter:

* 429, 5xx, connection errors and timeouts → :class:`~pareis.errors.Retriable`, with ``retry_after`` from the
  response's ``Retry-After`` when it sent one.
* 401 → :class:`Unauthorized` (a :class:`~pareis.errors.Fatal`). A 401 says the configured credential itself is
  wrong or revoked, so every later effect for that tool would fail the same way: dead-lettering them one by one
  would silently drop every ticket, while stopping makes the misconfiguration loud and loses nothing (the
  runtime restarts from committed offsets once the secret is fixed).
* 403 and every other 4xx → :class:`Rejected` (a :class:`~pareis.errors.Poison`) carrying the status and body.
  A 403 is a permission on one resource (a project, a channel) and other effects may still succeed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pareis.contracts.http import header, retry_after_seconds
from pareis.errors import Fatal, PareisError, Poison, Retriable

__all__ = ["Rejected", "Unauthorized", "dig", "for_status", "header", "retry_after_seconds"]

_BODY_LIMIT = 2000


class Rejected(Poison):
    """The tool refused this request for good: the status, and the body it answered with."""

    def __init__(self, tool: str, status: int, body: str, *, what: str = "") -> None:
        self.tool = tool
        self.status = status
        self.body = body[:_BODY_LIMIT]
        detail = f" ({what})" if what else ""
        super().__init__(f"{tool} rejected the request{detail}: HTTP {status}: {self.body}")


class Unauthorized(Fatal):
    """The tool does not accept the configured credential."""

    def __init__(self, tool: str, status: int, body: str) -> None:
        self.tool = tool
        self.status = status
        self.body = body[:_BODY_LIMIT]
        super().__init__(f"{tool} refused the configured credential: HTTP {status}: {self.body}")


def for_status(tool: str, status: int, headers: Mapping[str, str], body: str, *, what: str = "") -> PareisError:
    """The error a non-success HTTP status stands for (see the module docstring)."""
    if status == 429 or status >= 500:
        hint = retry_after_seconds(header(headers, "Retry-After"))
        return Retriable(f"{tool} answered HTTP {status}: {body[:200]}", retry_after=hint)
    if status == 401:
        return Unauthorized(tool, status, body)
    return Rejected(tool, status, body, what=what)


def dig(tool: str, value: Any, *path: str | int) -> Any:
    """``value[path[0]][path[1]]…``; an answer without that part is :class:`~pareis.errors.Retriable` (a proxy's
    stray page or a half-deployed API: pausing loses nothing, and the lag makes it visible)."""
    for step in path:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            value = None
        if value is None:
            where = "".join(f"[{s!r}]" for s in path)
            raise Retriable(f"{tool} answered without {where}")
    return value
