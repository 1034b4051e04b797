"""The ``pareis`` command line (typer + rich).

Each command parses its options, asks the composition root (:mod:`pareis.compose`) for wired components and
prints. Exit codes: 0 success, 1 a negative answer (gate NO-GO), 2 cannot evaluate (bad input, unknown URN,
unreadable file).
"""

from __future__ import annotations

import sys

import typer

# typer's own click: the classes its parser raises (typer re-exports Exit and Abort, not UsageError).
from typer import Abort
from typer._click.exceptions import NoArgsIsHelpError, UsageError

from pareis.commands.analyze import analyze
from pareis.commands.blast import blast
from pareis.commands.bootstrap_index import bootstrap_index
from pareis.commands.demo import demo
from pareis.commands.evidence import evidence
from pareis.commands.failure import EXIT_CANNOT_EVALUATE, report, usage
from pareis.commands.gate import gate
from pareis.commands.incidents import incidents
from pareis.commands.mcp import mcp
from pareis.commands.protect import protect
from pareis.commands.replay import replay
from pareis.commands.serve import serve
from pareis.commands.topics import topics

# Never print locals (they hold settings and tokens) nor a traceback: failures are one line (main()).
app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help=__doc__,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def _root() -> None:
    """Pareis: ML incidents from DataHub's change log."""


@app.command()
def run(
    roles: list[str] = typer.Argument(..., help="lineage, assertions, incidents, scores, effects, or all"),  # noqa: B008
) -> None:
    """Run consumer roles until SIGTERM/SIGINT (`all`: every role in one process, for local use)."""
    # Imported here, not above, to keep `pareis --help` and the read commands fast: the roles' wiring loads the Kafka
    # client, the stores and the DataHub writers.
    from pareis.compose import process
    from pareis.compose.roles import resolve_roles
    from pareis.config import load_settings

    settings = load_settings()
    try:
        resolve_roles(roles, settings)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    raise typer.Exit(process.run(roles, settings))


app.command("analyze")(analyze)
app.command("blast")(blast)
app.command("bootstrap")(bootstrap_index)
app.command("demo")(demo)
app.command("gate")(gate)
app.command("incidents")(incidents)
app.command("evidence")(evidence)
app.command("protect")(protect)
app.command("mcp")(mcp)
app.command("replay")(replay)
app.command("serve")(serve)
app.add_typer(topics)


def main(argv: list[str] | None = None) -> None:
    """Run the command line; whatever escapes a command is one line on stderr and exit 2 or 1
    (:mod:`pareis.commands.failure`). A usage error (an unknown option or role, a missing argument) is one line
    too, exit 2; ``pareis`` with no arguments prints the help, exit 2."""
    args = sys.argv[1:] if argv is None else argv
    command = next((a for a in args if not a.startswith("-")), None)
    try:
        code = app(args=args, prog_name="pareis", standalone_mode=False)
    except (KeyboardInterrupt, Abort):
        sys.exit(130)
    except NoArgsIsHelpError:  # the help is printed
        sys.exit(EXIT_CANNOT_EVALUATE)
    except UsageError as error:
        path = error.ctx.command_path if error.ctx is not None else "pareis"
        sys.exit(usage(command, error.format_message(), path))
    except Exception as error:  # noqa: BLE001 - the CLI's last boundary: typer re-raises what a command raised; report it in one line (classified by commands.failure), never a traceback
        sys.exit(report(command, error))
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
