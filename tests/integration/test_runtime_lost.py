"""Exactly-once when a member loses its partitions while it is working (issue 11, point 16): a paused process
(SIGSTOP) outlives its session, the group coordinator gives its partitions to the other member, and when it wakes
up its open transaction (outputs of input it no longer owns) must not commit; it aborts, rewinds and rejoins, the
new owner redoes that input, and every output is written once. Paused past ``transaction.timeout.ms`` too, the
transaction coordinator aborts its transaction: it wakes up fenced and goes on with a new producer, or recovers by
aborting (the epoch bumped), never stopping. Outputs are read to
their end offsets, never after a quiet period."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.roles import (
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

pytestmark = pytest.mark.integration

PARTITIONS = 4


@pytest.mark.parametrize("past", ["session", "transaction-timeout"])
def test_a_member_paused_past_its_session_loses_its_partitions_and_commits_nothing_for_them(
    kafka_bootstrap: str, new_topic: Callable[..., str], new_group: str, tmp_path: Path, past: str
) -> None:
    source, output, dlq = new_topic(partitions=PARTITIONS), new_topic(partitions=PARTITIONS), new_topic()
    records = [(f"k{i % 40}".encode(), f"v{i}".encode()) for i in range(6000)]
    produce(kafka_bootstrap, source, records)
    base = ("--input", source, "--output", output, "--dlq", dlq, "--group", new_group, "--delivery", "exactly-once")
    # Long transactions (10 batches of 20, 40 ms of work each): the pause lands while one is open with outputs.
    base += ("--batch-size", "20", "--commit-every", "200", "--commit-interval-ms", "2000", "--batch-work-ms", "40")
    base += ("--session-timeout-ms", "6000")
    if past == "transaction-timeout":  # paused past this too: the coordinator aborts a's transaction, fencing it
        base += ("--kafka-property", "transaction.timeout.ms=5000")
    pod = f"pareis-transform-{uuid.uuid4().hex[:10]}"

    def committed_now() -> dict[int, int]:
        return committed(kafka_bootstrap, new_group, source, PARTITIONS)

    def handled(role: RoleProcess) -> float:
        return role.metric("pareis_messages_handled_total")

    with (
        RoleProcess("transform", tmp_path, *base, "--instance", f"{pod}-a") as a,
        RoleProcess("transform", tmp_path, *base, "--instance", f"{pod}-b") as b,
    ):
        wait_until(lambda: min(handled(a), handled(b)) >= 300, 60, "both busy")
        assert len(group_members(kafka_bootstrap, new_group)) == 2
        assert a.proc is not None
        paused_at = len(a.log())  # what a says from here on is about the pause
        a.proc.send_signal(signal.SIGSTOP)  # a pause (a frozen VM, a long GC): no heartbeat, no progress
        try:
            at_pause = committed_now()
            everything = [list(range(PARTITIONS))]
            wait_until(lambda: list(group_members(kafka_bootstrap, new_group).values()) == everything, 60, "b owns all")
            # Paused between sending its offsets to the transaction and committing it, a holds pending offsets
            # that keep b from reading the committed ones (KIP-447) until its transaction times out (60 s).
            redone = lambda: all(o > at_pause[p] for p, o in committed_now().items())  # noqa: E731
            wait_until(redone, 150, "b redid a's input")
            if past == "transaction-timeout":
                done = end_offsets(kafka_bootstrap, source, PARTITIONS)
                wait_until(lambda: committed_now() == done, 120, "b did every input")
                # b is idle now: the output reads to its end only once a's open transaction was aborted.
                read_to_end(kafka_bootstrap, output, PARTITIONS, timeout_s=90)
        finally:
            a.proc.send_signal(signal.SIGCONT)
        lost = wait_until(lambda: events(a, "partitions lost; dropping uncommitted work"), 60, "a's partitions lost")
        fenced = [e for e in events(a, "transaction must be aborted") if "UNKNOWN_MEMBER_ID" in e["error"]
                  or "ILLEGAL_GENERATION" in e["error"]]  # fmt: skip
        # a woke up with work of its lost partitions: its commit was refused (the stale generation), or it
        # dropped the work when told the partitions were lost. Either way nothing of it was committed.
        if past == "transaction-timeout":
            # The coordinator aborted a's transaction: a's producer either wakes up fenced (a new producer), or
            # recovers when a aborts (librdkafka bumps the epoch, KIP-588) after a refused produce or commit, or
            # when told its partitions were lost; which one depends on timing (each seen here). Either way the
            # role goes on.
            def recovered() -> bool:
                woke = a.log()[paused_at:]
                said = {"producer fenced; starting a new one", "transaction must be aborted", "transaction aborted"}
                failed = "retriable failure; backing off"  # a produce refused: the transaction failed
                return any(
                    e["event"] in said or (e["event"] == failed and "transaction failed" in e["error"]) for e in woke
                )

            wait_until(recovered, 60, "a recovered from its aborted transaction")
        else:
            assert fenced or any(e["uncommitted"] > 0 for e in lost), (fenced, lost)
        done = end_offsets(kafka_bootstrap, source, PARTITIONS)
        wait_until(lambda: committed_now() == done, 120, "every input committed")
        wait_until(lambda: len(group_members(kafka_bootstrap, new_group)) == 2, 60, "a back in the group")
        assert a.terminate(30) == 0
        assert b.terminate(30) == 0
    outputs_once(read_to_end(kafka_bootstrap, output, PARTITIONS), records)
