"""Composition root: the only place that turns settings into concrete adapters and starts them.

Runtime part: resolve role declarations (``consumers.<role>.ROLE``), build the change-log decoders roles share,
and run roles until SIGTERM/SIGINT with one telemetry endpoint per process (``/metrics``, ``/healthz``,
``/readyz``). Nothing here runs at import time.
"""

from __future__ import annotations

import importlib
import os
import signal
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import gc_collector, process_collector

from pareis.config import Settings, load_settings
from pareis.errors import DecodeError
from pareis.kafka.records import RawMessage
from pareis.kafka.role import Check, Decoder, Pipeline, Role, RoleSpec
from pareis.kafka.runner import RoleRunner
from pareis.telemetry.health import Health
from pareis.telemetry.http import TelemetryServer
from pareis.telemetry.logging import configure_logging
from pareis.telemetry.metrics import RuntimeMetrics

if TYPE_CHECKING:
    import redis
    from datahub.emitter.mcp import MetadataChangeProposalWrapper

    from pareis.datahub.changelog import ChangeLog
    from pareis.datahub.gms import LoggedChange
    from pareis.datahub.registry import SchemaSource
    from pareis.datahub.writer import DatahubWriter
    from pareis.kafka.embedded import EmbeddedRunner
    from pareis.kafka.memory import MemoryBroker
    from pareis.replay import Replayer, Sink
    from pareis.roles.assertions import ObservedRun
    from pareis.roles.messages import Effect, RunSignal
    from pareis.store.incidents import IncidentStore
    from pareis.store.journal import StepJournal
    from pareis.store.ledger import EffectLedger
    from pareis.store.lineage import LineageStore
    from pareis.store.runs import RunHistory
    from pareis.tickets.port import Ticketer

ROLE_NAMES = ("lineage", "assertions", "incidents", "effects")
EXIT_FATAL = 1
EXIT_GRACE_EXCEEDED = 2

log = structlog.get_logger(__name__)


# --- roles ---------------------------------------------------------------------------------------------------------
def role_spec(name: str) -> RoleSpec:
    """The declaration in ``consumers.<name>``."""
    if name not in ROLE_NAMES:
        raise ValueError(f"unknown role {name!r}; roles: {', '.join(ROLE_NAMES)}, all")
    spec: RoleSpec = importlib.import_module(f"consumers.{name}").ROLE
    return spec


def resolve_roles(names: Sequence[str], settings: Settings) -> list[Role]:
    """The roles named (``all``: every role), resolved against ``settings``."""
    wanted = list(ROLE_NAMES) if "all" in names else list(dict.fromkeys(names))
    return [role_spec(name).resolve(settings) for name in wanted]


# --- shared pieces of role pipelines ---------------------------------------------------------------------------------
def schema_source(settings: Settings) -> SchemaSource:
    """The registry named in settings, else DataHub's internal-registry ids over the vendored schemas."""
    from pareis.datahub.registry import VendoredSchemaSource
    from pareis.kafka.schema_registry import RegistrySchemaSource

    url = settings.kafka.schema_registry_url
    if url:
        return RegistrySchemaSource.connect(url, auto_register=False)
    return VendoredSchemaSource(settings.kafka.topics.mcl_timeseries)


def changelog_decoder(settings: Settings, aspects: Collection[str] | None = None) -> Decoder[ChangeLog]:
    """A decoder of MetadataChangeLog messages for a role.

    Filters (returns None) before the full decode when the aspect is not in ``aspects`` (None: keep all), and
    after it when the change is Pareis's own write coming back (``systemMetadata.pipelineName``). Errors are
    DecodeErrors located at the message. The prior value is skipped (``decode_mcl(..., previous=False)``):
    ``previous_aspect`` is always None here, as no role reads it.
    """
    from pareis.datahub.codec import Decoder as Codec

    codec = Codec(schema_source(settings))
    wanted = frozenset(aspects) if aspects is not None else None
    own_pipeline = settings.datahub.pipeline_name

    def decode(raw: RawMessage) -> ChangeLog | None:
        value = raw.value
        assert value is not None  # the runtime filters tombstones before decoding
        try:
            if wanted is not None and codec.header(value).aspect_name not in wanted:
                return None
            change = codec.decode_mcl(value, raw.origin, previous=False)
        except DecodeError as exc:
            if exc.origin is not None:
                raise
            raise exc.at(raw.origin) from exc
        system = change.system_metadata
        if system is not None and system.get("pipelineName") == own_pipeline:
            return None
        return change

    return decode


