"""Nothing lost across a Redis Cluster failover (issue 34, item 5): a primary is SIGKILLed in the middle of a burst
of failures, its replica is promoted, and afterwards every failure streak was written to DataHub exactly once opened
and once resolved, every ticket tool holds exactly one ticket per incident (closed), and the live answers (the
incident list read from the cluster) equal the ones computed offline from the same runs.

The incidents and effects roles run as real processes (``pareis run``) on a cluster of the test's own (3 primaries,
3 replicas, ``deploy/local/redis-cluster.sh``) with ``redis.replicas=1``: a role commits nothing whose Redis writes
a replica has not acknowledged (``WAIT``), so the promoted replica holds everything committed input depends on. The
test plays the assertions role: it records each run in the run history (then waits for a replica, as the role does
before its commit) and produces its signal. Every dataset fails on rounds 2–3 and heals on round 4; the primary dies
while round 2's signals are handled, and comes back (as a replica) once its replica took over.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
from confluent_kafka import Producer

from pareis.answers.incidents import incident_list
from pareis.answers.sources import Sources
from pareis.compose.ports import redis_client
from pareis.compose.sources import redis_sources
from pareis.core.incident_urn import effect_id, incident_urn
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.errors import PareisError
from pareis.roles.messages import RunSignal, encode
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.redis_epoch import Epoch
from pareis.store.runs_memory import MemoryRunHistory
from pareis.store.runs_redis import RedisRunHistory
from tests.support import live
from tests.support.fake_jira import FakeJira
from tests.support.fake_linear import FakeLinear
from tests.support.fake_slack import FakeSlack
from tests.support.live import RoleProc, role_topics, stack_env, ticket_env, ticket_servers, tickets_by_incident
from tests.support.private_redis import Cluster
from tests.support.roles import wait_until
from tests.support.stack import NewTopic

pytestmark = pytest.mark.integration

DATASETS = int(os.environ.get("PAREIS_FAILOVER_DATASETS", "60"))
PARTITIONS = 4
T0 = 1_767_225_600_000  # 2026-01-01
STEP = 3_600_000
R = TypeVar("R")


def dataset(i: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,failover.table_{i:03d},PROD)"


def script(rnd: int) -> tuple[bool, int | None]:
    """(passed, failed rows) of every dataset's one assertion on round ``rnd`` (1–4)."""
    return {1: (True, None), 2: (False, 10), 3: (False, 20), 4: (True, None)}[rnd]


def expected_incidents() -> set[str]:
    return {incident_urn(dataset(i), T0 + 2 * STEP) for i in range(DATASETS)}


