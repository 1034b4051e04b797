"""The topics Pareis owns (issue 34): created with the configured partitions, replication and configs, never
changed when they exist, named in one line when they may not be created; and an input topic waited for.

Against a fake admin client that answers as a broker does (the real broker: tests/integration/test_topics.py)."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from pareis.config import KafkaSettings, Settings, SettingsError, load_settings
from pareis.errors import Fatal
from pareis.kafka import topics


class Admin:
    """Topics by name → partitions; ``refuse`` makes every creation fail with that error code."""

    def __init__(self, existing: dict[str, int] | None = None, refuse: int | None = None) -> None:
        self.existing = dict(existing or {})
        self.refuse = refuse
        self.created: list[Any] = []

    def list_topics(self, timeout: float) -> Any:
        return SimpleNamespace(
            topics={name: SimpleNamespace(partitions=dict.fromkeys(range(n))) for name, n in self.existing.items()}
        )

    def create_topics(
        self, new: list[Any], operation_timeout: float, request_timeout: float
    ) -> dict[str, Future[None]]:
        futures: dict[str, Future[None]] = {}
        for topic in new:
            future: Future[None] = Future()
            if self.refuse is not None:
                future.set_exception(KafkaException(KafkaError(self.refuse, "refused")))
            elif topic.topic in self.existing:
                future.set_exception(KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists")))
            else:
                self.existing[topic.topic] = topic.num_partitions
                self.created.append(topic)
                future.set_result(None)
            futures[topic.topic] = future
        return futures


def settings(**kafka: Any) -> Settings:
    return Settings(kafka=KafkaSettings(**kafka))


def test_pareis_owns_signals_effects_dlq_and_the_compacted_gate_topic() -> None:
    specs = topics.owned(settings(topic_partitions=8, replication_factor=3))
    assert [(s.setting, s.name, s.partitions, s.replication_factor) for s in specs] == [
        ("signals", "pareis.signals.v1", 8, 3),
        ("effects", "pareis.effects.v1", 8, 3),
        ("dlq", "pareis.dlq.v1", 8, 3),
        ("gate", "pareis.gate.v1", 8, 3),
    ]
    assert {s.setting: dict(s.configs) for s in specs}["gate"] == {"cleanup.policy": "compact"}
    used = topics.owned(settings(), ["pareis.signals.v1", "MetadataChangeLog_Timeseries_v1", "pareis.dlq.v1"])
    assert [s.setting for s in used] == ["signals", "dlq"], "DataHub's topics are DataHub's"


def test_topic_configs_merge_over_the_defaults_and_name_only_owned_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAREIS_KAFKA__TOPIC_CONFIGS", '{"gate": {"retention.ms": "-1"}, "dlq": {"retention.ms": "1"}}')
    configs = load_settings().kafka.topic_configs
    assert configs == {"gate": {"cleanup.policy": "compact", "retention.ms": "-1"}, "dlq": {"retention.ms": "1"}}
    monkeypatch.setenv("PAREIS_KAFKA__TOPIC_CONFIGS", '{"mcp": {"retention.ms": "1"}}')
    with pytest.raises(SettingsError, match="unknown topic"):
        load_settings()
    monkeypatch.delenv("PAREIS_KAFKA__TOPIC_CONFIGS")
    monkeypatch.setenv("PAREIS_KAFKA__REPLICATION_FACTOR", "0")
    with pytest.raises(SettingsError, match="replication_factor"):
        load_settings()


def test_missing_topics_are_created_as_configured_and_existing_ones_never_changed() -> None:
    admin = Admin({"pareis.effects.v1": 1})
    outcomes = topics.ensure(admin, topics.owned(settings(topic_partitions=4)))  # type: ignore[arg-type]
    assert [(o.spec.name, o.created, o.partitions) for o in outcomes] == [
        ("pareis.signals.v1", True, 4),
        ("pareis.effects.v1", False, 1),
        ("pareis.dlq.v1", True, 4),
        ("pareis.gate.v1", True, 4),
    ]
    gate = next(t for t in admin.created if t.topic == "pareis.gate.v1")
    assert (gate.num_partitions, gate.replication_factor, gate.config) == (4, -1, {"cleanup.policy": "compact"})
    assert [o.line() for o in outcomes][1] == "exists pareis.effects.v1 (1 partition; 4 configured, never changed)"
    again = topics.ensure(admin, topics.owned(settings(topic_partitions=4)))  # type: ignore[arg-type]
    assert not any(o.created for o in again) and len(admin.created) == 3


def test_a_topic_created_meanwhile_by_another_role_is_taken_as_it_is() -> None:
    class Racing(Admin):
        def list_topics(self, timeout: float) -> Any:
            found = super().list_topics(timeout)
            self.existing.setdefault("pareis.signals.v1", 2)  # another instance creates it right after this look
            return found

    outcomes = topics.ensure(Racing(), topics.owned(settings(), ["pareis.signals.v1"]))  # type: ignore[arg-type]
    assert [(o.created, o.partitions) for o in outcomes] == [(False, 2)]


@pytest.mark.parametrize("code", [KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED])
def test_not_allowed_to_create_is_one_line_naming_every_topic_to_create(code: int) -> None:
    admin = Admin({"pareis.signals.v1": 6}, refuse=code)
    with pytest.raises(Fatal) as caught:
        topics.ensure(admin, topics.owned(settings(replication_factor=3)))  # type: ignore[arg-type]
    message = str(caught.value)
    assert "\n" not in message and message.startswith("not allowed to create topics (")
    assert KafkaError(code).name() in message
    assert "pareis.effects.v1 (6 partitions, replication factor 3)" in message
    assert "pareis.gate.v1 (6 partitions, replication factor 3, cleanup.policy=compact)" in message
    assert "pareis.signals.v1" not in message, "it exists"


def test_with_creation_off_a_missing_topic_stops_the_role_naming_it() -> None:
    admin = Admin({"pareis.signals.v1": 6, "pareis.dlq.v1": 6})
    specs = topics.owned(settings(), ["pareis.signals.v1", "pareis.effects.v1", "pareis.dlq.v1"])
    with pytest.raises(Fatal, match=r"kafka.create_topics is off: create pareis.effects.v1 \(6 partitions"):
        topics.ensure(admin, specs, create=False)  # type: ignore[arg-type]
    assert admin.created == []
    admin.existing["pareis.effects.v1"] = 6
    assert not any(o.created for o in topics.ensure(admin, specs, create=False))  # type: ignore[arg-type]


class Said:
    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **kw: Any) -> None:
        self.lines.append((event, kw))

    info = warning


def test_a_missing_input_topic_is_waited_for_said_once_and_taken_as_soon_as_it_appears() -> None:
    admin, log, looks = Admin(), Said(), []

    def list_topics(timeout: float) -> Any:
        looks.append(timeout)
        if len(looks) == 4:
            admin.existing["MetadataChangeLog_Timeseries_v1"] = 1
        return admin.list_topics(timeout)

    beats: list[int] = []
    present = topics.wait_for(
        list_topics,
        ["MetadataChangeLog_Timeseries_v1"],
        stop=threading.Event(),
        beat=lambda: beats.append(1),
        log=log,
        every_s=0.01,
    )
    assert present and len(looks) == 4 and len(beats) == 4
    assert log.lines == [
        ("waiting for topic", {"topic": "MetadataChangeLog_Timeseries_v1"}),
        ("topic appeared", {"topic": "MetadataChangeLog_Timeseries_v1"}),
    ]


def test_waiting_ends_when_the_role_is_stopped_and_a_topic_just_created_is_not_said() -> None:
    stop, log = threading.Event(), Said()
    stop.set()
    assert not topics.wait_for(Admin().list_topics, ["t"], stop=stop, beat=lambda: None, log=log, every_s=0.01)
    assert log.lines == [("waiting for topic", {"topic": "t"})]
    log.lines.clear()
    assert not topics.wait_for(Admin().list_topics, ["t"], stop=stop, beat=lambda: None, log=log, created={"t"})
    assert log.lines == []
