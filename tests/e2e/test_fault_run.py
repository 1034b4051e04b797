"""The combined fault run (issue 11, "Done means"): the incidents and effects roles as real ``pareis run`` processes
on the local broker and Redis, the fake Slack, Jira and Linear servers of tests/support, and every fault at once:

* the incidents role's output partitions (the effects topic) unavailable for longer than the delivery timeout,
  then back: the topic is deleted once the effects role has consumed and committed all of it, updates are
  signalled while it is gone (each transaction carrying their effects is aborted and redone, again and again),
  and it is created again;
* the ticket servers, at every step of every operation (open, comment, close) of every tool, first apply the
  request and drop the answer, then apply it and answer 500, refuse it with 429 and with 503, and hang past the
  client's timeout; the lookups a lost answer leads to are refused once too; and a random share of every other
  request is refused or applied-then-dropped.

It ends with zero lost signals (every signal's incident opened, updated and resolved, every input committed) and
zero dead letters, and exactly one ticket, one comment per update and one close per incident per tool. Outputs
are read to their end offsets, never after a quiet period.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from pareis.core.incident_urn import effect_id, incident_urn
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.roles.messages import RunSignal, encode
from pareis.store.runs_redis import RedisRunHistory
from tests.support import live
from tests.support.fake_http import FakeServer, Recorded
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
from tests.support.roles import caught_up, committed, wait_until
from tests.support.stack import NewTopic, create_topic, delete_topics

pytestmark = pytest.mark.e2e

DATASETS = 12
PARTITIONS = 2
T0 = 1_767_225_600_000  # 2026-01-01
STEP = 3_600_000
DELIVERY_TIMEOUT_MS = 3000
HANG_S = 7.0  # past the ticket clients' 5 s read timeout


def dataset(i: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,faults.table_{i:03d},PROD)"


def script(i: int) -> list[tuple[bool, int | None]]:
    """(passed, failed rows) of dataset ``i``'s one assertion, rounds 1–6: an incident opened on round 2, updated
    on round 3 (more failed rows), resolved on round 4; every third dataset fails again on round 5 (a second
    incident) and heals on round 6."""
    again = i % 3 == 0
    return [(True, None), (False, 10), (False, 20), (True, None), (not again, 5 if again else None), (True, None)]


def expected() -> dict[str, int]:
    """Incident URN → the comments each tool must hold on its ticket: one per update and the close's text."""
    out: dict[str, int] = {}
    for i in range(DATASETS):
        current, previous = "", None
        for rnd, (passed, rows) in enumerate(script(i), start=1):
            if not passed and (previous is None or previous[0]):
                current = incident_urn(dataset(i), T0 + rnd * STEP)
                out[current] = 1  # the close's text
            elif not passed and previous is not None and rows != previous[1]:
                out[current] += 1  # an update
            previous = (passed, rows)
    return out


# --- ticket faults ---------------------------------------------------------------------------------------------
def _body(request: Recorded) -> dict[str, Any]:
    try:
        parsed = request.json()
    except ValueError:
        return request.form()
    return parsed if isinstance(parsed, dict) else {}


def slack_step(request: Recorded) -> str | None:
    if request.path == "/api/chat.postMessage":
        return "comment" if _body(request).get("thread_ts") else "open"
    if request.path == "/api/chat.update":
        return "close"
    if request.path in ("/api/conversations.history", "/api/conversations.replies"):
        return "lookup"
    return None


def jira_step(request: Recorded) -> str | None:
    if request.method == "POST" and request.path == "/rest/api/3/issue":
        return "open"
    if request.method == "POST" and request.path.endswith("/comment"):
        return "comment"
    if request.path.endswith("/transitions"):
        return "close"
    if request.method == "GET" and request.path.startswith("/rest/api/3/issue/"):
        return "lookup"
    return None


