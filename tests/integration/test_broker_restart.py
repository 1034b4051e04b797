"""A broker restart under load (issue 34): the incidents role — exactly-once, `pareis run incidents` — is handling
signals again within 30 s of the broker coming back.

Before, its thread blocked for ever in librdkafka's ``send_offsets_to_transaction`` after the restart (the timeout
passed was not honoured; confluent-kafka 2.16.1 and 2.16.2 alike), with no log line, ``/readyz`` 200 and
``/healthz`` failing only after 300 s: six minutes without an incident raised or resolved. Now every blocking Kafka
call has a deadline the role enforces itself: past it the role goes not-ready, says so in one line and exits (1),
and is started again — here by the test, as Kubernetes would — from its committed offsets.

The broker is this test's own (:class:`tests.support.broker.ThrowawayBroker`: ``deploy/local/kafka.sh`` on free
ports), so stopping it disturbs no other test.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from confluent_kafka import Producer

from pareis.core.runs import AssertionRun, ResultType
from pareis.roles.messages import RunSignal, encode
from pareis.store.runs_redis import RedisRunHistory
from tests.support.broker import ThrowawayBroker
from tests.support.live import RoleProc, log_events, stack_env
from tests.support.roles import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RECOVERY_S = 30.0
DATASETS = 5
PARTITIONS = 2
GRACE_S = 20.0
BLOCKED = "kafka call blocked past its deadline; exiting so that the role restarts from its committed offsets"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ThrowawayBroker]:
    with ThrowawayBroker(tmp_path / "broker") as node:
        yield node


def dataset(i: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,restart.table_{i:03d},PROD)"


class Load:
    """Signals for ``DATASETS`` datasets, round after round (each dataset failing, then passing), on a thread of its
    own until stopped; each run recorded in the run history first, as the assertions role does."""

    def __init__(self, bootstrap: str, topic: str, redis_url: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.history = RedisRunHistory(redis.Redis.from_url(redis_url))
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="load", daemon=True)

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        rnd = 0
        while not self.stopped.is_set():
            rnd += 1
            when = 1_767_225_600_000 + rnd * 60_000
            for i in range(DATASETS):
                result = ResultType.FAILURE if rnd % 2 else ResultType.SUCCESS
                run = AssertionRun(f"urn:li:assertion:restart-{i}", when, result, dataset(i), f"r{rnd}", 1)
                self.history.record(run)
                producer.produce(self.topic, encode(RunSignal(dataset(i), run, when)), dataset(i).encode())
            producer.poll(0)
            self.stopped.wait(0.5)  # a steady stream (10 signals a second), through the outage too
        producer.flush(30)

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        self.thread.join(60)


def test_the_incidents_role_commits_again_within_30s_of_a_broker_restart(
    broker: ThrowawayBroker, new_group: str, redis_url: str, tmp_path: Path
) -> None:
    topics = {name: f"restart-{name}" for name in ("mcl_versioned", "mcl_timeseries", "mcp", "signals", "effects")}
    topics["dlq"] = "restart-dlq"
    env = stack_env(
        broker.bootstrap,
        new_group,
        topics,
        redis_url,
        {
            "PAREIS_KAFKA__TOPIC_PARTITIONS": str(PARTITIONS),
            "PAREIS_RUNTIME__BATCH_SIZE": "20",
            "PAREIS_RUNTIME__SHUTDOWN_GRACE_S": str(GRACE_S),
            "PAREIS_DATAHUB__WRITE_PATH": "kafka",
            "PAREIS_RUNTIME__INSTANCE_ID": "restart-0",  # the pod's name: kept across restarts
            "PAREIS_RUNTIME__HTTP_HOST": "127.0.0.1",
            "PAREIS_LOG_JSON": "true",
        },
    )
    role = RoleProc("incidents", env, tmp_path)
    exits: list[tuple[int, Path]] = []

    def running() -> RoleProc:
        """The role, started again at once when it has exited (as Kubernetes restarts a container)."""
        assert role.proc is not None
        code = role.proc.poll()
        if code is not None:
            exits.append((code, role.log_path))
            role.start()
        return role

    def commits() -> float:
        """Transactions the current process has committed (0 while its endpoint is not up)."""
        return role.metric("pareis_commit_duration_seconds_count")

    def committing(since: float, restarts: int) -> bool:
        """The role is ready and has committed transactions past ``since`` — or, started again since ``restarts``
        exits, any."""
        current = running()
        try:
            ready = current.ready()
        except AssertionError:  # exited between the two looks: the next look starts it again
            return False
        return ready and commits() > (since if len(exits) == restarts else 0)

    role.start()
    try:
        wait_until(lambda: running().ready(), 90, f"the incidents role ready\n{role.log_tail()}", every_s=0.2)
        with Load(broker.bootstrap, topics["signals"], redis_url):
            wait_until(lambda: running() and commits() >= 20, 90, "the role busy", every_s=0.2)
            broker.down()
            broker.up()
            back = time.monotonic()
            since, restarts = commits(), len(exits)
            try:
                wait_until(lambda: committing(since, restarts), RECOVERY_S, "the role committing again", every_s=0.2)
            except AssertionError as exc:
                if role.proc is not None and role.proc.poll() is None:
                    role.proc.send_signal(signal.SIGUSR1)  # faulthandler writes its stacks into its log
                    dumped = time.monotonic() + 5
                    while "most recent call first" not in role.log_tail(200) and time.monotonic() < dumped:
                        time.sleep(0.05)
                raise AssertionError(
                    f"no commit {RECOVERY_S:.0f}s after the broker came back\n{role.log_tail(80)}"
                ) from exc
            recovered_s = time.monotonic() - back
        # SIGTERM stops it within the shutdown budget: cleanly, or (a call blocked in the last commit) through the
        # watchdog.
        stopping = time.monotonic()
        code = role.stop(GRACE_S + 10)
        stopped_s = time.monotonic() - stopping
        exits.append((code, role.log_path))
    finally:
        if role.proc is not None and role.proc.poll() is None:
            role.kill()

    assert stopped_s <= GRACE_S + 2, f"SIGTERM took {stopped_s:.1f}s"
    # An exit other than the clean one is a call blocked past its deadline: exit 1 and one line saying so.
    for code, log in exits:
        if code != 0 or log != exits[-1][1]:
            assert code == 1, f"exit {code}; see {log}"
            (line,) = log_events(log, BLOCKED)
            assert line["call"] and line["blocked_s"] >= line["deadline_s"]
    print(f"committing again {recovered_s:.1f}s after the broker came back; exits {[code for code, _ in exits]}")
