"""A bug in a handler (a KeyError) stops the role on the real runtime: exit 1, nothing dead-lettered, and the
committed offset stays before the message, so a fixed build redoes it (issue 9, point 4)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.roles import RoleProcess, committed, produce, read_topic, wait_until

pytestmark = pytest.mark.integration


def test_a_handler_bug_stops_the_role_before_the_message(
    kafka_bootstrap: str, new_topic: Callable[..., str], new_group: str, tmp_path: Path
) -> None:
    source, output, dead = new_topic(), new_topic(), new_topic()
    values = [f"m{i}".encode() for i in range(40)]
    produce(kafka_bootstrap, source, [(b"k", v) for v in values])
    bug = values.index(b"m25")

    args = ("--input", source, "--output", output, "--dlq", dead, "--group", new_group, "--batch-size", "10")
    with RoleProcess("transform", tmp_path, *args, "--bug-on", "m25", "--commit-every", "10") as role:
        wait_until(lambda: not role.running, 60, "the role to stop")
        assert role.proc is not None and role.proc.returncode == 1, f"see {role.log_path}"

    assert committed(kafka_bootstrap, new_group, source, 1)[0] <= bug, "never committed past the failing message"
    assert read_topic(kafka_bootstrap, dead, 0, timeout_s=3) == [], "a bug is not poison"
    produced = {m.value() for m in read_topic(kafka_bootstrap, output, 1)}
    assert produced and produced <= {b"out:" + v for v in values[:bug]}, "nothing handled from the bug on"
    failures = [e for e in role.log() if e.get("event") == "unclassified error; stopping the role"]
    assert failures and failures[0]["error_class"] == "KeyError"
