"""Two instances split the partitions; killing one moves its partitions to the other with no loss; adding one back
rebalances cooperatively (the survivor keeps working on the partitions it keeps)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from tests.support.roles import RoleProcess, committed, end_offsets, group_members, produce, wait_until

pytestmark = pytest.mark.integration


def split(bootstrap: str, group: str, members: int) -> Callable[[], bool]:
    """True once the group has ``members`` members that share all four partitions evenly."""

    def check() -> bool:
        assignment = group_members(bootstrap, group)
        sizes = sorted(len(parts) for parts in assignment.values())
        return len(assignment) == members and sum(sizes) == 4 and sizes[-1] - sizes[0] <= 1

    return check


def test_instances_split_partitions_fail_over_and_rebalance_cooperatively(
    kafka_bootstrap: str,
    new_topic: Callable[..., str],
    new_group: str,
    redis_url: str,
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    topic, dead = new_topic(partitions=4), new_topic()
    base = ("--input", topic, "--dlq", dead, "--group", new_group, "--redis", redis_url, "--prefix", "rb")
    sent = 0

    def send(n: int) -> None:
        nonlocal sent
        produce(kafka_bootstrap, topic, ((f"k{i}".encode(), f"v{i}".encode()) for i in range(sent, sent + n)))
        sent += n
        wait_until(lambda: redis_client.hlen("rb:effects") == sent, 60, f"{sent} effects")

    with (
        RoleProcess("redis", tmp_path, *base, "--instance", "a") as a,
        RoleProcess("redis", tmp_path, *base, "--instance", "b") as b,
    ):
        a.wait_ready()
        b.wait_ready()
        wait_until(split(kafka_bootstrap, new_group, 2), 60, "two members with two partitions each")
        send(1000)
        assert a.metric("pareis_messages_handled_total") > 0 and b.metric("pareis_messages_handled_total") > 0

        b.kill()  # its partitions move once its session times out
        wait_until(split(kafka_bootstrap, new_group, 1), 60, "the survivor owning all four partitions")
        send(1000)

        revocations_before = len([e for e in a.log() if e["event"] == "revoked"])
        with RoleProcess("redis", tmp_path, *base, "--instance", "c") as c:
            c.wait_ready()
            wait_until(split(kafka_bootstrap, new_group, 2), 60, "two members again")
            send(1000)
            assert c.metric("pareis_messages_handled_total") > 0
            revoked = [e for e in a.log() if e["event"] == "revoked"][revocations_before:]
            # Cooperative: the survivor gives up only the partitions that move, never all of them at once.
            assert revoked and all(len(e["partitions"]) < 4 for e in revoked)
            assert sum(len(e["partitions"]) for e in revoked) == 2
            assert c.terminate(15) == 0
        assert a.terminate(15) == 0

    assert redis_client.hlen("rb:effects") == sent == 3000
    assert committed(kafka_bootstrap, new_group, topic, 4) == end_offsets(kafka_bootstrap, topic, 4)
