"""The topics Pareis owns on the real broker (issue 34): ``pareis topics create`` creates them with the configured
partitions and configs (the gate topic compacted) and never changes them after; a role that may not create a
missing one stops with one line naming what to create."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from pareis.config import OWNED_TOPICS
from tests.support.live import RoleProc, pareis, stack_env
from tests.support.stack import delete_topics

pytestmark = pytest.mark.integration


@pytest.fixture
def owned(kafka_admin: AdminClient) -> Iterator[dict[str, str]]:
    """A fresh name for each topic Pareis owns (not created); whatever exists of them at the end is deleted."""
    run = uuid.uuid4().hex[:10]
    names = {name: f"owned-{run}-{name}" for name in OWNED_TOPICS}
    yield names
    present = kafka_admin.list_topics(timeout=10).topics
    delete_topics(kafka_admin, [name for name in names.values() if name in present])


def topics_create(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return pareis(["topics", "create"], env)


def test_topics_create_makes_the_owned_topics_as_configured_and_never_changes_them(
    kafka_bootstrap: str, kafka_admin: AdminClient, owned: dict[str, str], redis_url: str
) -> None:
    env = stack_env(kafka_bootstrap, "unused", owned, redis_url, {"PAREIS_KAFKA__TOPIC_PARTITIONS": "3"})
    first = topics_create(env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        f"created {owned['signals']} (3 partitions, replication factor the broker's default)",
        f"created {owned['effects']} (3 partitions, replication factor the broker's default)",
        f"created {owned['dlq']} (3 partitions, replication factor the broker's default)",
        f"created {owned['gate']} (3 partitions, replication factor the broker's default, cleanup.policy=compact)",
    ]
    present = kafka_admin.list_topics(timeout=10).topics
    assert {name: len(present[topic].partitions) for name, topic in owned.items()} == dict.fromkeys(owned, 3)
    (configs,) = kafka_admin.describe_configs([ConfigResource("topic", owned["gate"])]).values()
    assert configs.result(30)["cleanup.policy"].value == "compact"

    again = topics_create({**env, "PAREIS_KAFKA__TOPIC_PARTITIONS": "5"})
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == f"exists {owned['signals']} (3 partitions; 5 configured, never changed)"
    present = kafka_admin.list_topics(timeout=10).topics
    assert all(len(present[topic].partitions) == 3 for topic in owned.values())


def test_a_role_that_may_not_create_a_missing_topic_stops_naming_it(
    kafka_bootstrap: str, owned: dict[str, str], new_group: str, redis_url: str, tmp_path: Path
) -> None:
    env = stack_env(
        kafka_bootstrap,
        new_group,
        owned,
        redis_url,
        {"PAREIS_KAFKA__CREATE_TOPICS": "false", "PAREIS_TICKETS__NO_TOOLS": "true", "PAREIS_LOG_JSON": "true"},
    )
    role = RoleProc("effects", env, tmp_path)
    role.start()
    assert role.proc is not None
    assert role.proc.wait(90) == 1, role.log_tail()
    log = role.log_path.read_text()
    want = (
        f"kafka.create_topics is off: create {owned['effects']} (6 partitions, replication factor the broker's "
        f"default); {owned['dlq']} (6 partitions, replication factor the broker's default) (pareis topics create "
        "does it)"
    )
    assert want in log, role.log_tail()