def linear_step(request: Recorded) -> str | None:
    query = str(_body(request).get("query", ""))
    for name, step in (
        ("PareisIssueCreate", "open"),
        ("PareisCommentCreate", "comment"),
        ("PareisIssueUpdate", "close"),
        ("PareisCompletedStates", "close"),
        ("PareisIssueFind", "lookup"),
        ("PareisCommentFind", "lookup"),
    ):
        if name in query:
            return step
    return None


STEPS = ("open", "comment", "close")
KINDS = ("applied, answer lost", "applied, 500", "429", "503", "hang")


@dataclass
class Faults:
    """The faults injected into one fake server, and which of them were played on which step."""

    tool: str
    server: FakeServer
    step_of: Callable[[Recorded], str | None]
    rng: random.Random
    played: Counter[tuple[str, str]] = field(default_factory=Counter)

    def when(self, step: str, kind: str, share: float = 1.0) -> Callable[[Recorded], bool]:
        def matches(request: Recorded) -> bool:
            if self.step_of(request) != step or (share < 1.0 and self.rng.random() >= share):
                return False
            self.played[(step, kind)] += 1  # the server plays the first fault that matches: this one
            return True

        return matches

    def inject(self) -> None:
        server = self.server
        for step in STEPS:  # each kind once, in this order, on the first requests of each step
            server.apply_then_fail(502, lost=True, when=self.when(step, KINDS[0]))
            server.apply_then_fail(500, when=self.when(step, KINDS[1]))
            server.fail_next(429, retry_after="1", when=self.when(step, KINDS[2]))
            server.fail_next(503, when=self.when(step, KINDS[3]))
            server.hang_next(HANG_S, when=self.when(step, KINDS[4]))
        server.fail_next(429, retry_after="1", when=self.when("lookup", "429"))
        for step in STEPS:  # then a share of every later request
            server.apply_then_fail(502, lost=True, times=10**6, when=self.when(step, "random lost", 0.08))
            server.fail_next(503, times=10**6, when=self.when(step, "random 503", 0.08))

    def every_step_faulted(self) -> list[str]:
        return [f"{self.tool} {step}: {kind}" for step in STEPS for kind in KINDS if not self.played[(step, kind)]]


@pytest.fixture
def fakes() -> Iterator[tuple[FakeSlack, FakeJira, FakeLinear]]:
    with ticket_servers() as servers:
        yield servers


def metric(role: RoleProc, name: str) -> float:
    try:
        text = httpx.get(f"http://127.0.0.1:{role.port}/metrics", timeout=5).text
    except httpx.TransportError:
        return -1.0
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name) and line[len(name) : len(name) + 1] in ("{", " ")
    )


