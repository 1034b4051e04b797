"""The first run, as a new platform engineer does it (issue 34): `pareis run all` on topics that do not exist yet,
then `pareis replay` of the demo recording; the first incident is out within 30 s.

Before, each role subscribed to topics that did not exist and librdkafka noticed them only at its next metadata
refresh (5 minutes; the incidents role twice), so the first incident came 10 minutes later; and the signals topic
was auto-created with one partition. Now each role creates the topics Pareis owns that it uses
(``kafka.topic_partitions`` partitions), and waits for DataHub's topics, looking every second.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from pareis.config import Topics
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from tests.support.live import ROOT, RoleProc, log_events, pareis, read_committed, stack_env
from tests.support.roles import wait_until
from tests.support.stack import delete_topics

pytestmark = pytest.mark.e2e

RECORDED = ROOT / "deploy" / "demo" / "recorded"
FIRST_INCIDENT_S = 30.0
PARTITIONS = 4


@pytest.fixture
def fresh_topics(kafka_admin: AdminClient) -> Iterator[dict[str, str]]:
    """A name nobody has used for every topic setting; whatever exists of them at the end is deleted."""
    run = uuid.uuid4().hex[:10]
    names = {name: f"first-run-{run}-{name}" for name in Topics.model_fields}
    yield names
    present = kafka_admin.list_topics(timeout=10).topics
    delete_topics(kafka_admin, [name for name in names.values() if name in present])


def incident_infos(bootstrap: str, admin: AdminClient, topic: str) -> int:
    """How many incidentInfo proposals the MCP topic holds (0 while it does not exist)."""
    found = admin.list_topics(timeout=10).topics.get(topic)
    if found is None or not found.partitions:
        return 0
    decoder = Decoder(VendoredSchemaSource())
    changes = (decoder.decode_mcp(m.value()) for m in read_committed(bootstrap, topic, len(found.partitions)))
    return sum(change.aspect_name == "incidentInfo" for change in changes)


def test_run_all_then_replay_on_fresh_topics_raises_the_first_incident_within_30s(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    fresh_topics: dict[str, str],
    new_group: str,
    redis_url: str,
    tmp_path: Path,
) -> None:
    env = stack_env(
        kafka_bootstrap,
        new_group,
        fresh_topics,
        redis_url,
        {
            "PAREIS_KAFKA__TOPIC_PARTITIONS": str(PARTITIONS),
            "PAREIS_DATAHUB__WRITE_PATH": "kafka",
            "PAREIS_TICKETS__NO_TOOLS": "true",
            "PAREIS_RUNTIME__INSTANCE_ID": uuid.uuid4().hex[:8],
            "PAREIS_RUNTIME__HTTP_HOST": "127.0.0.1",
            "PAREIS_LOG_JSON": "true",
        },
    )
    runner = RoleProc("all", env, tmp_path)
    runner.start()
    try:

        def waiting() -> set[str]:
            assert runner.proc is not None and runner.proc.poll() is None, runner.log_tail()
            return {e["topic"] for e in log_events(runner.log_path, "waiting for topic")}

        # (A role may also wait a moment for a topic Pareis owns that another role of the process is creating.)
        datahub = sorted([fresh_topics["mcl_versioned"], fresh_topics["mcl_timeseries"]])
        told = f"the roles waiting for DataHub's topics\n{runner.log_tail()}"
        wait_until(lambda: set(datahub) <= waiting(), 60, told)

        started = time.monotonic()
        replay = pareis(["replay", *(str(p) for p in sorted(RECORDED.glob("*.json")))], env)
        assert replay.returncode == 0, f"pareis replay: {replay.stdout}{replay.stderr}"
        replayed_s = time.monotonic() - started
        try:
            wait_until(
                lambda: incident_infos(kafka_bootstrap, kafka_admin, fresh_topics["mcp"]) > 0,
                FIRST_INCIDENT_S - replayed_s,
                f"the first incident on {fresh_topics['mcp']} (the replay took {replayed_s:.1f}s)",
                every_s=0.5,
            )
        except AssertionError as timed_out:  # the roles' log as it stands at the deadline says where they are
            raise AssertionError(f"{timed_out}\n{runner.log_tail()}") from None
        first_incident_s = time.monotonic() - started
        assert runner.stop(timeout_s=30) == 0, runner.log_tail()
    finally:
        if runner.proc is not None and runner.proc.poll() is None:
            runner.kill()

    # Each role said once which DataHub topic it waited for, and the topics Pareis owns that the roles use were
    # created with the configured partitions (the gate topic by the scores role).
    waited = Counter(e["topic"] for e in log_events(runner.log_path, "waiting for topic"))
    assert {topic: waited[topic] for topic in datahub} == dict.fromkeys(datahub, 1), waited
    present = kafka_admin.list_topics(timeout=10).topics
    for name in ("signals", "effects", "dlq", "gate"):
        assert len(present[fresh_topics[name]].partitions) == PARTITIONS, name
    assert {e["topic"] for e in log_events(runner.log_path, "created topic")} == {
        fresh_topics[n] for n in ("signals", "effects", "dlq", "gate")
    }
    print(f"first incident {first_incident_s:.1f}s after the replay started")
