"""Faults of a role's dependencies on the real broker: outputs that cannot be delivered (nothing past their input is
committed; once the destination is back the outputs arrive), a poison message too large for the DLQ, and a schema
registry answering garbage (issue 11, points 1, 2 and 5)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from pareis.datahub.wire import schemas
from pareis.kafka import dlq
from tests.support.fake_http import local_url, serve_local, stop_local
from tests.support.frames import good
from tests.support.roles import (
    MISSING_TOPICS_STAY_MISSING,
    RoleProcess,
    committed,
    end_offsets,
    produce,
    read_topic,
    wait_until,
)
from tests.support.stack import create_topic, delete_topics

pytestmark = pytest.mark.integration


def test_a_dead_letter_that_cannot_be_delivered_blocks_the_commit_until_its_topic_appears(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    new_topic: Callable[..., str],
    new_group: str,
    later_topic: str,
    tmp_path: Path,
) -> None:
    source, output = new_topic(), new_topic()
    # Offset 0 is poison; batches of two with a commit due every four messages: the poison's dead letter (batch 1)
    # fails delivery while batch 2 is being made durable, the case that used to commit past it.
    records = [(b"k", b"\x07 not an MCL")] + [(b"k", good(i)) for i in range(7)]
    args = (
        *("--input", source, "--output", output, "--dlq", later_topic, "--group", new_group),
        *("--batch-size", "2", "--commit-every", "4", "--commit-interval-ms", "600000"),
        *MISSING_TOPICS_STAY_MISSING,  # the DLQ topic, once deleted, stays missing
    )
    with RoleProcess("datahub", tmp_path, *args) as role:
        # The role creates its DLQ topic at start-up (a topic Pareis owns); it is gone when the poison arrives.
        role.wait_ready()
        assert later_topic in kafka_admin.list_topics(timeout=10).topics
        delete_topics(kafka_admin, [later_topic])
        produce(kafka_bootstrap, source, records)
        wait_until(lambda: role.metric("pareis_errors_total") >= 3, 60, "three failed deliveries of the dead letter")
        assert committed(kafka_bootstrap, new_group, source, 1)[0] < 1, "nothing committed past the poison"
        create_topic(kafka_admin, later_topic, 1, {})
        letters = read_topic(kafka_bootstrap, later_topic, 1)
        wait_until(lambda: committed(kafka_bootstrap, new_group, source, 1)[0] == len(records), 60, "all committed")
        assert role.running
        assert role.terminate(15) == 0
    assert letters[0].value() == records[0][1]
    assert dict(letters[0].headers())[dlq.SOURCE_OFFSET] == b"0"
    outputs = read_topic(kafka_bootstrap, output, 7)
    assert {m.value() for m in outputs} == {b"upstreamLineage"}


def test_a_poison_message_too_large_for_the_dlq_is_dead_lettered_bounded(
    kafka_bootstrap: str, new_topic: Callable[..., str], new_group: str, tmp_path: Path
) -> None:
    # DataHub deployments allow ~5 MB change-log messages; the DLQ topic takes the broker's default (1 MB).
    source, output, dead = new_topic(max_message_bytes="6000000"), new_topic(), new_topic()
    huge = b"\x00\x00\x00\x00\x01" + bytes(range(256)) * 6000  # 1.5 MB, framed, undecodable
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka_bootstrap, "message.max.bytes": 6_000_000})
    producer.produce(source, huge, b"big", headers=[("origin", b"gms")])
    producer.produce(source, good(1), b"k")
    assert producer.flush(30) == 0
    args = ("--input", source, "--output", output, "--dlq", dead, "--group", new_group)
    with RoleProcess("datahub", tmp_path, *args) as role:
        letters = read_topic(kafka_bootstrap, dead, 1)
        read_topic(kafka_bootstrap, output, 1)
        wait_until(lambda: committed(kafka_bootstrap, new_group, source, 1)[0] == 2, 60, "both committed")
        assert role.running, "a DLQ size limit must never stop the role"
        assert role.terminate(15) == 0
    headers = dict(letters[0].headers())
    assert headers["origin"] == b"gms", "the original headers are kept"
    assert headers[dlq.TRUNCATED] == b"true"
    assert headers[dlq.ORIGINAL_SIZE] == str(len(huge)).encode()
    assert headers[dlq.ORIGINAL_SHA256] == hashlib.sha256(huge).hexdigest().encode()
    assert headers[dlq.ERROR_REASON]
    assert letters[0].key() == b"big"
    assert 0 < len(letters[0].value()) < 1_000_000
    assert huge.startswith(letters[0].value()), "as much of the payload as fits, from its start"


class Registry(BaseHTTPRequestHandler):
    """A schema registry serving DataHub's internal ids, or (``html``) an SSO page with status 200."""

    html = True
    requests = 0

    def do_GET(self) -> None:
        type(self).requests += 1
        schema_id = int(self.path.rstrip("/").rsplit("/", 1)[-1]) if "/schemas/ids/" in self.path else -1
        if type(self).html:
            body, kind = b"<html><body>Sign in to continue</body></html>", "text/html"
        else:
            text = schemas.text(schemas.INTERNAL_IDS[schema_id])
            body, kind = json.dumps({"schema": text}).encode(), "application/vnd.schemaregistry.v1+json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        return None


def test_a_registry_answering_html_holds_the_input_instead_of_dead_lettering_it(
    kafka_bootstrap: str, new_topic: Callable[..., str], new_group: str, tmp_path: Path
) -> None:
    source, output, dead = new_topic(), new_topic(), new_topic()
    produce(kafka_bootstrap, source, [(b"k", good(i)) for i in range(3)])
    Registry.html, Registry.requests = True, 0
    server = serve_local(Registry, "fake-registry")
    try:
        args = ("--input", source, "--output", output, "--dlq", dead, "--group", new_group)
        with RoleProcess("datahub", tmp_path, *args, "--schema-registry", local_url(server)) as role:
            wait_until(lambda: role.metric("pareis_errors_total") >= 2, 60, "the registry failure retried")
            assert role.metric("pareis_messages_dead_lettered_total") == 0
            assert committed(kafka_bootstrap, new_group, source, 1)[0] < 0, "nothing committed"
            Registry.html = False
            outputs = read_topic(kafka_bootstrap, output, 3)
            wait_until(lambda: committed(kafka_bootstrap, new_group, source, 1)[0] == 3, 60, "all committed")
            assert role.metric("pareis_messages_dead_lettered_total") == 0
            assert role.terminate(15) == 0
    finally:
        stop_local(server)
    assert len(outputs) == 3
    assert end_offsets(kafka_bootstrap, dead, 1) == {0: 0}, "nothing dead-lettered"
