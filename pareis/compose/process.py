"""Running roles in this process: one thread per role until SIGTERM/SIGINT or a failure, with one telemetry
endpoint per process (``/metrics``, ``/healthz``, ``/readyz``); and creating the topics Pareis owns
(``pareis topics create``)."""

from __future__ import annotations

import faulthandler
import os
import signal
import threading
from collections.abc import Sequence
from types import FrameType

import structlog
from prometheus_client import gc_collector, process_collector

from pareis.compose.heap import Collector
from pareis.compose.roles import resolve_roles
from pareis.config import Settings, load_settings
from pareis.kafka import clients, topics
from pareis.kafka.role import Role
from pareis.kafka.runner import RoleRunner
from pareis.telemetry.health import Health
from pareis.telemetry.http import TelemetryServer
from pareis.telemetry.logging import configure_logging
from pareis.telemetry.metrics import RuntimeMetrics

EXIT_FATAL = 1
EXIT_GRACE_EXCEEDED = 2
_BACKSTOP_S = 3.0

log = structlog.get_logger(__name__)


def process_telemetry(settings: Settings) -> tuple[RuntimeMetrics, Health, TelemetryServer]:
    """This process's metrics registry (with process and GC collectors), health registry and HTTP endpoint."""
    metrics = RuntimeMetrics()
    process_collector.ProcessCollector(registry=metrics.registry)
    gc_collector.GCCollector(registry=metrics.registry)
    health = Health()
    server = TelemetryServer(metrics.registry, health, settings.runtime.http_host, settings.runtime.http_port)
    return metrics, health, server


def run_roles(
    roles: Sequence[Role],
    settings: Settings,
    *,
    stop: threading.Event | None = None,
    collector: Collector | None = None,
) -> int:
    """Run ``roles`` (one thread each) until ``stop`` is set, a signal arrives or one of them fails; ``collector``,
    the process's garbage collection between batches (:class:`~pareis.compose.heap.Collector`, started), when given.

    SIGTERM/SIGINT stop gracefully; if the roles have not stopped ``runtime.shutdown_grace_s`` later, or on a
    second SIGINT, the process exits at once (uncommitted work is redone by the next owner). Returns the exit code:
    0 after a clean stop, 1 when a role failed (so the orchestrator restarts the process).
    """
    stop = stop or threading.Event()
    metrics, health, server = process_telemetry(settings)
    server.start()
    log.info("telemetry endpoint up", port=server.port, roles=[r.name for r in roles])
    _install_signal_handlers(stop, settings.runtime.shutdown_grace_s)
    failures: list[BaseException] = []

    def run_one(role: Role) -> None:
        try:
            between = None if collector is None else collector.between
            RoleRunner(role, settings, metrics=metrics, health=health, stop=stop, between=between).run()
        except BaseException as exc:  # noqa: BLE001 - a role thread's boundary: logged, stops the others, exit Fatal
            failures.append(exc)
            log.error("role failed", role=role.name, error_class=type(exc).__name__, error=str(exc))
            stop.set()

    threads = [threading.Thread(target=run_one, args=(role,), name=f"role-{role.name}") for role in roles]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        for thread in threads:
            thread.join(0.2)  # short joins: the main thread must come back to Python to run signal handlers
    server.stop()
    log.info("stopped", clean=not failures)
    return EXIT_FATAL if failures else 0


def run(names: Sequence[str], settings: Settings | None = None) -> int:
    """``pareis run``: configure logging, resolve ``names`` from the role registry and run them."""
    settings = settings or load_settings()
    configure_logging(settings.log_level, settings.log_json)
    roles = resolve_roles(names, settings)
    collector = Collector()
    collector.start()  # the roles are built: collections between batches from now on (pareis.compose.heap)
    return run_roles(roles, settings, collector=collector)


def create_topics(settings: Settings) -> list[str]:
    """``pareis topics create``: create every topic Pareis owns that is missing (:func:`pareis.kafka.topics.ensure`,
    whatever ``kafka.create_topics`` says: this is the command an operator or the chart's Job runs for it); one line
    per topic. Fatal naming the topics when they may not be created; Retriable when the cluster does not answer."""
    kafka = settings.kafka
    admin = clients.new_admin(settings)
    outcomes = topics.ensure(admin, topics.owned(settings), timeout_s=kafka.connect_timeout_s)
    return [outcome.line() for outcome in outcomes]


def _install_signal_handlers(stop: threading.Event, grace_s: float) -> None:
    if threading.current_thread() is not threading.main_thread():
        return  # embedded (tests): the caller owns stop
    # `kill -USR1 <pid>` writes every thread's stack to stderr, without a lock: where a wedged role is stuck.
    faulthandler.register(signal.SIGUSR1, all_threads=True)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stop.is_set():
            # A second Ctrl-C means "now". Repeated SIGTERMs are ignored: supervisors and process groups can
            # deliver one twice, and the watchdog below bounds the exit anyway.
            if signum == signal.SIGINT:
                log.warning("second interrupt; exiting now")
                os._exit(EXIT_GRACE_EXCEEDED)
            return
        log.info("stopping", signal=name, grace_s=grace_s)
        stop.set()
        watchdog = threading.Timer(grace_s, _grace_exceeded, args=(grace_s,))
        watchdog.daemon = True
        watchdog.start()
        # The backstop, a thread of the interpreter's own that needs no lock: should a client call block while
        # holding the GIL, neither the timer above nor any Python thread could run; this one still dumps every
        # thread's stack to stderr and exits (1) shortly after the grace period.
        faulthandler.dump_traceback_later(grace_s + _BACKSTOP_S, exit=True)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def _grace_exceeded(grace_s: float) -> None:
    log.error("roles did not stop within the grace period; exiting", grace_s=grace_s)
    os._exit(EXIT_GRACE_EXCEEDED)
