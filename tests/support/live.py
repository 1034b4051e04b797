"""Running Pareis as real processes against the local stack, from a test, and reading back what it did.

* :class:`RoleProc` — ``pareis run <role>`` (``all`` for every role) as a subprocess configured by ``PAREIS_*``
  variables, with its own telemetry port (readiness) and log file; kill, restart, SIGTERM.
* :func:`log_events` — the JSON log lines of a role's log file with a given event.
* :func:`pareis` — a ``pareis`` command run to its end with given settings, its output captured.
* :func:`role_env` — this process's environment without any ``PAREIS_*`` variable, plus the given settings;
  :func:`ticket_env` — the settings pointing the three ticket tools at the fake servers of :func:`ticket_servers`.
* :func:`role_topics` / :func:`stack_env` — a fresh topic for each topic setting the roles read or write (and a
  one-partition dead-letter topic), and the settings that point ``pareis run`` at them, its group and its Redis.
* :func:`private_db` — a flushed Redis database of the test's own (the shared one is flushed by other tests).
* :func:`read_committed` — everything a ``read_committed`` consumer reads from a topic, to its end.
* :func:`tickets_by_incident` — incident URN → the tickets each fake server holds for it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import redis
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from tests.support.fake_jira import FakeJira
from tests.support.fake_linear import TEAM_ID, FakeLinear
from tests.support.fake_slack import CHANNEL_ID, FakeSlack
from tests.support.roles import free_port
from tests.support.stack import read_to_end

ROOT = Path(__file__).resolve().parents[2]
INCIDENT_URN = re.compile(r"urn:li:incident:pareis-[0-9a-f]{32}")


class RoleProc:
    """``pareis run <role>`` as a subprocess, with its own telemetry port (readiness) and log file."""

    def __init__(self, role: str, env: dict[str, str], logs: Path) -> None:
        self.role, self.env, self.logs = role, env, logs
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.logs / f"{self.role}-{self.starts}.log"

    def start(self) -> None:
        self.port = free_port()
        self.starts += 1
        env = {**self.env, "PAREIS_RUNTIME__HTTP_PORT": str(self.port)}
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pareis.cli", "run", self.role],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.role} exited with {self.proc.returncode}; see {self.logs}")
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    def handled(self) -> float:
        """Messages this process has handled so far (its ``pareis_messages_handled`` counters summed; 0 while its
        telemetry is not up). A batch counts once it is in the open transaction, before its commit."""
        return self.metric("pareis_messages_handled_total")

    def metric(self, name: str) -> float:
        """Every series of metric ``name`` (a counter's ``_total``, a histogram's ``_count``) of this process summed;
        0 while its telemetry is not up."""
        try:
            text = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5).text
        except httpx.TransportError:
            return 0.0
        series = (line for line in text.splitlines() if line.startswith(name + "{"))
        return sum(float(line.rsplit(" ", 1)[1]) for line in series)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(30)

    def stop(self, timeout_s: float = 60) -> int:
        """SIGTERM, then the exit code (``subprocess.TimeoutExpired`` after ``timeout_s``)."""
        assert self.proc is not None
        self.proc.terminate()
        return self.proc.wait(timeout_s)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return f"(no log at {self.log_path})"
        return f"---- last {lines} lines of {self.log_path} ----\n" + "\n".join(text.splitlines()[-lines:])


def pareis(args: list[str], env: Mapping[str, str], timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """``pareis ARGS…`` run to its end with ``env`` (e.g. :func:`stack_env`'s), its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "pareis.cli", *args],
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def log_events(path: Path, name: str) -> list[dict[str, Any]]:
    """The JSON lines of the log at ``path`` whose event is ``name``."""
    lines = path.read_text(errors="replace").splitlines()
    return [e for e in (json.loads(line) for line in lines if line.startswith("{")) if e.get("event") == name]


def private_db(url: str, db: int) -> str:
    """``url`` on database ``db``, flushed. The shared test database is flushed by every other test that asks for
    it, and other tests may run at the same time as a long one."""
    private = urlunsplit(urlsplit(url)._replace(path=f"/{db}"))
    with redis.Redis.from_url(private) as client:
        client.flushdb()
    return private


def role_env(settings: Mapping[str, str]) -> dict[str, str]:
    """This process's environment minus every ``PAREIS_*`` variable, plus ``settings``, with the repo on the path."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("PAREIS_")}
    return {**base, **settings, "PYTHONPATH": str(ROOT)}


ROLE_TOPICS = ("mcl_versioned", "mcl_timeseries", "mcp", "signals", "effects", "gate")


def role_topics(new_topic: Callable[[int], str], partitions: int) -> dict[str, str]:
    """Topic setting name → a fresh topic of ``partitions`` partitions, for every topic the roles use; ``dlq``
    gets one partition (dead letters are read in order)."""
    topics = {name: new_topic(partitions) for name in ROLE_TOPICS}
    topics["dlq"] = new_topic(1)
    return topics


def stack_env(
    bootstrap: str, group: str, topics: Mapping[str, str], redis_url: str, settings: Mapping[str, str]
) -> dict[str, str]:
    """:func:`role_env` of the settings every live test gives (the broker, ``group`` as the group and
    transactional-id prefix, ``topics``, Redis) plus ``settings``."""
    return role_env(
        {
            "PAREIS_KAFKA__BOOTSTRAP_SERVERS": bootstrap,
            "PAREIS_KAFKA__GROUP_PREFIX": group,
            "PAREIS_KAFKA__TRANSACTIONAL_ID_PREFIX": group,
            **{f"PAREIS_KAFKA__TOPICS__{name.upper()}": topic for name, topic in topics.items()},
            "PAREIS_REDIS_URL": redis_url,
            **settings,
        }
    )


@contextmanager
def ticket_servers() -> Iterator[tuple[FakeSlack, FakeJira, FakeLinear]]:
    """The fake Slack, Jira and Linear servers, running in this process. Slack runs on the real clock (the roles
    read theirs) with room for 600 history or replies reads a minute (a Marketplace app has 50+):
    a run with dozens of kills recovers dozens of lost answers; the unit tests hold the once-a-minute limits of
    other apps."""
    with FakeSlack(clock=time.time, reads_per_minute=600) as slack, FakeJira() as jira, FakeLinear() as linear:
        yield slack, jira, linear


def ticket_env(slack: FakeSlack, jira: FakeJira, linear: FakeLinear) -> dict[str, str]:
    """``PAREIS_TICKETS__*`` settings for all three tools, against the fake servers."""
    return {
        "PAREIS_TICKETS__SLACK__TOKEN": slack.token,
        "PAREIS_TICKETS__SLACK__CHANNEL": CHANNEL_ID,
        "PAREIS_TICKETS__SLACK__BASE_URL": slack.url + "/api/",
        "PAREIS_TICKETS__JIRA__URL": jira.url,
        "PAREIS_TICKETS__JIRA__EMAIL": "bot@example.com",
        "PAREIS_TICKETS__JIRA__TOKEN": "jira-token",
        "PAREIS_TICKETS__JIRA__PROJECT": "PAR",
        "PAREIS_TICKETS__LINEAR__API_KEY": linear.api_key,
        "PAREIS_TICKETS__LINEAR__TEAM_ID": TEAM_ID,
        "PAREIS_TICKETS__LINEAR__URL": linear.url + "/graphql",
    }


def tickets_by_incident(slack: FakeSlack, jira: FakeJira, linear: FakeLinear) -> dict[str, list[tuple[str, bool]]]:
    """incident URN → [(tool, closed)] for every ticket each fake server holds.

    Raises RuntimeError when a fake server changes its tickets during the read: read again.
    """
    found: dict[str, list[tuple[str, bool]]] = defaultdict(list)
    for message in slack.top_level():
        payload = message["metadata"]["event_payload"]
        found[payload["incident_urn"]].append(("slack", payload["status"] == "resolved"))
    for issue in jira.issues.values():
        (urn,) = set(INCIDENT_URN.findall(json.dumps(issue["fields"]["description"])))
        found[urn].append(("jira", issue["fields"]["status"]["statusCategory"]["key"] == "done"))
    for issue in linear.issues.values():
        (urn,) = set(INCIDENT_URN.findall(issue.get("description") or ""))
        found[urn].append(("linear", issue["state"]["type"] == "completed"))
    return found


def comments_by_incident(slack: FakeSlack, jira: FakeJira, linear: FakeLinear) -> dict[str, dict[str, list[str]]]:
    """incident URN → tool → the effect id each comment on its ticket carries (Slack's reply metadata, Jira's
    comment property, Linear's client-chosen comment id), in order: a comment posted twice shows as a repeat."""
    found: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for message in slack.top_level():
        urn = message["metadata"]["event_payload"]["incident_urn"]
        found[urn]["slack"] = [
            str(((r.get("metadata") or {}).get("event_payload") or {}).get("effect_id"))
            for r in slack.replies(message["ts"])
        ]
    for issue in jira.issues.values():
        (urn,) = set(INCIDENT_URN.findall(json.dumps(issue["fields"]["description"])))
        found[urn]["jira"] = [
            str(next((p["value"].get("effect_id") for p in c.get("properties", []) if p["key"] == "pareis"), None))
            for c in issue["comments"]
        ]
    for issue in linear.issues.values():
        (urn,) = set(INCIDENT_URN.findall(issue.get("description") or ""))
        found[urn]["linear"] = [c["id"] for c in linear.comments if c["issueId"] == issue["id"]]
    return found


def read_committed(bootstrap: str, topic: str, partitions: int, timeout: float = 120) -> list[Any]:
    """Every record of ``topic`` (``partitions`` partitions) a ``read_committed`` consumer reads to the end (the
    last stable offset), read by assignment: no group, no rebalance."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    try:
        return read_to_end(consumer, partitions, timeout=timeout)
    finally:
        consumer.close()
