"""``pareis replay``'s pieces: the replayer (GMS emulation, the roles' codec and topics) and the Kafka publisher."""

from __future__ import annotations

import time
from collections.abc import Callable

from pareis.compose.decoding import schema_source
from pareis.config import Settings
from pareis.datahub.gms.emulator import ChangeLogEmulator, LoggedChange
from pareis.datahub.wire.aspects import is_timeseries
from pareis.datahub.wire.codec import Encoder
from pareis.kafka.memory import MemoryBroker
from pareis.kafka.publisher import KafkaPublisher
from pareis.lineage_loader import check
from pareis.replay import Replayer, Sink, proposal_clock


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
    topics = settings.kafka.topics
    return Replayer(
        emulator=ChangeLogEmulator(is_timeseries),
        encoder=Encoder(schema_source(settings, register=True)),
        sink=sink,
        topics={"versioned": topics.mcl_versioned, "timeseries": topics.mcl_timeseries},
        clock=proposal_clock(default_ms),
        speed=speed,
        sleep=sleep or time.sleep,
        on_change=on_change,
        validate=check,
    )


def sink(settings: Settings, *, memory: bool = False) -> Sink:
    """Where ``pareis replay`` publishes: an in-process broker (``memory``), else :func:`kafka_sink` once its
    brokers answer (Fatal naming them after ``kafka.connect_timeout_s``)."""
    if memory:
        return MemoryBroker()
    publisher = KafkaPublisher(settings.kafka.bootstrap_servers, settings.kafka.properties)
    publisher.wait_for_brokers(settings.kafka.connect_timeout_s)
    return publisher


def kafka_sink(settings: Settings) -> Sink:
    """A publisher to the configured brokers (idempotent, acks=all)."""
    return KafkaPublisher(settings.kafka.bootstrap_servers, settings.kafka.properties)