def retried(call: Callable[[], R], what: str) -> R:
    """``call()`` again until the cluster answers (it refuses or times out while it fails over): the back-off the
    assertions role does on a Retriable, as a test."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return call()
        except (redis.RedisError, PareisError) as exc:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: the cluster did not come back within 60 s") from exc
            time.sleep(0.2)


@pytest.fixture
def fakes() -> Iterator[tuple[FakeSlack, FakeJira, FakeLinear]]:
    with ticket_servers() as servers:
        yield servers


def test_a_primary_killed_mid_burst_loses_and_doubles_nothing(
    kafka_bootstrap: str,
    new_topic: NewTopic,
    new_group: str,
    private_cluster: Cluster,
    fakes: tuple[FakeSlack, FakeJira, FakeLinear],
    tmp_path: Path,
) -> None:
    slack, jira, linear = fakes
    topics = role_topics(new_topic, PARTITIONS)
    env = stack_env(
        kafka_bootstrap,
        new_group,
        topics,
        private_cluster.url,
        {
            "PAREIS_REDIS__REPLICAS": "1",
            "PAREIS_REDIS__REPLICA_TIMEOUT_MS": "2000",
            "PAREIS_RUNTIME__BATCH_SIZE": "10",
            "PAREIS_RUNTIME__COMMIT_EVERY": "20",
            "PAREIS_RUNTIME__COMMIT_INTERVAL_MS": "300",
            "PAREIS_RUNTIME__BATCH_TIMEOUT_S": "0.05",
            "PAREIS_RUNTIME__BACKOFF_MAX_S": "1",
            "PAREIS_RUNTIME__HTTP_HOST": "127.0.0.1",
            **ticket_env(slack, jira, linear),
            "PAREIS_LOG_JSON": "true",
        },
    )
    roles = {name: RoleProc(name, env, tmp_path) for name in ("incidents", "effects")}
    client = redis_client(private_cluster.url)
    history = RedisRunHistory(client)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True, "acks": "all"})
    offline = MemoryRunHistory()
    recorded: list[AssertionRun] = []

    with ExitStack() as cleanup:
        cleanup.callback(client.close)
        for role in roles.values():
            role.start()
            cleanup.callback(lambda r=role: r.proc is not None and r.proc.poll() is None and r.kill())
        for name, role in roles.items():
            wait_until(role.ready, 90, f"{name} ready", every_s=0.1)
        epoch = Epoch(client, private_cluster.url)
        assert epoch.open(stamp=False) is not None  # the roles stamped the fresh cluster

        def signal(rnd: int, datasets: range) -> None:
            passed, rows = script(rnd)
            when = T0 + rnd * STEP
            for i in datasets:
                result = ResultType.SUCCESS if passed else ResultType.FAILURE
                run = AssertionRun(f"urn:li:assertion:failover-{i}", when, result, dataset(i), f"r{rnd}", rows)
                retried(lambda run=run: history.record(run), "recording a run")
                recorded.append(run)
            retried(lambda: epoch.acknowledged(1, 2000), "a replica acknowledging the runs")
            for i in datasets:
                run = recorded[-len(datasets) + (i - datasets.start)]
                producer.produce(topics["signals"], encode(RunSignal(dataset(i), run, when)), dataset(i).encode())
            assert producer.flush(30) == 0

        signal(1, range(DATASETS))
        half = DATASETS // 2
        before = roles["incidents"].handled()
        signal(2, range(half))
        wait_until(lambda: roles["incidents"].handled() > before, 60, "the incidents role handling round 2")
        private_cluster.kill(private_cluster.base)  # a primary (the first three ports are the cluster's primaries)

        def promoted() -> bool:
            with redis.Redis(port=private_cluster.base + 1) as other:
                return bool(other.cluster("info").get("cluster_state") == "ok")

        wait_until(promoted, 60, "the replica promoted (cluster_state ok)", every_s=0.2)
        # Until the killed node is back (as the replica of the one promoted), that shard has no replica: the roles
        # commit nothing that depends on its writes (WAIT 1 is not met) and redo it; then they go on.
        private_cluster.up()
        signal(2, range(half, DATASETS))
        for rnd in (3, 4):
            signal(rnd, range(DATASETS))

        expected = expected_incidents()

        def all_closed() -> bool:
            try:
                found = tickets_by_incident(slack, jira, linear)
            except RuntimeError:  # a fake server changed its tickets while we read them: look again
                return False
            return set(found) == expected and all(len(t) >= 3 and all(c for _, c in t) for t in found.values())

        wait_until(all_closed, 300, "every incident's tickets closed", every_s=0.5)
        for name, role in roles.items():
            wait_until(role.ready, 90, f"{name} ready to stop", every_s=0.1)
            assert role.stop() == 0, f"{name} did not stop cleanly; see {tmp_path}"

    found = tickets_by_incident(slack, jira, linear)
    assert set(found) == expected
    for urn, tickets in found.items():
        assert sorted(tool for tool, _ in tickets) == ["jira", "linear", "slack"], (urn, tickets)
        assert all(closed for _, closed in tickets)

    decoder = Decoder(VendoredSchemaSource())
    infos: dict[str, list[tuple[str, str]]] = defaultdict(list)
    writes: Counter[tuple[str, str, str]] = Counter()
    copies: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for message in live.read_committed(kafka_bootstrap, topics["mcp"], PARTITIONS):
        change = decoder.decode_mcp(message.value())
        effect = ((change.system_metadata or {}).get("properties") or {}).get("pareisEffectId", "")
        key = (effect, str(change.entity_urn), str(change.aspect_name))
        if "/ticket/" in effect:
            # The effects role's copies of tickets into DataHub are at-least-once by design (a redelivered effect
            # mirrors its ticket again, tickets/delivery.py): idempotent, so every copy must be the same patch.
            copies[key].add(json.dumps(change.aspect_json(), sort_keys=True))
            continue
        writes[key] += 1
        if change.aspect_name == "incidentInfo":
            infos[str(change.entity_urn)].append((effect, change.aspect_json()["status"]["state"]))
    assert set(infos) == expected  # no incident lost
    for urn, written in infos.items():  # none doubled
        opens = [state for effect, state in written if effect == effect_id(urn, "open", 0)]
        states = [state for _, state in written]
        assert opens == ["ACTIVE"] and states[0] == "ACTIVE", (urn, written)
        assert states.count("RESOLVED") == 1 and states[-1] == "RESOLVED", (urn, written)
    duplicated = [key for key, n in writes.items() if n > 1 and not key[0].startswith("definitions")]
    assert not duplicated, f"proposals written more than once: {duplicated[:5]}"
    assert copies, "the effects role copied no ticket into DataHub"
    differing = [key for key, patches in copies.items() if len(patches) != 1]
    assert not differing, f"a ticket's copies into DataHub differ: {differing[:5]}"

    # The answers after the failover are the offline ones: the incident list the cluster holds (read, not
    # recomputed) equals the one computed from the same runs in memory.
    for run in recorded:
        offline.record(run)
    with redis_sources(private_cluster.url) as on_cluster:
        live_list = incident_list(on_cluster)
    offline_list = incident_list(Sources(MemoryLineageStore(), offline, None))
    assert _without_tickets(live_list) == _without_tickets(offline_list)
    assert len(live_list) == DATASETS


def _without_tickets(summaries: list[Any]) -> list[Any]:
    return [dataclasses.replace(s, tickets=()) for s in summaries]
