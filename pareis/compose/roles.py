"""The role registry — the one list of roles that ``pareis run`` and the embedded runner read — and each role's
pipeline, built one of two explicit ways:

* ``<role>_pipeline(settings, ports)`` over given :class:`~pareis.compose.ports.Ports` (in memory: the demo, tests,
  the embedded runner); nothing runs beside the handler;
* ``<role>_process(settings)``, a role's own process (``pareis run``): over :meth:`Ports.on_redis
  <pareis.compose.ports.Ports.on_redis>`, with what only a real process has (the lineage role's exposure maintainer
  in a child process, the effects role's check that it knows where ticket effects go).

A new role is one :class:`~pareis.kafka.role.RoleSpec` in :data:`REGISTRY`, its two builders here, and its handler in
:mod:`pareis.roles`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final

from pareis import config
from pareis.answers.sources import Sources
from pareis.compose.datahub import (
    effects_writer,
    incidents_output,
    scores_output,
    with_capabilities,
    write_definitions,
)
from pareis.compose.decoding import changelog_decoder
from pareis.compose.exposure import MaintainerProcess
from pareis.compose.gates import gate_decisions
from pareis.compose.ports import Ports
from pareis.config import Settings
from pareis.core.runs import OPERATION_ASPECT
from pareis.core.upstream import ModelUpstream
from pareis.core.walk_cache import WalkCache
from pareis.datahub.translate.lineage import LINEAGE_ASPECTS
from pareis.datahub.wire.changelog import ChangeLog
from pareis.kafka.clients import instance_id
from pareis.kafka.embedded import EmbeddedRunner
from pareis.kafka.memory import MemoryBroker
from pareis.kafka.role import Delivery, Pipeline, Role, RoleSpec
from pareis.roles import effects, incidents, scores
from pareis.roles.assertions import ASPECT, AssertionsHandler, Observed, run_decoder
from pareis.roles.gates import GatePublisher
from pareis.roles.incident_watch import IncidentWatch
from pareis.roles.lineage import LineageHandler
from pareis.roles.lineage_watch import LineageWatch
from pareis.roles.messages import AnySignal, Effect, RunSignal
from pareis.roles.scores import ScorePublisher
from pareis.store.exposure_reader import kept_radii
from pareis.tickets.delivery import TicketDelivery
from pareis.tickets.factory import check_ticket_tools

OverPorts = Callable[[Settings, Ports], Pipeline[Any]]
"""A role's pipeline over given ports."""


def lineage_pipeline(settings: Settings, ports: Ports) -> Pipeline[ChangeLog]:
    """The lineage role: versioned change log → ``ports.lineage``, and lineage signals for the changes that touch
    an active incident (``ports.watch``) → ``pareis.signals.v1``.

    The decoder keeps only the aspects the lineage translation reads (filtered on the header, before the aspect
    is decoded) and drops Pareis's own writes. The handler advances the exposure index's generation; over given
    ports (in-memory stores a child process cannot see) nothing keeps its snapshot: see :func:`lineage_process`.
    """
    handler = _lineage_handler(settings, ports)
    decode = changelog_decoder(settings, LINEAGE_ASPECTS)
    return ports.pipeline(decode, handler)


def lineage_process(settings: Settings) -> Pipeline[ChangeLog]:
    """:func:`lineage_pipeline` on Redis, with the exposure maintainer (:mod:`pareis.roles.exposure`) beside it in a
    child process (:mod:`pareis.compose.exposure`), started and stopped with the pipeline; its failure stops the
    role (:class:`~pareis.compose.exposure.MaintainerProcess`)."""
    ports = Ports.on_redis(settings)
    maintainer = MaintainerProcess(settings)
    handler = _lineage_handler(settings, ports)
    handler.maintainer_check = maintainer.check

    def start() -> None:
        ports.start()
        maintainer.start()

    def close() -> None:
        try:
            maintainer.stop()
        finally:
            ports.close()

    decode = changelog_decoder(settings, LINEAGE_ASPECTS)
    return ports.pipeline(decode, handler, start=start, close=close)


