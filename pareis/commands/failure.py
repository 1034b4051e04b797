"""The last line of defence of every command: any exception that escapes one becomes one line on stderr and an
exit code, never a traceback (a traceback tells an operator nothing they can act on, and may print secrets).

The exit codes of ``pareis`` (each command's docstring says which of them it gives):

* 0: an answer (the gate's GO), a load done; ``pareis run``: the roles stopped cleanly on SIGTERM/SIGINT;
* 1: a dependency failed (Redis, the broker, GMS, a ticket tool) or an unexpected error; the gate's NO-GO;
  ``pareis run``: a role failed (its orchestrator restarts it from the committed offsets);
* 2: the command cannot evaluate (bad input, options or settings, an unknown URN, an unreadable file, a port in
  use), and a usage error; ``pareis gate``: a dependency down too (a pipeline must not train then); ``pareis run``:
  the roles did not stop within ``runtime.shutdown_grace_s`` of the signal, or a second Ctrl-C;
* 130: interrupted (Ctrl-C); the servers (``serve``, ``mcp``, ``demo --serve``) end so when stopped, ``serve`` as
  its signal says (130 SIGINT, 143 SIGTERM).

Here: 2 for what cannot be evaluated, 1 for a dependency failure or an unexpected error.
"""

from __future__ import annotations

import errno

from rich.console import Console

from pareis.answers.sources import CannotEvaluate, SourceUnavailable
from pareis.errors import Fatal, Poison, Retriable

EXIT_DEPENDENCY = 1
EXIT_CANNOT_EVALUATE = 2


def exit_code(error: BaseException) -> int:
    """The exit code for ``error`` escaping a command (see the module docstring)."""
    if isinstance(error, Retriable | Fatal | SourceUnavailable | ConnectionError | TimeoutError):
        return EXIT_DEPENDENCY
    if isinstance(error, CannotEvaluate | Poison | ValueError | RecursionError | LookupError | UnicodeError):
        return EXIT_CANNOT_EVALUATE
    if isinstance(error, OSError):
        return EXIT_CANNOT_EVALUATE if error.errno != errno.ECONNREFUSED else EXIT_DEPENDENCY
    return EXIT_DEPENDENCY  # a Redis client's error among them: an unexpected error counts as a dependency's


def reason(error: BaseException) -> str:
    """One line saying what went wrong: the error's own message, else its class."""
    if isinstance(error, OSError) and error.strerror:
        where = f" ({error.filename})" if error.filename else ""
        text = f"{error.strerror}{where}"
    elif isinstance(error, RecursionError):
        text = "input nested too deeply to read"
    else:
        text = str(error)
    text = " ".join(text.split())
    if len(text) > 500:
        text = text[:500] + "…"
    known = isinstance(
        error, Retriable | Fatal | Poison | CannotEvaluate | SourceUnavailable | ValueError | OSError | RecursionError
    )
    return text if known and text else f"{type(error).__name__}: {text}" if text else type(error).__name__


def report(command: str | None, error: BaseException) -> int:
    """Print ``pareis[ <command>]: <reason>`` on stderr; the exit code."""
    _say(command, reason(error))
    return exit_code(error)


def usage(command: str | None, message: str, path: str = "pareis") -> int:
    """Print a usage error (an unknown option or role, a missing argument) as one line, pointing at the help of
    ``path`` (the command the parser was reading: ``pareis`` for an unknown command); exit 2."""
    _say(command, f"{' '.join(message.split())} (see {path} --help)")
    return EXIT_CANNOT_EVALUATE


def _say(command: str | None, text: str) -> None:
    name = f"pareis {command}" if command else "pareis"
    Console(stderr=True).print(f"{name}: {text}", markup=False, highlight=False, emoji=False, soft_wrap=True)
