"""Crash test: 200 datasets fail and heal in a scripted stream while the incidents and effects roles are SIGKILLed
at random points; afterwards every failure streak was written to DataHub exactly once opened and once resolved,
and every ticket tool holds exactly one ticket per incident, closed.

The roles run as real processes (``python -m pareis.cli run incidents|effects``, configured by ``PAREIS_*``
variables) over the local Kafka and Redis, with the fake Slack, Jira and Linear servers of tests/support in this
process. The test plays the assertions role: it records each run in the run history (Redis) and then produces its
signal, round by round. Every dataset fails on rounds 2–3 and heals on round 4; every fourth fails again on round 5
and heals on round 6: 250 incidents. Each round is signalled in four chunks: a randomly chosen ready role is killed
at a random moment within 0.2 s of handling its first message of the chunk (its metrics show the progress), then
restarted (static membership and a stable transactional id: the restart takes the partitions back at once and
fences the killed one's open transaction). The kills must land mid-work: each role is killed holding input it had
not committed at least twice, and half of all kills are. Comments are counted: one per update and the close's
text, in every tool.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import redis
from confluent_kafka import Producer

from pareis.core.incident_urn import effect_id, incident_urn
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.roles.messages import RunSignal, encode
from pareis.store.runs_redis import RedisRunHistory
from tests.support import live
from tests.support.fake_jira import FakeJira
from tests.support.fake_linear import FakeLinear
from tests.support.fake_slack import FakeSlack
from tests.support.live import (
    RoleProc,
    comments_by_incident,
    role_topics,
    stack_env,
    ticket_env,
    ticket_servers,
    tickets_by_incident,
)
from tests.support.roles import committed, wait_until
from tests.support.stack import NewTopic

pytestmark = pytest.mark.integration

DATASETS = int(os.environ.get("PAREIS_CRASH_DATASETS", "200"))
PARTITIONS = 4
KILLS_PER_ROUND = 4
T0 = 1_767_225_600_000  # 2026-01-01
STEP = 3_600_000


def dataset(i: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,crash.table_{i:03d},PROD)"


def script(i: int) -> list[tuple[int, bool, int | None]]:
    """(round, passed, failed rows) of dataset ``i``'s one assertion, rounds 1–6."""
    second = i % 4 == 0
    return [
        (1, True, None),
        (2, False, 10),
        (3, False, 20),  # more failed rows: an update
        (4, True, None),
        (5, not second, None if not second else 5),
        (6, True, None),
    ]


def expected_incidents() -> set[str]:
    out = set()
    for i in range(DATASETS):
        previous_ok = True
        for rnd, passed, _ in script(i):
            if previous_ok and not passed:
                out.add(incident_urn(dataset(i), T0 + rnd * STEP))
            previous_ok = passed
    return out


def read_committed(bootstrap: str, topic: str) -> list[Any]:
    return live.read_committed(bootstrap, topic, PARTITIONS)


@pytest.fixture
def fakes() -> Iterator[tuple[FakeSlack, FakeJira, FakeLinear]]:
    with ticket_servers() as servers:
        yield servers


