"""The role registry — the one list of roles that ``pareis run``, the ``consumers.<role>`` entry modules and the
embedded runner all read — and each role's pipeline over its :class:`~pareis.compose.ports.Ports`.

A pipeline factory ``(settings, ports=None)`` builds over ``ports`` when given (in memory: the demo, tests), else
over :meth:`Ports.on_redis <pareis.compose.ports.Ports.on_redis>` (what a role's process runs). A new role is one
``_declare`` line below, a pipeline factory, and its handler in :mod:`pareis.roles`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pareis.config import Settings
from pareis.kafka.role import Delivery, Pipeline, Role, RoleSpec

if TYPE_CHECKING:
    from pareis.compose.ports import Ports
    from pareis.datahub.wire.changelog import ChangeLog
    from pareis.kafka.embedded import EmbeddedRunner
    from pareis.kafka.memory import MemoryBroker
    from pareis.roles.assertions import Observed
    from pareis.roles.messages import AnySignal, Effect

PipelineFactory = Callable[[Settings, "Ports | None"], Pipeline[Any]]


def _ports(settings: Settings, ports: Ports | None) -> Ports:
    from pareis.compose.ports import Ports

    return ports if ports is not None else Ports.on_redis(settings)


def lineage_pipeline(settings: Settings, ports: Ports | None = None) -> Pipeline[ChangeLog]:
    """The lineage role: versioned change log → ``ports.lineage``, and lineage signals for the changes that touch
    an active incident (``ports.watch``) → ``pareis.signals.v1``.

    The decoder keeps only the aspects the lineage translation reads (filtered on the header, before the aspect
    is decoded) and drops Pareis's own writes. The handler advances the exposure index's generation; in a role's
    own process (no ``ports`` given: on Redis) the exposure maintainer (:mod:`pareis.roles.exposure`) runs beside it
    in a child process (:mod:`pareis.compose.exposure`), started and stopped with the pipeline. Over given ports
    (the demo, tests: in-memory stores a child process cannot see) nothing runs beside the handler.
    """
    from pareis.compose.decoding import changelog_decoder
    from pareis.compose.exposure import MaintainerProcess
    from pareis.datahub.translate.lineage import LINEAGE_ASPECTS
    from pareis.roles.lineage import LineageHandler
    from pareis.roles.lineage_watch import LineageWatch

    decode = changelog_decoder(settings, LINEAGE_ASPECTS)
    own = ports is None
    ports = _ports(settings, ports)
    topics = settings.kafka.topics
    watch = LineageWatch(ports.watch, topics.signals)
    handler = LineageHandler(ports.lineage, settings.datahub, topics.dlq, watch, exposure=ports.exposure)
    if not own:
        return ports.pipeline(decode, handler)
    maintainer = MaintainerProcess(settings)
    built = ports

    handler.maintainer_check = maintainer.check  # the maintainer's failure stops the role (see MaintainerProcess)

    def start() -> None:
        built.start()
        maintainer.start()

    def close() -> None:
        try:
            maintainer.stop()
        finally:
            built.close()

    return ports.pipeline(decode, handler, start=start, close=close)


def assertions_pipeline(settings: Settings, ports: Ports | None = None) -> Pipeline[Observed]:
    """The assertions role: run events → run history + signals (reads the lineage index for sibling classes);
    dataset ``operation`` aspects → the run history's change times (for the retrain gate)."""
    from pareis.compose.decoding import changelog_decoder
    from pareis.core.runs import OPERATION_ASPECT
    from pareis.roles.assertions import ASPECT, AssertionsHandler, run_decoder

    decode = run_decoder(changelog_decoder(settings, {ASPECT, OPERATION_ASPECT}))
    ports = _ports(settings, ports)
    handler = AssertionsHandler(ports.runs, ports.lineage, settings.kafka.topics.signals)
    return ports.pipeline(decode, handler)


def incidents_pipeline(settings: Settings, ports: Ports | None = None) -> Pipeline[AnySignal]:
    """The incidents role over the lineage index, run history, incident store, step journal and watch index, with
    the DataHub writer when the proposals travel in its transaction. Writes the start-up definitions first."""
    from pareis.compose.datahub import DatahubRoute, with_capabilities, write_definitions
    from pareis.roles import incidents
    from pareis.roles.incident_watch import IncidentWatch
    from pareis.roles.scores import ScorePublisher

    ports = _ports(settings, ports)
    write_definitions(settings, ports.datahub)
    datahub = with_capabilities(settings, ports.datahub)
    handler = incidents.IncidentsHandler(
        lineage=ports.lineage,
        runs=ports.runs,
        incidents=ports.incidents,
        journal=ports.journal,
        writer=DatahubRoute.of(settings, ports.datahub).incidents,
        datahub=datahub,
        effects_topic=settings.kafka.topics.effects,
        scores=ScorePublisher(ports.lineage, ports.runs, ports.scores, ports.exposure),
        watch=IncidentWatch(ports.watch, ports.lineage),
    )
    # committed: releases the step journal below the committed offsets
    return ports.pipeline(incidents.decode, handler, committed=handler.committed)