def _lineage_handler(settings: Settings, ports: Ports) -> LineageHandler:
    topics = settings.kafka.topics
    watch = LineageWatch(ports.watch, topics.signals)
    return LineageHandler(ports.lineage, settings.datahub, topics.dlq, watch, exposure=ports.exposure)


def assertions_pipeline(settings: Settings, ports: Ports) -> Pipeline[Observed]:
    """The assertions role: run events → run history + signals (reads the lineage index for sibling classes);
    dataset ``operation`` aspects → the run history's change times (for the retrain gate)."""
    low = settings.incidents.open_on_low_severity
    decode = run_decoder(changelog_decoder(settings, {ASPECT, OPERATION_ASPECT}), open_on_low_severity=low)
    handler = AssertionsHandler(ports.runs, ports.lineage, settings.kafka.topics.signals)
    return ports.pipeline(decode, handler)


def assertions_process(settings: Settings) -> Pipeline[Observed]:
    """:func:`assertions_pipeline` on Redis."""
    return assertions_pipeline(settings, Ports.on_redis(settings))


def incidents_pipeline(settings: Settings, ports: Ports) -> Pipeline[AnySignal]:
    """The incidents role over the lineage index, run history, incident store, step journal and watch index, with
    its DataHub output port (:func:`~pareis.compose.datahub.incidents_output`). Writes the start-up definitions
    first."""
    write_definitions(settings, ports.datahub)
    datahub = with_capabilities(settings, ports.datahub)
    handler = incidents.IncidentsHandler(
        lineage=ports.lineage,
        runs=ports.runs,
        incidents=ports.incidents,
        journal=ports.journal,
        output=incidents_output(settings, ports.datahub, datahub),
        datahub=datahub,
        effects_topic=settings.kafka.topics.effects,
        watch=IncidentWatch(ports.watch, ports.lineage),
        console_url=settings.web.public_url,
        reaches=ports.reaches,
        serving_aliases=settings.datahub.serving_aliases,
        exposure=ports.exposure,
    )
    # committed: releases the step journal below the committed offsets
    return ports.pipeline(incidents.decode, handler, committed=handler.committed)


def incidents_process(settings: Settings) -> Pipeline[AnySignal]:
    """:func:`incidents_pipeline` on Redis."""
    return incidents_pipeline(settings, Ports.on_redis(settings))


def scores_pipeline(settings: Settings, ports: Ports) -> Pipeline[RunSignal]:
    """The scores role: run signals → the reliability scores of the classes they touch and of the model versions
    downstream, through the DataHub output port (:func:`~pareis.compose.datahub.scores_output`), and the retrain
    gate's changed decisions of those versions and their groups → ``pareis.gate.v1`` (:mod:`pareis.roles.scores`).

    Over given ports it writes no start-up definitions: an embedded run builds the incidents role over the same
    writer, which writes them (:func:`scores_process` does, in a process of its own)."""
    # What the batches' walks found, kept while the lineage generation holds, and the radii the exposure index keeps.
    kept = None if ports.exposure is None else partial(kept_radii, ports.exposure)
    walks = WalkCache[ModelUpstream](kept=kept)
    publisher = ScorePublisher(ports.lineage, ports.runs, ports.scores, ports.exposure, walks)
    sources = Sources(
        ports.lineage, ports.runs, ports.incidents, origin="scores role", exposure=ports.exposure, walks=walks
    )
    gates = GatePublisher(ports.gates, gate_decisions(sources), settings.kafka.topics.gate)
    handler = scores.ScoresHandler(publisher, scores_output(settings, ports.datahub), gates)
    return Pipeline(scores.decode, handler, checks=ports.checks, close=ports.close, start=ports.start)


def scores_process(settings: Settings) -> Pipeline[RunSignal]:
    """:func:`scores_pipeline` on Redis, after writing the start-up definitions (the reliability score's structured
    property among them: a value written before its definition would be refused), as the incidents role does."""
    ports = Ports.on_redis(settings)
    write_definitions(settings, ports.datahub)
    return scores_pipeline(settings, ports)


