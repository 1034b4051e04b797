"""Structured logs: one JSON object per line on stderr (or human-readable for local use).

Events carry their context as keys (``role``, ``topic``, ``partition``, ``offset``, ``error_class`` …); bind a
role's name once with ``structlog.contextvars.bind_contextvars(role=...)`` or pass it per call.
"""

from __future__ import annotations

import logging
import re
import sys

import structlog
from structlog.typing import EventDict, WrappedLogger

_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)[^@\s/]+@")


def redact_urls(_logger: WrappedLogger, _method: str, event: EventDict) -> EventDict:
    """A structlog processor: the password of every URL in a string value becomes ``**********`` (a Redis URL
    in an error message, a registry URL with credentials)."""
    for key, value in event.items():
        if isinstance(value, str) and "://" in value and "@" in value:
            event[key] = _URL_PASSWORD.sub(r"\1**********@", value)
    return event


class _StderrLogger:
    """A structlog logger that writes each line to the ``sys.stderr`` of the moment, not the one at configuration
    time: a CLI runner or a test may swap (and close) the stream the process started with."""

    def msg(self, message: str) -> None:
        # One write per line: print() writes the message and its newline apart, and another thread's line could
        # land between them (two JSON objects on one line: a CI run's log parser failed on it).
        sys.stderr.write(message + "\n")
        sys.stderr.flush()

    log = debug = info = warn = warning = error = err = critical = fatal = exception = failure = msg


class _StderrHandler(logging.Handler):
    """The standard library's side of the same rule (``logging.StreamHandler`` keeps its stream)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 (logging's contract: a failing handler reports through handleError)
            self.handleError(record)


def _stderr_logger(*_args: object) -> _StderrLogger:
    return _StderrLogger()


def configure_logging(level: str = "INFO", json: bool = True) -> None:
    """Route structlog and the standard library's logging through one renderer at ``level``."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    renderer: structlog.types.Processor
    if json:
        shared.append(structlog.processors.format_exc_info)
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    shared.append(redact_urls)  # last: the formatted exception text is redacted too
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=True,
    )
    # Libraries that log through the standard library (confluent_kafka's logger, urllib3, …) get the same output.
    handler = _StderrHandler()
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
