"""Where the benchmarks record their figures: one ``## <title>`` section each in ``bench/RESULTS.md``."""

from __future__ import annotations

import re
from pathlib import Path


def record_section(path: Path, title: str, section: str) -> None:
    """Replace the ``## <title>`` section of ``path`` with ``section`` (which starts with that heading), or append it
    when there is none; every other section is kept as it was, a blank line between sections."""
    body = section.rstrip("\n") + "\n"
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    found = re.search(rf"^## {re.escape(title)}\n", old, flags=re.MULTILINE)
    if found is None:
        path.write_text(old.rstrip("\n") + "\n\n" + body)
        return
    end = old.find("\n## ", found.start() + 1)
    path.write_text(old[: found.start()] + body + ("\n" + old[end + 1 :] if end >= 0 else ""))
