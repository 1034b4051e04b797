"""The JSON form every surface prints, so that the CLI, MCP and Mission Control give byte-identical answers."""

from __future__ import annotations

import json
from typing import Any


def dump(obj: Any) -> str:
    """``obj`` (an answer's ``to_json()``) as text: keys sorted, two-space indent, non-ASCII kept."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False)
