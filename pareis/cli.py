"""The ``pareis`` command line (typer + rich).

Each command parses its options, asks :mod:`pareis.bootstrap` for wired components and prints. Exit codes:
0 success, 1 a negative answer (gate NO-GO), 2 cannot evaluate (bad input, unknown URN, unreadable file).
"""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)


@app.callback()
def _root() -> None:
    """Pareis: ML incidents from DataHub's change log."""


def main() -> None:
    app()
