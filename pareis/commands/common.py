"""What every read command shares: the source options, opening them, the JSON form, and exit codes.

Exit codes: 0 an answer; 1 a dependency failed (Redis, GMS: :class:`~pareis.answers.sources.SourceUnavailable`);
2 the question can't be evaluated (:class:`~pareis.answers.sources.CannotEvaluate`: bad input, unknown URN,
unreadable file). Either way the reason is one line on stderr, ``pareis <command>: <reason>``, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from pareis.answers.render import dump
from pareis.answers.sources import CannotEvaluate, SourceUnavailable
from pareis.errors import Fatal, PareisError, Retriable

if TYPE_CHECKING:
    from pareis.answers.sources import Sources

# A command imports what it runs with inside its function: `pareis --help` imports every command module, and
# stays fast only while they load no more than their options need (pareis/cli.py).

__all__ = ["dump", "evaluating", "opened", "plain", "shown"]

EXIT_DEPENDENCY = 1
EXIT_CANNOT_EVALUATE = 2
err = Console(stderr=True)

MetadataOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--metadata",
        help="DataHub file-format metadata: a file, or a folder of .json files (repeat for several)",
        show_default=False,
    ),
]
RedisOption = Annotated[
    str | None, typer.Option("--redis", help="the live index in Redis, e.g. redis://localhost:6379/0")
]
DatahubOption = Annotated[
    str | None, typer.Option("--datahub", help="read the current metadata from DataHub GMS at this URL")
]
TokenOption = Annotated[
    str | None,
    typer.Option("--token", help="GMS access token for --datahub (default: the setting PAREIS_DATAHUB__TOKEN)"),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print the JSON contract instead of tables")]


def plain(value: object) -> str:
    """Data as text for a terminal: every control or format character (ESC, BEL, bidi overrides, zero-width …)
    shown as its escape (``\\x1b``, ``\\u202e``) instead of being executed; newlines kept."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c == "\n" or c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def shown(value: object) -> Text:
    """Data (URNs, names, paths) as rich prints it verbatim: never read as markup (``[business_report.xlsx]``) or
    emoji (``urn:li:chart:``), control characters escaped (:func:`plain`)."""
    return Text(plain(value))


def lines(values: Sequence[object]) -> Text:
    """Several data values, one per line, each :func:`shown`; ``—`` when there is none."""
    return Text("\n").join(shown(v) for v in values) if values else Text("—")


def fail(command: str, reason: str, code: int) -> typer.Exit:
    """Print ``pareis <command>: <reason>`` (one line, verbatim, control characters escaped) on stderr; the Exit
    to raise."""
    reason = " ".join(plain(reason).split())
    err.print(f"pareis {command}: {reason}", markup=False, highlight=False, emoji=False, soft_wrap=True)
    return typer.Exit(code)


@contextmanager
def evaluating(command: str, *, dependency_code: int = EXIT_DEPENDENCY) -> Iterator[None]:
    """Turn every reason the command can't answer into its exit code and one line on stderr.

    ``dependency_code`` is the exit code of a dependency failure (the gate answers 2 there: a pipeline must not
    train when the gate can't answer)."""
    try:
        yield
    except CannotEvaluate as exc:
        raise fail(command, str(exc) or type(exc).__name__, EXIT_CANNOT_EVALUATE) from exc
    except (SourceUnavailable, Retriable, Fatal) as exc:
        raise fail(command, str(exc) or type(exc).__name__, dependency_code) from exc
    except (PareisError, ValueError) as exc:
        raise fail(command, str(exc) or type(exc).__name__, EXIT_CANNOT_EVALUATE) from exc


MIN_TOKEN_CHARS = 16


def read_token(path: Path) -> str:
    """The access token of ``pareis serve`` and ``pareis mcp --http``: the first line of ``path``, stripped.
    ValueError (one line) when the file is unreadable, or the token is empty, holds a space or is shorter than
    :data:`MIN_TOKEN_CHARS` (a guessable token protects nothing)."""
    try:
        first = path.read_text(encoding="utf-8").split("\n", 1)[0].strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ValueError(f"can't read --token-file {path}: {reason}") from exc
    if not first or any(c.isspace() for c in first):
        raise ValueError(f"--token-file {path} must hold one token on its first line (no spaces)")
    if len(first) < MIN_TOKEN_CHARS:
        raise ValueError(f"--token-file {path}: the token must be at least {MIN_TOKEN_CHARS} characters")
    return first


def gms_token(token: str | None) -> str | None:
    """The token for DataHub GMS: ``--token`` when given, else the setting ``datahub.token``
    (``PAREIS_DATAHUB__TOKEN``), the same variable the roles' REST writes use."""
    if token is not None:
        return token
    from pareis.config import load_settings

    secret = load_settings().datahub.token
    return secret.get_secret_value() if secret is not None else None


@contextmanager
def opened(
    metadata: Sequence[Path] | None = None,
    redis_url: str | None = None,
    datahub_url: str | None = None,
    token: str | None = None,
) -> Iterator[Sources]:
    """The sources named by ``--metadata``, ``--redis`` or ``--datahub`` (exactly one), closed on exit; reads
    inside the block have their store errors translated (:func:`pareis.compose.sources.reading`)."""
    from pareis.compose.sources import open_sources, reading

    token = gms_token(token) if datahub_url is not None else None
    sources = open_sources(metadata=metadata or (), redis_url=redis_url, datahub_url=datahub_url, token=token)
    try:
        with reading():
            yield sources
    finally:
        sources.close()
