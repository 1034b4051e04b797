"""Exactly-once on the real broker as the chart deploys it (issue 11, point 16): dynamic group membership with a
pod-named instance each, two live members rebalancing while busy, and a transaction aborted and its input redone.
Duplicates are looked for by reading every output partition to its end offsets, never after a quiet period."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.support.roles import (
    MISSING_TOPICS_STAY_MISSING,
    RoleProcess,
    committed,
    end_offsets,
    events,
    group_members,
    outputs_once,
    produce,
    read_to_end,
    wait_until,
)
from tests.support.stack import create_topic

pytestmark = pytest.mark.integration


def test_two_dynamic_exactly_once_members_rebalancing_while_busy_write_each_output_once(
    kafka_bootstrap: str, new_topic: Callable[..., str], new_group: str, tmp_path: Path
) -> None:
    source, output, dlq = new_topic(partitions=4), new_topic(partitions=4), new_topic()
    records = [(f"k{i % 40}".encode(), f"v{i}".encode()) for i in range(8000)]
    produce(kafka_bootstrap, source, records)
    base = ("--input", source, "--output", output, "--dlq", dlq, "--group", new_group, "--delivery", "exactly-once")
    # No --static: dynamic membership, and instance ids like the chart's pod names. Paced (40 ms a batch of 20,
    # at most 500 msg/s a member) so that every membership change lands while both are transforming.
    base += ("--batch-size", "20", "--commit-every", "60", "--commit-interval-ms", "100", "--batch-work-ms", "40")
    pod = f"pareis-transform-{uuid.uuid4().hex[:10]}"

    with RoleProcess("transform", tmp_path, *base, "--instance", f"{pod}-a") as a:
        wait_until(lambda: a.metric("pareis_messages_handled_total") >= 400, 60, "a busy")
        with RoleProcess("transform", tmp_path, *base, "--instance", f"{pod}-b") as b:
            wait_until(lambda: len(group_members(kafka_bootstrap, new_group)) == 2, 60, "b joined")
            wait_until(lambda: b.metric("pareis_messages_handled_total") >= 200, 60, "b busy")
            handled_a = a.metric("pareis_messages_handled_total")
            assert handled_a < len(records), "a was still busy when b joined"
            assert events(a, "revoked"), "a gave partitions up to b while busy"
            assert b.terminate(30) == 0  # b leaves while busy: its partitions go back to a mid-stream
        wait_until(lambda: len(group_members(kafka_bootstrap, new_group)) == 1, 60, "b gone")
        done = end_offsets(kafka_bootstrap, source, 4)
        wait_until(lambda: committed(kafka_bootstrap, new_group, source, 4) == done, 120, "every input committed")
        assert a.terminate(30) == 0

    # Cooperative: b's joining only revoked some of a's partitions; b's leaving assigned them to a again.
    assert len(events(a, "assigned")) >= 2, "a was assigned at the start and again after b left"
    outputs_once(read_to_end(kafka_bootstrap, output, 4), records)


def test_an_aborted_transaction_rewinds_and_its_input_is_redone_once_when_the_output_is_back(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    new_topic: Callable[..., str],
    new_group: str,
    later_topic: str,
    tmp_path: Path,
) -> None:
    source, dlq = new_topic(partitions=2), new_topic()
    records = [(f"k{i % 8}".encode(), f"v{i}".encode()) for i in range(300)]
    produce(kafka_bootstrap, source, records)
    args = ("--input", source, "--output", later_topic, "--dlq", dlq, "--group", new_group)
    args += ("--delivery", "exactly-once", "--instance", f"pareis-transform-{uuid.uuid4().hex[:10]}")
    args += ("--batch-size", "50", "--commit-every", "100", "--commit-interval-ms", "100")
    # The output topic does not exist yet and must not be auto-created: its records fail after a second, the
    # transaction holding them must abort, and the role must rewind to the committed offsets.
    args += MISSING_TOPICS_STAY_MISSING
    with RoleProcess("transform", tmp_path, *args) as role:
        wait_until(lambda: events(role, "rewound to committed offsets"), 60, "an abort and a rewind")
        assert events(role, "transaction must be aborted")
        assert committed(kafka_bootstrap, new_group, source, 2) == {0: -1001, 1: -1001}, "nothing committed"
        create_topic(kafka_admin, later_topic, 2, {})
        done = end_offsets(kafka_bootstrap, source, 2)
        wait_until(lambda: committed(kafka_bootstrap, new_group, source, 2) == done, 120, "every input committed")
        assert role.terminate(30) == 0
    outputs_once(read_to_end(kafka_bootstrap, later_topic, 2), records)