def effects_pipeline(settings: Settings, ports: Ports | None = None) -> Pipeline[Effect]:
    """The effects role over the ledger, the ticket tools and, when DataHub writes leave as effects, the writer."""
    from pareis.compose.datahub import DatahubRoute
    from pareis.kafka.clients import instance_id
    from pareis.roles.effects import EffectsHandler, decode
    from pareis.tickets.delivery import TicketDelivery
    from pareis.tickets.factory import check_ticket_tools

    if ports is None:  # a role's process: it must know where ticket effects go (the demo and tests pass ports)
        check_ticket_tools(settings.tickets)
    ports = _ports(settings, ports)
    rest = DatahubRoute.of(settings, ports.datahub).effects
    budget = settings.tickets.delivery_budget_s
    # The claim's owner is the instance: a restarted instance (the same pod, the same static member) takes its own
    # claims back at once instead of waiting for them to lapse; another instance still waits.
    owner = f"effects/{instance_id(settings)}"
    tickets = TicketDelivery(ports.ticketers, ports.ledger, owner=owner)
    handler = EffectsHandler(tickets, ports.ledger, rest, budget_s=budget)
    return ports.pipeline(decode, handler)


def _declare(
    pipeline: PipelineFactory,
    name: str,
    inputs: tuple[str, ...],
    delivery: Delivery,
    description: str,
    outputs: tuple[str, ...] = (),
) -> tuple[str, tuple[RoleSpec, PipelineFactory]]:
    factory = f"{pipeline.__module__}:{pipeline.__name__}"
    return name, (RoleSpec(name, inputs, delivery, factory, outputs, description), pipeline)


REGISTRY: Final[Mapping[str, tuple[RoleSpec, PipelineFactory]]] = dict(
    [
        _declare(
            lineage_pipeline,
            "lineage",
            inputs=("mcl_versioned",),
            outputs=("signals",),
            delivery=Delivery.AT_LEAST_ONCE,
            description="MetadataChangeLog_Versioned_v1 → LineageStore (Redis) + pareis.signals.v1 (lineage changes)",
        ),
        _declare(
            assertions_pipeline,
            "assertions",
            inputs=("mcl_timeseries",),
            outputs=("signals",),
            delivery=Delivery.AT_LEAST_ONCE,
            description="MetadataChangeLog_Timeseries_v1 → RunHistory (Redis) + pareis.signals.v1",
        ),
        _declare(
            incidents_pipeline,
            "incidents",
            inputs=("signals",),
            outputs=("mcp", "effects"),
            delivery=Delivery.EXACTLY_ONCE,
            description="pareis.signals.v1 → IncidentStore (Redis) + MetadataChangeProposal_v1 + pareis.effects.v1",
        ),
        _declare(
            effects_pipeline,
            "effects",
            inputs=("effects",),
            delivery=Delivery.AT_LEAST_ONCE,
            description="pareis.effects.v1 → Slack / Jira / Linear / DataHub REST",
        ),
    ]
)
"""Every role by name, in start order: its declaration (topics by settings field, delivery, the import path of
its pipeline factory) and the factory itself."""

ROLE_NAMES: Final = tuple(REGISTRY)


def role_spec(name: str) -> RoleSpec:
    """The declaration of role ``name``; ValueError for an unknown name."""
    if name not in REGISTRY:
        raise ValueError(f"unknown role {name!r}; roles: {', '.join(ROLE_NAMES)}, all")
    return REGISTRY[name][0]


def resolve_roles(names: Sequence[str], settings: Settings) -> list[Role]:
    """The roles named (``all``: every role), resolved against ``settings``."""
    wanted = list(ROLE_NAMES) if "all" in names else list(dict.fromkeys(names))
    return [role_spec(name).resolve(settings) for name in wanted]


def embedded_pipelines(
    settings: Settings, ports: Ports, names: Sequence[str] = ROLE_NAMES
) -> list[tuple[Role, Pipeline[Any]]]:
    """The roles ``names`` resolved against ``settings``, each with its pipeline built over ``ports``."""
    return [(role, REGISTRY[role.name][1](settings, ports)) for role in resolve_roles(names, settings)]


def embedded_runner(
    settings: Settings, broker: MemoryBroker, ports: Ports, *, names: Sequence[str] = ROLE_NAMES, batch_size: int = 1
) -> EmbeddedRunner:
    """An :class:`~pareis.kafka.embedded.EmbeddedRunner` of ``names`` over ``broker`` and ``ports``."""
    from pareis.kafka.embedded import EmbeddedRunner

    return EmbeddedRunner(
        broker, embedded_pipelines(settings, ports, names), dlq_topic=settings.kafka.topics.dlq, batch_size=batch_size
    )
