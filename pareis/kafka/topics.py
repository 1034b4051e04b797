"""The topics Pareis owns, and the topics a role waits for.

Pareis owns ``signals``, ``effects``, ``dlq`` and ``gate`` (:data:`pareis.config.OWNED_TOPICS`); DataHub's topics
are DataHub's. As Kafka Streams does for its internal topics, each role creates the owned topics it reads or writes
at start-up (:func:`ensure`), with ``kafka.topic_partitions``, ``kafka.replication_factor`` and
``kafka.topic_configs``, and ``pareis topics create`` creates all of them (the chart's pre-install Job):

* a missing topic is created; one created meanwhile by another role or instance is taken as it is;
* an existing topic is never changed: one with fewer partitions than configured is logged (the roles reading it
  can scale to that many instances only), never shrunk or recreated;
* when Pareis may not create them (``TopicAuthorizationFailed`` / ``ClusterAuthorizationFailed``, a policy, or
  ``kafka.create_topics`` off), :class:`~pareis.errors.Fatal` with one line naming every missing topic with its
  partitions, replication factor and configs, so an operator can create them.

An input topic that does not exist yet (DataHub's change log before DataHub's set-up ran) is waited for
(:func:`wait_for`): logged once, looked for every second, and subscribed to as soon as it appears — never
subscribed to while missing, since librdkafka would only notice it at its next metadata refresh (minutes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from pareis.config import OWNED_TOPICS, Settings
from pareis.errors import Fatal, Retriable
from pareis.kafka import clients
from pareis.kafka.classify import error_of, from_kafka_error

_NOT_ALLOWED = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.POLICY_VIOLATION,
    }
)
_LOOK_EVERY_S = 1.0


@dataclass(frozen=True)
class TopicSpec:
    """A topic Pareis owns, as it creates it."""

    setting: str
    """Its field in :class:`pareis.config.Topics`."""
    name: str
    partitions: int
    replication_factor: int
    """-1: the broker's default."""
    configs: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """``name (N partitions, replication factor R, configs k=v)`` for a line an operator acts on."""
        factor = "the broker's default" if self.replication_factor == -1 else str(self.replication_factor)
        configs = "".join(f", {k}={v}" for k, v in sorted(self.configs.items()))
        return f"{self.name} ({_partitions_of(self.partitions)}, replication factor {factor}{configs})"


@dataclass(frozen=True)
class Outcome:
    """What :func:`ensure` found or did for one topic."""

    spec: TopicSpec
    created: bool
    partitions: int
    """The partitions the topic has."""

    def line(self) -> str:
        if self.created:
            return f"created {self.spec.describe()}"
        fewer = self.partitions < self.spec.partitions
        note = f"; {self.spec.partitions} configured, never changed" if fewer else ""
        return f"exists {self.spec.name} ({_partitions_of(self.partitions)}{note})"


def owned(settings: Settings, topics: Iterable[str] | None = None) -> list[TopicSpec]:
    """The topics Pareis owns among ``topics`` (names; None: all of them), as settings say to create them."""
    kafka = settings.kafka
    wanted = None if topics is None else set(topics)
    specs = []
    for name in OWNED_TOPICS:
        topic = getattr(kafka.topics, name)
        if wanted is None or topic in wanted:
            configs = kafka.topic_configs.get(name, {})
            specs.append(TopicSpec(name, topic, kafka.topic_partitions, kafka.replication_factor, configs))
    return specs


def ensure(
    admin: AdminClient, specs: Sequence[TopicSpec], *, create: bool = True, timeout_s: float = 30.0
) -> list[Outcome]:
    """Make sure every topic of ``specs`` exists, creating the missing ones when ``create``; see the module
    docstring. Retriable when the cluster does not answer within ``timeout_s``; Fatal when a topic is missing and
    may not be created."""
    existing = _partitions(admin, timeout_s)
    missing = [spec for spec in specs if spec.name not in existing]
    if missing and not create:
        raise Fatal(_must_create(missing, "kafka.create_topics is off"))
    created = _create(admin, missing, timeout_s) if missing else set()
    if created != {spec.name for spec in missing}:
        existing = _partitions(admin, timeout_s)  # created meanwhile by another role: read what it has
    return [
        Outcome(
            spec,
            spec.name in created,
            spec.partitions if spec.name in created else existing.get(spec.name, spec.partitions),
        )
        for spec in specs
    ]


def report(outcomes: Iterable[Outcome], log: Any) -> None:
    """Log what :func:`ensure` did that an operator should know: each topic created, each with fewer partitions
    than configured."""
    for outcome in outcomes:
        spec = outcome.spec
        if outcome.created:
            log.info("created topic", topic=spec.name, partitions=spec.partitions, configs=dict(spec.configs))
        elif outcome.partitions < spec.partitions:
            log.warning(
                "topic has fewer partitions than configured; the roles reading it scale to that many instances only",
                topic=spec.name,
                partitions=outcome.partitions,
                configured=spec.partitions,
            )


