"""Delivery guarantees of the runtime against the real broker, with the role as a subprocess we kill.

* at-least-once: SIGKILLed mid-batch, restarted → every input's effect is in Redis (idempotent effects);
* exactly-once: SIGKILLed at ≥ 20 random points while transforming 10,000 messages → a read_committed consumer
  sees each output exactly once, in input order per key;
* SIGTERM: clean exit within the grace period, offsets committed, the group left.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from tests.support.roles import (
    RoleProcess,
    committed,
    end_offsets,
    group_members,
    produce,
    read_topic,
    wait_until,
)

pytestmark = pytest.mark.integration


def applied(client: redis.Redis, prefix: str) -> int:
    return int(client.get(f"{prefix}:applied") or 0)


def effects(client: redis.Redis, prefix: str) -> int:
    return int(client.hlen(f"{prefix}:effects"))


def test_at_least_once_role_killed_mid_batch_loses_nothing(
    kafka_bootstrap: str,
    new_topic: Callable[..., str],
    new_group: str,
    redis_url: str,
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    topic, dlq = new_topic(partitions=4), new_topic()
    total = produce(kafka_bootstrap, topic, ((f"k{i % 37}".encode(), f"v{i}".encode()) for i in range(6000)))
    args = ("--input", topic, "--dlq", dlq, "--group", new_group, "--redis", redis_url, "--prefix", "alo")
    args += ("--batch-size", "50", "--static")
    rng = random.Random(7)
    for kill in range(4):
        with RoleProcess("redis", tmp_path, *args) as role:
            before = applied(redis_client, "alo")
            target = before + rng.randint(200, 800)
            wait_until(lambda t=target: applied(redis_client, "alo") >= t, 60, f"progress before kill {kill}", 0.005)
            role.kill()
    assert effects(redis_client, "alo") < total, "the kills came too late to interrupt anything"
    with RoleProcess("redis", tmp_path, *args) as role:
        wait_until(lambda: effects(redis_client, "alo") == total, 120, "every effect")
        wait_until(
            lambda: committed(kafka_bootstrap, new_group, topic, 4) == end_offsets(kafka_bootstrap, topic, 4),
            30,
            "offsets committed to the end",
        )
        assert role.terminate(15) == 0
    assert applied(redis_client, "alo") >= total  # redone batches are applied again; effects are idempotent


def test_sigterm_exits_cleanly_within_grace_with_offsets_committed(
    kafka_bootstrap: str,
    new_topic: Callable[..., str],
    new_group: str,
    redis_url: str,
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    topic, dlq = new_topic(partitions=2), new_topic()
    total = produce(kafka_bootstrap, topic, ((f"k{i % 11}".encode(), f"v{i}".encode()) for i in range(20_000)))
    args = ("--input", topic, "--dlq", dlq, "--group", new_group, "--redis", redis_url, "--prefix", "term")
    with RoleProcess("redis", tmp_path, *args, "--grace-s", "10") as role:
        role.wait_ready()
        wait_until(lambda: applied(redis_client, "term") >= 1000, 60, "the role busy with its backlog", 0.005)
        assert role.terminate(10) == 0  # mid-backlog: finishes its batch, commits, leaves within the grace period
    done = committed(kafka_bootstrap, new_group, topic, 2)
    stored = redis_client.hkeys("term:effects")
    processed: dict[int, int] = defaultdict(lambda: -1)
    for field in stored:
        _, partition, offset = field.decode().rsplit(":", 2)
        processed[int(partition)] = max(processed[int(partition)], int(offset))
    assert processed, "nothing processed before the signal"
    for partition, offset in done.items():
        if partition in processed:  # the commit on shutdown covers exactly what was processed
            assert offset == processed[partition] + 1
        else:
            assert offset < 0
    assert sum(max(0, offset) for offset in done.values()) < total
    assert group_members(kafka_bootstrap, new_group) == {}, "the member left the group on close"
    logs = [entry["event"] for entry in role.log()]
    assert "committed; leaving the group" in logs and logs[-1] == "stopped"


def test_exactly_once_under_twenty_sigkills(
    kafka_bootstrap: str,
    new_topic: Callable[..., str],
    new_group: str,
    tmp_path: Path,
) -> None:
    source, output, dlq = new_topic(partitions=4), new_topic(partitions=4), new_topic()
    keys, total = 50, 10_000
    seq: dict[int, int] = defaultdict(int)
    records = []
    for i in range(total):
        key = i % keys
        records.append((f"k{key}".encode(), f"k{key}:{seq[key]}".encode()))
        seq[key] += 1
    produce(kafka_bootstrap, source, records)
    # Static membership: a restarted instance takes its partitions back at once instead of waiting for the
    # killed member's session to expire; the same instance id (transactional.id) fences the killed producer.
    args = ("--input", source, "--output", output, "--dlq", dlq, "--group", new_group, "--delivery", "exactly-once")
    args += ("--static", "--batch-size", "20", "--commit-every", "60", "--commit-interval-ms", "50")
    # Paced at ≤ 2,000 msg/s so that each run, killed after 20–300 handled messages, leaves input for the next:
    # every kill lands while the role is transforming.
    args += ("--batch-work-ms", "10")
    rng = random.Random(20)
    standby = RoleProcess("transform", tmp_path, *args, standby=True).start()
    try:
        for _ in range(20):
            with standby.go() as role:
                standby = RoleProcess("transform", tmp_path, *args, standby=True).start()
                kill_at = rng.randint(20, 300)  # a random point: mid-batch, mid-transaction or mid-commit

                def progressed(role: RoleProcess = role, kill_at: int = kill_at) -> bool:
                    return role.metric("pareis_messages_handled_total") >= kill_at

                wait_until(progressed, 60, "the role handling input", 0.002)
                role.kill()
        with standby.go() as role:
            seen = read_topic(kafka_bootstrap, output, total, timeout_s=120)
            assert role.metric("pareis_messages_handled_total") > 0, "input was left after the 20th kill"
            assert role.terminate(15) == 0
    finally:
        if standby.running:
            standby.kill()
    values = [m.value().decode() for m in seen]
    assert len(values) == total, f"{len(values) - len(set(values))} duplicates"
    assert set(values) == {"out:" + v.decode() for _, v in records}
    by_key: dict[str, list[int]] = defaultdict(list)
    for m in sorted(seen, key=lambda m: (m.partition(), m.offset())):
        key, number = m.value().decode().removeprefix("out:").split(":")
        by_key[key].append(int(number))
    assert all(numbers == sorted(numbers) for numbers in by_key.values()), "input order per key"
