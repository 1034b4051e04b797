"""What the benchmarks record about the machine they ran on (figures are only comparable within one run)."""

from __future__ import annotations

from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or ``unknown CPU`` where there is none."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"