def log_events(role: RoleProc, name: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted(role.logs.glob(f"{role.role}-*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("{") and json.loads(line).get("event") == name:
                found.append(json.loads(line))
    return found


def test_every_fault_at_once_loses_nothing_and_tickets_each_incident_once(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    new_topic: NewTopic,
    new_group: str,
    redis_url: str,
    fakes: tuple[FakeSlack, FakeJira, FakeLinear],
    tmp_path: Path,
) -> None:
    slack, jira, linear = fakes
    seed = random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    plans = [
        Faults("slack", slack, slack_step, rng),
        Faults("jira", jira, jira_step, rng),
        Faults("linear", linear, linear_step, rng),
    ]
    for plan in plans:
        plan.inject()
    topics = role_topics(new_topic, PARTITIONS)
    properties = {
        "message.timeout.ms": str(DELIVERY_TIMEOUT_MS),  # the delivery timeout the outage outlasts
        "allow.auto.create.topics": "false",  # a deleted topic stays deleted until it is created again
        "topic.metadata.propagation.max.ms": "1000",
        "topic.metadata.refresh.interval.ms": "2000",  # the effects role sees the topic again within seconds
    }
    env = stack_env(
        kafka_bootstrap,
        new_group,
        topics,
        redis_url,
        {
            "PAREIS_KAFKA__PROPERTIES": json.dumps(properties),
            "PAREIS_RUNTIME__BATCH_SIZE": "20",
            "PAREIS_RUNTIME__COMMIT_EVERY": "40",
            "PAREIS_RUNTIME__COMMIT_INTERVAL_MS": "300",
            "PAREIS_RUNTIME__BATCH_TIMEOUT_S": "0.05",
            "PAREIS_RUNTIME__BACKOFF_MAX_S": "1",
            "PAREIS_RUNTIME__SESSION_TIMEOUT_MS": "10000",
            "PAREIS_RUNTIME__HTTP_HOST": "127.0.0.1",
            **ticket_env(slack, jira, linear),
            "PAREIS_LOG_JSON": "true",
        },
    )
    roles = {name: RoleProc(name, env, tmp_path) for name in ("incidents", "effects")}
    client = redis.Redis.from_url(redis_url)
    history = RedisRunHistory(client)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True, "acks": "all"})
    want = expected()
    first = {incident_urn(dataset(i), T0 + 2 * STEP) for i in range(DATASETS)}

    def signal_round(rnd: int) -> None:
        for i in range(DATASETS):
            passed, rows = script(i)[rnd - 1]
            when = T0 + rnd * STEP
            result = ResultType.SUCCESS if passed else ResultType.FAILURE
            run = AssertionRun(f"urn:li:assertion:faults-{i}", when, result, dataset(i), f"r{rnd}", rows)
            history.record(run)
            producer.produce(topics["signals"], encode(RunSignal(dataset(i), run, when)), dataset(i).encode())
        assert producer.flush(30) == 0

    def tickets() -> dict[str, list[tuple[str, bool]]]:
        try:
            return tickets_by_incident(slack, jira, linear)
        except RuntimeError:  # a fake server changed its tickets while we read them: look again
            return {}

    def effects_consumed() -> bool:
        """The effects role has committed every record of the effects topic (its last offset + 1 or past)."""
        ends: dict[int, int] = defaultdict(int)
        for message in live.read_committed(kafka_bootstrap, topics["effects"], PARTITIONS):
            ends[message.partition()] = max(ends[message.partition()], message.offset() + 1)
        done = committed(kafka_bootstrap, f"{new_group}-effects", topics["effects"], PARTITIONS)
        return bool(ends) and all(done[p] >= end for p, end in ends.items())

    with ExitStack() as cleanup:
        cleanup.callback(client.close)
        for role in roles.values():
            role.start()
            cleanup.callback(lambda r=role: r.proc is not None and r.proc.poll() is None and r.kill())
        for role in roles.values():
            wait_until(role.ready, 90, f"{role.role} ready", every_s=0.2)

        # Rounds 1–2: every incident opened in every tool, under the open step's faults.
        signal_round(1)
        signal_round(2)

        def opened() -> bool:
            found = tickets()
            return all(sorted(tool for tool, _ in found.get(urn, [])) == ["jira", "linear", "slack"] for urn in first)

        wait_until(opened, 240, f"every first incident opened in every tool (seed {seed})", every_s=0.5)
        wait_until(effects_consumed, 120, "the effects role committed every effect so far", every_s=0.5)

        # The output partitions unavailable for longer than the delivery timeout: round 3's updates are signalled
        # while the effects topic is gone; every transaction carrying their effects is aborted and redone.
        delete_topics(kafka_admin, [topics["effects"]])
        gone = time.monotonic()
        signal_round(3)

        def alive() -> None:
            for role in roles.values():
                assert role.proc is not None and role.proc.poll() is None, f"{role.role} exited; see {tmp_path}"

        def refused() -> bool:
            alive()
            # Records for the topic fail at produce time (librdkafka knows it is gone) or in their delivery
            # report, and abort their transaction: either way the role backs off, rewinds and redoes.
            failed = [e for e in log_events(roles["incidents"], "retriable failure; backing off")
                      if topics["effects"] in e["error"]]  # fmt: skip
            rewound = log_events(roles["incidents"], "rewound to committed offsets")
            return len(failed) >= 3 and len(rewound) >= 3

        wait_until(refused, 120, "the incidents role's transactions aborted and rewound, three times", every_s=0.5)
        wait_until(lambda: time.monotonic() - gone > 3 * DELIVERY_TIMEOUT_MS / 1000, 30, "three delivery timeouts")
        assert not tickets_with_comments(slack, jira, linear), "an update delivered while its topic was gone"
        create_topic(kafka_admin, topics["effects"], PARTITIONS, {})
        outage_s = time.monotonic() - gone

        # Rounds 4–6: the closes, a second incident on every third dataset and its close, under their faults.
        for rnd in (4, 5, 6):
            signal_round(rnd)

        def all_done() -> bool:
            alive()
            found = tickets()
            if set(found) != set(want) or not all(len(t) == 3 and all(c for _, c in t) for t in found.values()):
                return False
            comments = comments_by_incident(slack, jira, linear)
            return all(len(ids) >= want[urn] for urn, by in comments.items() for ids in by.values())

        wait_until(all_done, 300, f"every incident ticketed, commented and closed (seed {seed})", every_s=0.5)
        wait_until(lambda: caught_up(kafka_bootstrap, f"{new_group}-incidents", topics["signals"], PARTITIONS), 60,
                   "every signal committed")  # fmt: skip
        wait_until(effects_consumed, 120, "every effect committed", every_s=0.5)
        dead = {name: metric(role, "pareis_messages_dead_lettered_total") for name, role in roles.items()}
        for name, role in roles.items():
            assert role.stop() == 0, f"{name} did not stop cleanly; see {tmp_path}"

    assert outage_s > DELIVERY_TIMEOUT_MS / 1000
    missing = [gap for plan in plans for gap in plan.every_step_faulted()]
    assert not missing, f"faults never played (seed {seed}): {missing}"
    assert dead == {"incidents": 0.0, "effects": 0.0}, dead
    assert live.read_committed(kafka_bootstrap, topics["dlq"], 1) == [], "dead letters"

    found = tickets_by_incident(slack, jira, linear)
    assert set(found) == set(want)
    for urn, held in found.items():
        assert sorted(tool for tool, _ in held) == ["jira", "linear", "slack"], (urn, held, seed)
        assert all(closed for _, closed in held), (urn, held, seed)
    for urn, by_tool in comments_by_incident(slack, jira, linear).items():
        for tool, ids in by_tool.items():
            assert len(ids) == len(set(ids)) == want[urn], (urn, tool, ids, seed)

    decoder = Decoder(VendoredSchemaSource())
    infos: dict[str, list[tuple[str, str]]] = defaultdict(list)
    writes: Counter[tuple[str, str, str]] = Counter()
    for message in live.read_committed(kafka_bootstrap, topics["mcp"], PARTITIONS):
        change = decoder.decode_mcp(message.value())
        effect = ((change.system_metadata or {}).get("properties") or {}).get("pareisEffectId", "")
        writes[(effect, str(change.entity_urn), str(change.aspect_name))] += 1
        if change.aspect_name == "incidentInfo":
            infos[str(change.entity_urn)].append((effect, change.aspect_json()["status"]["state"]))
    assert set(infos) == set(want)
    for urn, written in infos.items():
        opens = [state for effect, state in written if effect == effect_id(urn, "open", 0)]
        states = [state for _, state in written]
        assert opens == ["ACTIVE"] and states.count("RESOLVED") == 1 and states[-1] == "RESOLVED", (urn, written)
    duplicated = [key for key, n in writes.items() if n > 1 and not key[0].startswith("definitions")]
    assert not duplicated, f"proposals written more than once: {duplicated[:5]}"


def tickets_with_comments(slack: FakeSlack, jira: FakeJira, linear: FakeLinear) -> list[str]:
    """Incidents whose ticket holds a comment in some tool (none before the first update is delivered)."""
    return [urn for urn, by in comments_by_incident(slack, jira, linear).items() if any(by.values())]