# --- lineage role ----------------------------------------------------------------------------------------------
def lineage_pipeline(settings: Settings, ports: Embedded | None = None) -> Pipeline[ChangeLog]:
    """The lineage role (``consumers.lineage``): versioned change log → ``ports.lineage``, or a
    :class:`RedisLineageStore` at ``settings.redis_url``.

    The decoder keeps only the aspects :func:`~pareis.datahub.translate.translate` reads (filtered on the header,
    before the aspect is decoded) and drops Pareis's own writes. On Redis, readiness pings it and its errors are
    Retriable (unreachable, failing over) or Fatal (credentials, server errors), as the store translates them;
    nothing connects until the first batch or probe.
    """
    from pareis.datahub.translate import LINEAGE_ASPECTS
    from pareis.roles.lineage import LineageHandler

    decode = changelog_decoder(settings, LINEAGE_ASPECTS)
    if ports is not None:
        return Pipeline(decode, LineageHandler(ports.lineage, settings.datahub))
    from pareis.store.lineage_redis import RedisLineageStore

    client = lineage_redis_client(settings.redis_url)
    handler = LineageHandler(RedisLineageStore(client), settings.datahub)
    return Pipeline(decode, handler, checks={"redis": redis_ping(client)}, close=client.close)


def lineage_redis_client(url: str) -> redis.Redis:
    """A Redis client for the lineage index (bytes in and out, bounded timeouts); connects lazily."""
    import redis

    return redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5, health_check_interval=30)


def redis_ping(client: redis.Redis) -> Check:
    """A readiness check: PING, with redis-py errors translated (Retriable/Fatal)."""
    from pareis.store.redis_errors import translated

    def ping() -> None:
        with translated():
            client.ping()

    return ping


# --- assertions, incidents and effects roles -------------------------------------------------------------------------
@dataclass
class Embedded:
    """The ports of every role in process memory (the demo, tests): pass it to a role factory instead of letting
    it connect to Redis, Kafka and the ticket tools, or run every role at once with :func:`embedded_runner`.

    ``datahub`` takes Pareis's DataHub writes on either path (``kafka``: from the incidents role; ``rest``: from
    the effects role), and the start-up definitions. Build with :meth:`in_memory`.
    """

    lineage: LineageStore
    runs: RunHistory
    incidents: IncidentStore
    journal: StepJournal
    ledger: EffectLedger
    datahub: DatahubWriter
    ticketers: list[Ticketer] = field(default_factory=list)

    @classmethod
    def in_memory(cls, ticketers: Sequence[Ticketer] = ()) -> Embedded:
        """Fresh in-memory stores, a :class:`~pareis.datahub.writer.MemoryWriter`, and ``ticketers``."""
        from pareis.datahub.writer import MemoryWriter
        from pareis.store.incidents_memory import MemoryIncidentStore
        from pareis.store.journal import MemoryStepJournal
        from pareis.store.ledger import MemoryLedger
        from pareis.store.lineage_memory import MemoryLineageStore
        from pareis.store.runs_memory import MemoryRunHistory

        return cls(
            MemoryLineageStore(),
            MemoryRunHistory(),
            MemoryIncidentStore(),
            MemoryStepJournal(),
            MemoryLedger(),
            MemoryWriter(),
            list(ticketers),
        )


def assertions_pipeline(settings: Settings, ports: Embedded | None = None) -> Pipeline[ObservedRun]:
    """The assertions role (``consumers.assertions``): run events → run history + signals, over ``ports`` or
    Redis at ``settings.redis_url`` (run history and lineage index)."""
    from pareis.roles.assertions import ASPECT, AssertionsHandler, run_decoder

    decode = run_decoder(changelog_decoder(settings, {ASPECT}))
    signals = settings.kafka.topics.signals
    if ports is not None:
        return Pipeline(decode, AssertionsHandler(ports.runs, ports.lineage, signals))
    from pareis.store.lineage_redis import RedisLineageStore
    from pareis.store.runs_redis import RedisRunHistory

    client = lineage_redis_client(settings.redis_url)
    handler = AssertionsHandler(RedisRunHistory(client), RedisLineageStore(client), signals)
    return Pipeline(decode, handler, checks={"redis": redis_ping(client)}, close=client.close)


