"""Reading an HTTP answer's headers, as every HTTP adapter (ticket tools, DataHub's REST API) does."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """Parse ``Retry-After``: delta seconds or an HTTP date; None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def header(headers: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive header lookup over any mapping."""
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None