def test_sigkilled_roles_write_each_incident_once_and_ticket_it_once(
    kafka_bootstrap: str,
    new_topic: NewTopic,
    new_group: str,
    redis_url: str,
    fakes: tuple[FakeSlack, FakeJira, FakeLinear],
    tmp_path: Path,
) -> None:
    slack, jira, linear = fakes
    seed = int(os.environ.get("PAREIS_CRASH_SEED", str(random.SystemRandom().randrange(1 << 30))))
    rng = random.Random(seed)
    topics = role_topics(new_topic, PARTITIONS)
    env = stack_env(
        kafka_bootstrap,
        new_group,
        topics,
        redis_url,
        {
            "PAREIS_RUNTIME__BATCH_SIZE": "20",
            "PAREIS_RUNTIME__COMMIT_EVERY": "40",
            "PAREIS_RUNTIME__COMMIT_INTERVAL_MS": "300",
            "PAREIS_RUNTIME__BATCH_TIMEOUT_S": "0.05",
            "PAREIS_RUNTIME__BACKOFF_MAX_S": "1",
            "PAREIS_RUNTIME__SESSION_TIMEOUT_MS": "10000",
            "PAREIS_RUNTIME__STATIC_MEMBERSHIP": "true",
            "PAREIS_RUNTIME__INSTANCE_ID": "crash",
            "PAREIS_RUNTIME__HTTP_HOST": "127.0.0.1",
            **ticket_env(slack, jira, linear),
            "PAREIS_LOG_JSON": "true",
        },
    )
    logs = Path(os.environ.get("PAREIS_CRASH_LOGS", str(tmp_path)))
    logs.mkdir(parents=True, exist_ok=True)
    roles = {name: RoleProc(name, env, logs) for name in ("incidents", "effects")}
    client = redis.Redis.from_url(redis_url)
    history = RedisRunHistory(client)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True, "acks": "all"})
    kills: Counter[str] = Counter()
    mid_work: Counter[str] = Counter()
    inputs = {"incidents": topics["signals"], "effects": topics["effects"]}

    def uncommitted(name: str) -> bool:
        """Whether the role's group has input it has not committed: what a kill just now interrupted (the killed
        process commits nothing more). Read after the kill: the last record of each input partition + 1 against
        the group's committed offset (the effects topic is transactional: its end offsets count commit markers)."""
        ends: dict[int, int] = {}
        for message in read_committed(kafka_bootstrap, inputs[name]):
            ends[message.partition()] = max(ends.get(message.partition(), 0), message.offset() + 1)
        done = committed(kafka_bootstrap, f"{new_group}-{name}", inputs[name], PARTITIONS)
        return any(done[p] < end for p, end in ends.items())

    def signal(rnd: int, chunk: int) -> None:
        """Round ``rnd``'s runs of every ``KILLS_PER_ROUND``-th dataset from ``chunk``: recorded, then signalled."""
        for i in range(chunk, DATASETS, KILLS_PER_ROUND):
            _, passed, rows = script(i)[rnd - 1]
            when = T0 + rnd * STEP
            result = ResultType.SUCCESS if passed else ResultType.FAILURE
            run = AssertionRun(f"urn:li:assertion:crash-{i}", when, result, dataset(i), f"r{rnd}", rows)
            history.record(run)
            producer.produce(topics["signals"], encode(RunSignal(dataset(i), run, when)), dataset(i).encode())
        assert producer.flush(30) == 0

    def kill_somewhere(rnd: int, chunk: int) -> None:
        """Signal a chunk of the round, and kill a randomly chosen ready role while it works on it: once it has
        handled some of the chunk (or its output), at a random moment soon after. A role with nothing to do in
        this chunk (effects after a passing round) is killed idle after a short wait."""
        name = rng.choice(sorted(roles))
        role = roles[name]
        wait_until(role.ready, 90, f"{name} ready (seed {seed})", every_s=0.1)
        before = role.handled()
        signal(rnd, chunk)
        deadline = time.monotonic() + 3
        while role.handled() <= before and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.2))  # the random kill point within the work, not a synchronisation
        role.kill()
        kills[name] += 1
        mid_work[name] += uncommitted(name)
        role.start()

    with ExitStack() as cleanup:
        cleanup.callback(client.close)
        for role in roles.values():
            role.start()
            cleanup.callback(lambda r=role: r.proc is not None and r.proc.poll() is None and r.kill())
        for rnd in range(1, 7):
            for chunk in range(KILLS_PER_ROUND):
                kill_somewhere(rnd, chunk)
        assert sum(kills.values()) >= 20 and set(kills) == {"incidents", "effects"}, kills
        # The kills landed mid-work: every role was killed holding input it had not committed, several times, and
        # half of all kills at least. A kill waits for the role's progress, so this holds on a slow machine too (a
        # kill at a random time within 0.6 s of the signal missed the work on a loaded CI machine: 6 of 24).
        assert all(mid_work[name] >= 2 for name in kills), (kills, mid_work, seed)
        assert sum(mid_work.values()) * 2 >= sum(kills.values()), (kills, mid_work, seed)

        expected = expected_incidents()
        assert len(expected) == DATASETS + DATASETS // 4

        def all_closed() -> bool:
            try:
                found = tickets_by_incident(slack, jira, linear)
            except RuntimeError:  # a fake server changed its tickets while we read them: look again
                return False
            return set(found) == expected and all(len(t) >= 3 and all(c for _, c in t) for t in found.values())

        wait_until(all_closed, 300, f"every incident's tickets closed (seed {seed})", every_s=0.5)
        for name, role in roles.items():
            wait_until(role.ready, 90, f"{name} ready to stop", every_s=0.1)  # a graceful stop needs its handlers
            assert role.stop() == 0, f"{name} did not stop cleanly; see {logs}"

    found = tickets_by_incident(slack, jira, linear)
    assert set(found) == expected
    for urn, tickets in found.items():
        assert sorted(tool for tool, _ in tickets) == ["jira", "linear", "slack"], (urn, tickets, seed)
        assert all(closed for _, closed in tickets)
    # One comment per update and one close text per incident per tool, under the kills: no effect id twice, and
    # every tool has as many comments as the others (at least the close's text).
    for urn, by_tool in comments_by_incident(slack, jira, linear).items():
        counts = {tool: len(ids) for tool, ids in by_tool.items()}
        assert all(len(set(ids)) == len(ids) for ids in by_tool.values()), (urn, by_tool, seed)
        assert len(set(counts.values())) == 1 and min(counts.values()) >= 1, (urn, counts, seed)

    decoder = Decoder(VendoredSchemaSource())
    infos: dict[str, list[tuple[str, str]]] = defaultdict(list)
    writes: Counter[tuple[str, str, str]] = Counter()
    for message in read_committed(kafka_bootstrap, topics["mcp"]):
        change = decoder.decode_mcp(message.value())
        effect = ((change.system_metadata or {}).get("properties") or {}).get("pareisEffectId", "")
        writes[(effect, str(change.entity_urn), str(change.aspect_name))] += 1
        if change.aspect_name == "incidentInfo":
            infos[str(change.entity_urn)].append((effect, change.aspect_json()["status"]["state"]))
    assert set(infos) == expected, f"seed {seed}"
    for urn, written in infos.items():
        # A new incident's Open is its revision 0 (DESIGN §3 effect ids); its Resolve the last write.
        opens = [state for effect, state in written if effect == effect_id(urn, "open", 0)]
        states = [state for _, state in written]
        assert opens == ["ACTIVE"] and states[0] == "ACTIVE", (urn, written, seed)
        assert states.count("RESOLVED") == 1 and states[-1] == "RESOLVED", (urn, written, seed)
    duplicated = [key for key, n in writes.items() if n > 1 and not key[0].startswith("definitions")]
    assert not duplicated, f"proposals written more than once (seed {seed}): {duplicated[:5]}"