def incidents_pipeline(settings: Settings, ports: Embedded | None = None) -> Pipeline[RunSignal]:
    """The incidents role (``consumers.incidents``) over ``ports``, or Redis (lineage index, run history,
    incident store, step journal) and the Kafka DataHub writer. Writes the start-up definitions first
    (:func:`write_definitions`)."""
    from pareis.roles import incidents

    topics = settings.kafka.topics
    write_definitions(settings, ports)
    if ports is not None:
        handler = incidents.IncidentsHandler(
            lineage=ports.lineage,
            runs=ports.runs,
            incidents=ports.incidents,
            journal=ports.journal,
            writer=ports.datahub,
            datahub=settings.datahub,
            effects_topic=topics.effects,
        )
        return Pipeline(incidents.decode, handler)
    from pareis.datahub.writer import KafkaWriter
    from pareis.store.incidents_redis import RedisIncidentStore
    from pareis.store.journal_redis import RedisStepJournal
    from pareis.store.lineage_redis import RedisLineageStore
    from pareis.store.runs_redis import RedisRunHistory

    client = lineage_redis_client(settings.redis_url)
    kafka_path = settings.datahub.write_path == "kafka"
    tuning = settings.runtime.for_role("incidents")
    handler = incidents.IncidentsHandler(
        lineage=RedisLineageStore(client),
        runs=RedisRunHistory(client),
        incidents=RedisIncidentStore(client),
        # A transaction spans at most commit_every messages plus one batch; twice that is the journal's horizon.
        journal=RedisStepJournal(client, keep=2 * (tuning.commit_every + tuning.batch_size)),
        writer=KafkaWriter.from_source(schema_source(settings), topics.mcp) if kafka_path else None,
        datahub=settings.datahub,
        effects_topic=topics.effects,
    )
    return Pipeline(incidents.decode, handler, checks={"redis": redis_ping(client)}, close=client.close)


def effects_pipeline(settings: Settings, ports: Embedded | None = None) -> Pipeline[Effect]:
    """The effects role (``consumers.effects``) over ``ports``, or the Redis ledger, the ticket tools configured
    in ``settings.tickets`` and (``write_path=rest``) DataHub's REST API."""
    from pareis.roles.effects import EffectsHandler, decode
    from pareis.tickets.delivery import TicketDelivery

    if ports is not None:
        handler = EffectsHandler(TicketDelivery(ports.ticketers, ports.ledger), ports.ledger, ports.datahub)
        return Pipeline(decode, handler)
    from pareis.datahub.rest import RestWriter
    from pareis.store.ledger_redis import RedisLedger
    from pareis.tickets.factory import ticketers_from_settings

    client = lineage_redis_client(settings.redis_url)
    ledger = RedisLedger(client)
    rest = RestWriter.from_settings(settings.datahub) if settings.datahub.write_path == "rest" else None

    def close() -> None:
        try:
            if rest is not None:
                rest.close()
        finally:
            client.close()

    handler = EffectsHandler(TicketDelivery(ticketers_from_settings(settings.tickets), ledger), ledger, rest)
    return Pipeline(decode, handler, checks={"redis": redis_ping(client)}, close=close)


def start_up_mcps(settings: Settings) -> list[MetadataChangeProposalWrapper]:
    """The start-up definitions (:func:`~pareis.datahub.definitions.definition_mcps`) then Pareis's entry in
    DataHub's agent registry (:func:`~pareis.datahub.agent_registry.registry_mcps`: its skill, the MCP server's
    tools, and the server itself when ``datahub.mcp_url`` is set)."""
    from pareis.datahub.agent_registry import Skill, registry_mcps
    from pareis.datahub.definitions import definition_mcps
    from pareis.mcp.catalog import SKILL_DIR, SKILL_PATH, TOOLS

    skill = Skill.read(SKILL_DIR / "SKILL.md", path=SKILL_PATH)
    return [*definition_mcps(settings.datahub), *registry_mcps(settings.datahub, tools=TOOLS, skill=skill)]


def write_definitions(settings: Settings, ports: Embedded | None = None) -> None:
    """Write the start-up proposals (:func:`start_up_mcps`) once, outside any transaction: to ``ports.datahub``,
    else to the MCP topic (``kafka``) or GMS (``rest``). Idempotent."""
    mcps = start_up_mcps(settings)
    if ports is not None:
        ports.datahub.write(mcps)
    elif settings.datahub.write_path == "rest":
        from pareis.datahub.rest import RestWriter

        writer = RestWriter.from_settings(settings.datahub)
        try:
            writer.write(mcps)
        finally:
            writer.close()
    else:
        from pareis.datahub.writer import KafkaWriter

        sink = kafka_sink(settings)
        for record in KafkaWriter.from_source(schema_source(settings), settings.kafka.topics.mcp).write(mcps):
            assert record.value is not None
            sink.publish(record.topic, record.key, record.value)
        sink.flush()