def prepare(
    settings: Settings, specs: Sequence[TopicSpec], *, stop: threading.Event, beat: Callable[[], None], log: Any
) -> set[str]:
    """A role's start-up: :func:`ensure` ``specs`` (create them unless ``kafka.create_topics`` is off), log what an
    operator should know (:func:`report`), and return the names of the topics created. A cluster that does not
    answer is asked again every second up to ``kafka.connect_timeout_s``, then Fatal."""
    if not specs:
        return set()
    kafka = settings.kafka
    admin = clients.new_admin(settings)
    deadline = time.monotonic() + kafka.connect_timeout_s
    while True:
        beat()
        try:
            outcomes = ensure(admin, specs, create=kafka.create_topics, timeout_s=kafka.call_timeout_s)
        except Retriable as exc:
            if time.monotonic() > deadline or stop.is_set():
                raise Fatal(f"topics not ensured within {kafka.connect_timeout_s:.0f}s: {exc}") from exc
            log.warning("topics not ensured; asking again", error=str(exc))
            stop.wait(_LOOK_EVERY_S)
            continue
        report(outcomes, log)
        return {outcome.spec.name for outcome in outcomes if outcome.created}


def wait_for(
    list_topics: Callable[[float], Any],
    topics: Sequence[str],
    *,
    stop: threading.Event,
    beat: Callable[[], None],
    log: Any,
    created: Collection[str] = (),
    timeout_s: float = 10.0,
    every_s: float = _LOOK_EVERY_S,
) -> bool:
    """Return True once every topic of ``topics`` exists (``list_topics(timeout)`` is a client's metadata
    request), False when ``stop`` was set first. Each missing topic is logged once (``waiting for topic``), but
    those just ``created`` (they may take a moment to show in this client's metadata)."""
    told: set[str] = set(created)
    while True:
        beat()
        try:
            present = set(list_topics(timeout_s).topics)
        except KafkaException as exc:  # the brokers did not answer this time: look again
            log.warning("listing topics failed; looking again", error=str(exc))
            present = set()
        missing = [topic for topic in topics if topic not in present]
        if not missing:
            for topic in sorted(told - set(created)):
                log.info("topic appeared", topic=topic)
            return True
        for topic in missing:
            if topic not in told:
                log.warning("waiting for topic", topic=topic)
                told.add(topic)
        if stop.wait(every_s):
            return False


def _partitions(admin: AdminClient, timeout_s: float) -> dict[str, int]:
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        err = error_of(exc)
        raise (from_kafka_error(err, "listing topics") if err else Retriable(f"listing topics: {exc}")) from exc
    return {name: len(topic.partitions) for name, topic in metadata.topics.items()}


def _create(admin: AdminClient, specs: Sequence[TopicSpec], timeout_s: float) -> set[str]:
    """The names of ``specs`` this call created (one that already exists is not among them)."""
    futures = admin.create_topics(
        [NewTopic(s.name, s.partitions, s.replication_factor, config=dict(s.configs)) for s in specs],
        operation_timeout=timeout_s,
        request_timeout=timeout_s,
    )
    created: set[str] = set()
    refused: list[tuple[TopicSpec, KafkaError]] = []
    by_name = {s.name: s for s in specs}
    deadline = time.monotonic() + timeout_s
    for name, future in futures.items():
        try:
            future.result(max(0.1, deadline - time.monotonic()))
        except TimeoutError as exc:
            raise Retriable(f"creating topic {name}: no answer within {timeout_s:.0f}s") from exc
        except KafkaException as exc:
            err = error_of(exc)
            if err is None:
                raise Fatal(f"creating topic {name}: {exc}") from exc
            if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            refused.append((by_name[name], err))
            continue
        created.add(name)
    not_allowed = [(spec, err) for spec, err in refused if err.code() in _NOT_ALLOWED]
    if not_allowed:
        reason = ", ".join(sorted({err.name() for _, err in not_allowed}))
        raise Fatal(_must_create([spec for spec, _ in refused], f"not allowed to create topics ({reason})"))
    if refused:
        spec, err = refused[0]
        raise from_kafka_error(err, f"creating topic {spec.name}")
    return created


def _partitions_of(count: int) -> str:
    return f"{count} partition{'' if count == 1 else 's'}"


def _must_create(specs: Sequence[TopicSpec], why: str) -> str:
    return f"{why}: create {'; '.join(spec.describe() for spec in specs)} (pareis topics create does it)"
