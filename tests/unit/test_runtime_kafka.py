"""Error classification, client configuration, role declarations and back-off — the runtime's pure parts."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from pareis.compose.roles import REGISTRY, incidents_process, lineage_process, role_spec
from pareis.config import KafkaSettings, RuntimeSettings, Settings
from pareis.errors import Abort, Fatal, Poison, Retriable
from pareis.kafka import clients
from pareis.kafka.checkpoint import DeliveryFailed
from pareis.kafka.classify import (
    AbortTransaction,
    CommitLost,
    Disposition,
    ProducerFenced,
    classify,
    from_kafka_error,
    from_kafka_exception,
)
from pareis.kafka.role import Delivery, Pipeline, Role, RoleSpec
from pareis.kafka.runner import backoff_delay


def err(code: int, *, fatal: bool = False, retriable: bool = False, abort: bool = False) -> KafkaError:
    return KafkaError(code, "test", fatal=fatal, retriable=retriable, txn_requires_abort=abort)


@pytest.mark.parametrize(
    ("error", "verdict", "translated"),
    [
        (err(KafkaError._TRANSPORT), Disposition.RETRY, Retriable),
        (err(KafkaError._TIMED_OUT, retriable=True), Disposition.RETRY, Retriable),
        (err(KafkaError.COORDINATOR_LOAD_IN_PROGRESS), Disposition.RETRY, Retriable),
        (err(KafkaError.INVALID_TXN_STATE, abort=True), Disposition.ABORT, AbortTransaction),
        (err(KafkaError._TIMED_OUT, retriable=True, abort=True), Disposition.ABORT, AbortTransaction),
        (err(KafkaError.REBALANCE_IN_PROGRESS), Disposition.REBALANCED, CommitLost),
        (err(KafkaError.ILLEGAL_GENERATION), Disposition.REBALANCED, CommitLost),
        (err(KafkaError.PRODUCER_FENCED), Disposition.FATAL, ProducerFenced),
        (err(KafkaError._FENCED, abort=True), Disposition.FATAL, ProducerFenced),
        (err(KafkaError._FENCED, fatal=True), Disposition.FATAL, ProducerFenced),
        # an abort that found librdkafka's transaction state fatal (the e2e fault run: an output topic deleted)
        (err(KafkaError.INVALID_TXN_STATE, fatal=True), Disposition.FATAL, ProducerFenced),
        (err(KafkaError._TRANSPORT, fatal=True), Disposition.FATAL, Fatal),
        (err(KafkaError.TOPIC_AUTHORIZATION_FAILED), Disposition.FATAL, Fatal),
        (err(KafkaError.MSG_SIZE_TOO_LARGE), Disposition.FATAL, Fatal),  # unknown → restart from committed
    ],
)
def test_kafka_errors_are_classified_once(error: KafkaError, verdict: Disposition, translated: type) -> None:
    assert classify(error) is verdict
    assert type(from_kafka_error(error, "testing")) is translated


@pytest.mark.parametrize("abort", [AbortTransaction, CommitLost, DeliveryFailed])
def test_an_abort_is_its_own_kind_not_a_retry(abort: type[Abort]) -> None:
    """A handler's or adapter's ``except Retriable`` (redo the same input after a back-off) must never take an
    abort, whose uncommitted work is void: the runner rewinds to the committed offsets instead."""
    assert issubclass(abort, Abort)
    assert not issubclass(abort, Retriable | Poison | Fatal)


def test_translate_exception_unwraps_kafka_exceptions_and_treats_others_as_fatal() -> None:
    assert isinstance(from_kafka_exception(KafkaException(err(KafkaError._TRANSPORT)), "x"), Retriable)
    assert isinstance(from_kafka_exception(RuntimeError("boom"), "x"), Fatal)


def role(delivery: Delivery = Delivery.AT_LEAST_ONCE) -> Role:
    return Role("lineage", ("in",), "pareis-lineage", delivery, lambda: Pipeline(lambda m: m, lambda b: ()))


def test_consumer_config_is_cooperative_manual_commit_and_read_committed() -> None:
    settings = Settings(kafka=KafkaSettings(properties={"security.protocol": "SSL"}))
    config = clients.consumer_config(settings, role())
    assert config["partition.assignment.strategy"] == "cooperative-sticky"
    assert config["enable.auto.commit"] is False
    assert config["isolation.level"] == "read_committed"
    assert config["group.id"] == "pareis-lineage"
    assert config["max.poll.interval.ms"] >= settings.runtime.max_poll_interval_ms
    assert config["security.protocol"] == "SSL"  # operator properties apply last
    assert "group.instance.id" not in config


def test_the_fetcher_refills_a_drained_queue_within_milliseconds_not_a_second() -> None:
    """librdkafka's default ``fetch.queue.backoff.ms`` (1,000) capped a role with a backlog at ~25k msg/s (the
    fetcher paused a second each time the local queue was full; bench/RESULTS.md, Runtime). The property must be
    set, small, and known to the linked librdkafka (an unknown property is refused when the client is built)."""
    from confluent_kafka import Consumer

    config = clients.consumer_config(Settings(), role())
    assert config["fetch.queue.backoff.ms"] <= 50
    Consumer({k: v for k, v in config.items() if k != "group.instance.id"}).close()


def test_static_membership_uses_the_instance_id() -> None:
    settings = Settings(runtime=RuntimeSettings(instance_id="pod-7", static_membership=True))
    assert clients.consumer_config(settings, role())["group.instance.id"] == "lineage-pod-7"


def test_transactional_id_is_prefix_role_instance_and_only_for_exactly_once() -> None:
    settings = Settings(
        kafka=KafkaSettings(transactional_id_prefix="acme"), runtime=RuntimeSettings(instance_id="pod-3")
    )
    eos = clients.producer_config(settings, role(Delivery.EXACTLY_ONCE))
    assert eos["transactional.id"] == "acme-lineage-pod-3"
    assert eos["enable.idempotence"] is True
    assert "transactional.id" not in clients.producer_config(settings, role())


def test_instance_id_defaults_to_the_host_name() -> None:
    import socket

    assert clients.instance_id(Settings()) == socket.gethostname()


def test_role_declarations_resolve_against_settings() -> None:
    settings = Settings(kafka=KafkaSettings(group_prefix="px"))
    resolved = {name: role_spec(name).resolve(settings) for name in ("lineage", "assertions", "incidents", "effects")}
    assert resolved["lineage"].inputs == ("MetadataChangeLog_Versioned_v1",)
    assert resolved["lineage"].group == "px-lineage"
    assert resolved["assertions"].inputs == ("MetadataChangeLog_Timeseries_v1",)
    assert resolved["incidents"].delivery is Delivery.EXACTLY_ONCE
    assert resolved["incidents"].outputs == ("MetadataChangeProposal_v1", "pareis.effects.v1", "pareis.dlq.v1")
    assert resolved["effects"].inputs == ("pareis.effects.v1",)


def test_a_role_is_wired_by_reference_and_resolving_it_builds_nothing() -> None:
    """The registry holds the builders themselves (grep and an IDE follow them); a resolved role calls its own
    process's builder only when it starts."""
    assert role_spec("lineage").process is lineage_process
    assert role_spec("incidents").process is incidents_process
    assert [name for name, (spec, _) in REGISTRY.items() if spec.name != name] == []
    built: list[Settings] = []

    def process(settings: Settings) -> Pipeline[bytes]:
        built.append(settings)
        return Pipeline(lambda m: m.value, lambda b: ())

    settings = Settings()
    resolved = RoleSpec("x", ("signals",), Delivery.AT_LEAST_ONCE, process).resolve(settings)
    assert built == []
    resolved.build()
    assert built == [settings]


@pytest.mark.parametrize(
    ("attempt", "hint", "expected"),
    [(0, None, 0.2), (1, None, 0.4), (3, None, 1.6), (10, None, 30.0), (0, 5.0, 5.0), (0, 99.0, 30.0)],
)
def test_backoff_is_capped_exponential_and_honours_hints(attempt: int, hint: float | None, expected: float) -> None:
    assert backoff_delay(attempt, 0.2, 30.0, hint) == pytest.approx(expected)