def embedded_pipelines(
    settings: Settings, ports: Embedded, names: Sequence[str] = ROLE_NAMES
) -> list[tuple[Role, Pipeline[Any]]]:
    """The roles ``names`` resolved against ``settings``, each with its pipeline built over ``ports``."""
    factories: dict[str, Callable[[Settings, Embedded], Pipeline[Any]]] = {
        "lineage": lineage_pipeline,
        "assertions": assertions_pipeline,
        "incidents": incidents_pipeline,
        "effects": effects_pipeline,
    }
    return [(role, factories[role.name](settings, ports)) for role in resolve_roles(names, settings)]


def embedded_runner(
    settings: Settings, broker: MemoryBroker, ports: Embedded, *, names: Sequence[str] = ROLE_NAMES, batch_size: int = 1
) -> EmbeddedRunner:
    """An :class:`~pareis.kafka.embedded.EmbeddedRunner` of ``names`` over ``broker`` and ``ports``."""
    from pareis.kafka.embedded import EmbeddedRunner

    return EmbeddedRunner(
        broker, embedded_pipelines(settings, ports, names), dlq_topic=settings.kafka.topics.dlq, batch_size=batch_size
    )


# --- running --------------------------------------------------------------------------------------------------------
def process_telemetry(settings: Settings) -> tuple[RuntimeMetrics, Health, TelemetryServer]:
    """This process's metrics registry (with process and GC collectors), health registry and HTTP endpoint."""
    metrics = RuntimeMetrics()
    process_collector.ProcessCollector(registry=metrics.registry)
    gc_collector.GCCollector(registry=metrics.registry)
    health = Health()
    server = TelemetryServer(metrics.registry, health, settings.runtime.http_host, settings.runtime.http_port)
    return metrics, health, server


def run_roles(roles: Sequence[Role], settings: Settings, *, stop: threading.Event | None = None) -> int:
    """Run ``roles`` (one thread each) until ``stop`` is set, a signal arrives or one of them fails.

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
            RoleRunner(role, settings, metrics=metrics, health=health, stop=stop).run()
        except BaseException as exc:
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
    """``pareis run``: configure logging, resolve ``names`` and run them."""
    settings = settings or load_settings()
    configure_logging(settings.log_level, settings.log_json)
    return run_roles(resolve_roles(names, settings), settings)


def _install_signal_handlers(stop: threading.Event, grace_s: float) -> None:
    if threading.current_thread() is not threading.main_thread():
        return  # embedded (tests): the caller owns stop

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

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def _grace_exceeded(grace_s: float) -> None:
    log.error("roles did not stop within the grace period; exiting", grace_s=grace_s)
    os._exit(EXIT_GRACE_EXCEEDED)


# --- replay ---------------------------------------------------------------------------------------------------------
def replayer(
    settings: Settings,
    sink: Sink,
    *,
    default_ms: int,
    speed: float = 0.0,
    sleep: Callable[[float], None] | None = None,
    on_change: Callable[[LoggedChange, str], None] | None = None,
) -> Replayer:
    """A :class:`~pareis.replay.Replayer` publishing to ``sink`` with the codec and topics of ``settings``.

    With a schema registry configured, the change-log subjects are registered as DataHub's emitters do.
    """
    from pareis.datahub.aspects import is_timeseries
    from pareis.datahub.codec import Encoder
    from pareis.datahub.gms import ChangeLogEmulator
    from pareis.datahub.registry import VendoredSchemaSource
    from pareis.kafka.schema_registry import RegistrySchemaSource
    from pareis.replay import Replayer, proposal_clock

    topics = settings.kafka.topics
    url = settings.kafka.schema_registry_url
    source = (
        RegistrySchemaSource.connect(url, auto_register=True) if url else VendoredSchemaSource(topics.mcl_timeseries)
    )
    return Replayer(
        emulator=ChangeLogEmulator(is_timeseries),
        encoder=Encoder(source),
        sink=sink,
        topics={"versioned": topics.mcl_versioned, "timeseries": topics.mcl_timeseries},
        clock=proposal_clock(default_ms),
        speed=speed,
        sleep=sleep or time.sleep,
        on_change=on_change,
    )


def kafka_sink(settings: Settings) -> Sink:
    """A publisher to the configured brokers (idempotent, acks=all)."""
    from pareis.kafka.publisher import KafkaPublisher

    return KafkaPublisher(settings.kafka.bootstrap_servers, settings.kafka.properties)