def effects_pipeline(settings: Settings, ports: Ports) -> Pipeline[Effect]:
    """The effects role over the ledger, the ticket tools, the DataHub writer its tickets are copied through (DESIGN
    §3, tickets inside DataHub) and, when DataHub writes leave as effects, that writer for them too."""
    budget = settings.tickets.delivery_budget_s
    # The claim's owner is the instance: a restarted instance (the same pod, the same static member) takes its own
    # claims back at once instead of waiting for them to lapse; another instance still waits.
    owner = f"effects/{instance_id(settings)}"
    mirror = effects.TicketMirror(ports.datahub, settings.datahub)
    tickets = TicketDelivery(ports.ticketers, ports.ledger, owner=owner, mirror=mirror)
    rest = effects_writer(settings, ports.datahub)
    handler = effects.EffectsHandler(tickets, ports.ledger, rest, mirror=mirror, budget_s=budget)
    return ports.pipeline(effects.decode, handler)


def effects_process(settings: Settings) -> Pipeline[Effect]:
    """:func:`effects_pipeline` on Redis, once the settings say where ticket effects go (Fatal otherwise:
    :func:`~pareis.tickets.factory.check_ticket_tools`)."""
    check_ticket_tools(settings.tickets)
    return effects_pipeline(settings, Ports.on_redis(settings))


LINEAGE = RoleSpec(
    "lineage",
    inputs=("mcl_versioned",),
    outputs=("signals",),
    delivery=Delivery.AT_LEAST_ONCE,
    process=lineage_process,
    description="MetadataChangeLog_Versioned_v1 → LineageStore (Redis) + pareis.signals.v1 (lineage changes)",
)
ASSERTIONS = RoleSpec(
    "assertions",
    inputs=("mcl_timeseries",),
    outputs=("signals",),
    delivery=Delivery.AT_LEAST_ONCE,
    process=assertions_process,
    description="MetadataChangeLog_Timeseries_v1 → RunHistory (Redis) + pareis.signals.v1",
)
INCIDENTS = RoleSpec(
    "incidents",
    inputs=("signals",),
    outputs=("mcp", "effects"),
    delivery=Delivery.EXACTLY_ONCE,
    process=incidents_process,
    description="pareis.signals.v1 → IncidentStore (Redis) + MetadataChangeProposal_v1 + pareis.effects.v1",
)
SCORES = RoleSpec(
    "scores",
    inputs=("signals",),
    outputs=("gate", "mcp", "effects"),
    delivery=Delivery.AT_LEAST_ONCE,
    process=scores_process,
    description="pareis.signals.v1 → reliability scores (Redis + DataHub properties) + pareis.gate.v1 (compacted)",
)
EFFECTS = RoleSpec(
    "effects",
    inputs=("effects",),
    outputs=("mcp",),
    delivery=Delivery.AT_LEAST_ONCE,
    process=effects_process,
    description="pareis.effects.v1 → Slack / Jira / Linear / DataHub REST (+ MetadataChangeProposal_v1: ticket links)",
)

REGISTRY: Final[Mapping[str, tuple[RoleSpec, OverPorts]]] = {
    spec.name: (spec, pipeline)
    for spec, pipeline in (
        (LINEAGE, lineage_pipeline),
        (ASSERTIONS, assertions_pipeline),
        (INCIDENTS, incidents_pipeline),
        (SCORES, scores_pipeline),
        (EFFECTS, effects_pipeline),
    )
}
"""Every role by name, in start order: its declaration (topics by settings field, delivery, its own process's
pipeline) and its pipeline over given ports."""

ROLE_NAMES: Final = config.ROLE_NAMES
"""The role names, declared once where the settings validate them (``runtime.roles.<role>``); the registry holds
exactly these, in this order (``tests/unit/test_runtime_bootstrap.py``)."""


def role_spec(name: str) -> RoleSpec:
    """The declaration of role ``name``; ValueError for an unknown name."""
    if name not in REGISTRY:
        raise ValueError(f"unknown role {name!r}; roles: {', '.join(ROLE_NAMES)}, all")
    return REGISTRY[name][0]


def resolve_roles(names: Sequence[str], settings: Settings) -> list[Role]:
    """The roles named (``all``: every role), resolved against ``settings``, each to run in its own process's way."""
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
    return EmbeddedRunner(
        broker, embedded_pipelines(settings, ports, names), dlq_topic=settings.kafka.topics.dlq, batch_size=batch_size
    )
