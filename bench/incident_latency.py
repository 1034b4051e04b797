"""Incident latency: from an assertion FAILURE change-log entry produced on the real broker to the incident's
``incidentInfo`` proposal visible (``read_committed``) on the MetadataChangeProposal topic, through the real
runtime, with the lineage index of ``bench/blast.py`` loaded in Redis.

    .venv/bin/python bench/incident_latency.py                      # full blast scale, two runtime settings
    .venv/bin/python bench/incident_latency.py --scale 0.05 --incidents 150 --burst 100 --medium 10 --large 4
    .venv/bin/python bench/incident_latency.py --write-results      # and replace "## Incident latency" in RESULTS.md

**Index.** The generated graph of ``bench/blast.py`` (its generator, imported) goes through the lineage role's
handler into Redis (a dedicated database, default 7, flushed before and after with ``FLUSHDB ASYNC``, which does
not block the shared server), under the roles' default key prefixes. Then, for every dataset an incident will be
raised on, one ``assertionInfo`` (a column assertion on one random column) through the same handler, and one
SUCCESS run a day earlier straight into the run history, so each incident opens with a blind window. Not timed
as part of any latency.

**Incidents by blast class.** A blast from a column reaches that column in every dataset of its lineage tree
(see ``bench/blast.py``), so the incidents role's analysis costs what the tree's size makes it. Each phase draws
fresh datasets from one class: ``--incidents`` small ones (10-dataset trees; the headline, at least 1,000) paced
at ``--rate``, far below what the role processes; ``--medium`` (1,000) and ``--large`` (10,000) ones one at a
time, each produced once the previous one is visible (their analysis takes seconds: any fixed pace would
measure queueing); and a burst of ``--burst`` small ones produced at once (throughput: incidents / (last
incident visible − first produced), and latency under queueing).

**Pipeline.** ``pareis run assertions`` and ``pareis run incidents``, each in a subprocess of its own as the chart
deploys them (``--layout split``, the default; ``--layout shared``: ``pareis run assertions incidents``, both roles
in one process, a thread each, as recorded before 2026-12-07), the production entry point, with ``PAREIS_*``
environment pointing at fresh uuid-named topics of 3 partitions, fresh consumer groups and transactional ids, and
the Redis database. During the burst each process's CPU time is read from ``/proc`` (the scores role's until its
lag drained): CPU per incident per stage, and incidents per CPU-second of the incident path.
Per incident, this process produces one FAILURE ``assertionRunEvent`` MCL on the timeseries
topic (encoded by :class:`pareis.datahub.wire.codec.Encoder` as GMS frames it, keyed by the assertion URN, acks=all,
linger 0). One consumer thread in this process reads, ``read_committed``, the MCP topic, the signals topic (the
assertions role's output: the split into two hops) and the ping topics; a message's receive time is taken as
``poll`` returns it. Latency = receive time of the first record keyed by the incident's URN (``incidentInfo``,
the first of an Open's proposals; the URN is ``incident_urn(dataset, run timestamp)``, and every match is checked
by decoding it) − the time just before ``produce`` of its MCL, on one monotonic clock.

**Baselines, same run, same pace.** Half a period after each incident the same producer sends a trivial message
to a fresh topic (plain produce → ``read_committed`` consume: the broker round trip); a second thread sends one
every two periods in its own transaction (begin, produce, commit → consume: the floor of an exactly-once hop).
Both run during the small phase, for the ratio.

**The scores role.** With ``--scores process`` (the default, where the checkout has the role) ``pareis run scores``
runs beside the pipeline in a subprocess of its own, as its own Deployment would (its own group on the signals
topic, the same Redis), so it competes for the machine's cores as it does in production, never for the incidents
role's interpreter; after the burst, the time until its group has committed the end of the signals topic (its lag
drained) is measured from the burst's first send, before the next phase starts. ``--scores-instances N`` runs N
of them in one consumer group (the signals topic's partitions shared out), as the chart scales the role's
Deployment on its lag. ``--scores none`` runs no scores role (a checkout from before it computed the scores inside
the incidents role).

**Settings.** Each runtime setting (``--settings``) is one subprocess with fresh topics: ``default`` is
:class:`pareis.config.RuntimeSettings` as shipped (the incident path's roles have their own latency cadence);
``throughput`` gives the assertions and incidents roles the batch timeout and commit interval of the throughput
cadence instead (``--throughput-batch-timeout-s``, ``--throughput-commit-interval-ms``; by default the
process-wide values, which the lineage role runs with), through ``PAREIS_RUNTIME__ROLES__<ROLE>__…``. Per
setting: a warm-up (not counted; it also waits for the groups to form), then the phases. Results print as
Markdown; ``--write-results`` replaces the section.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import redis
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import blast
from bench.machine import cpu_model
from bench.results import record_section
from pareis.config import ROLE_NAMES, DatahubSettings, RoleTuning, RuntimeSettings
from pareis.contracts.records import Message
from pareis.core.incident_urn import incident_urn
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.wire.changelog import ChangeLog
from pareis.datahub.wire.codec import Decoder, Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.roles.exposure import ExposureMaintainer
from pareis.roles.lineage import LineageHandler
from pareis.store.exposure_redis import RedisExposureIndex
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.redis_epoch import Epoch
from pareis.store.runs_redis import RedisRunHistory

REPO = Path(__file__).resolve().parents[1]
PARTITIONS = 3
DAY_MS = 86_400_000
MARKER = b"bench:incident_latency:owner"
OWN_PREFIXES = (b"pareis:", MARKER)
CLASSES = ("small", "medium", "large")
ROLES = ("assertions", "incidents")


# --- the index -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """One incident to raise: a dataset of the graph, its assertion and the column the assertion checks."""

    k: int
    dataset: str
    assertion: str
    column: str
    cls: str


def targets(p: blast.Plan, counts: dict[str, int], seed: int) -> dict[str, list[Target]]:
    """Per blast class, ``counts[class]`` distinct datasets of that class's trees at random, each with an
    assertion on one random column of it."""
    rng = random.Random(seed)
    out: dict[str, list[Target]] = {}
    for name, trees in p.classes().items():
        pool = [start + i for start, size in trees for i in range(size)]
        chosen = []
        for k in rng.sample(pool, counts.get(name, 0)):
            j = rng.randrange(blast.COLUMNS)
            assertion = f"urn:li:assertion:bench-{k:06d}"
            chosen.append(Target(k, blast.dataset(k), assertion, blast.column(k, j), name))
        out[name] = chosen
    return out


def assertion_info(t: Target) -> dict[str, Any]:
    """A column assertion as DataHub models one (``datasetAssertion`` with ``fields``)."""
    return {
        "type": "DATASET",
        "datasetAssertion": {
            "dataset": t.dataset,
            "scope": "DATASET_COLUMN",
            "fields": [t.column],
            "aggregation": "IDENTITY",
            "operator": "NOT_NULL",
        },
        "source": {"type": "EXTERNAL"},
    }


def assertion_batches(ts: Sequence[Target]) -> Iterator[list[Message[ChangeLog]]]:
    """The targets' ``assertionInfo`` change-log entries, as the lineage role's decoder hands them over."""
    for i in range(0, len(ts), blast.BATCH):
        batch = []
        for offset, t in enumerate(ts[i : i + blast.BATCH], start=i):
            change = ChangeLog(
                entity_type="assertion",
                entity_urn=t.assertion,
                change_type="UPSERT",
                aspect_name="assertionInfo",
                aspect=orjson.dumps(assertion_info(t)),
                previous_aspect=None,
                system_metadata={"version": "1", "lastObserved": blast.T0, "runId": "bench"},
                created={"time": blast.T0, "actor": "urn:li:corpuser:datahub"},
                headers=None,
                schema_id=0,
            )
            batch.append(Message("MetadataChangeLog_Versioned_v1", 0, offset, t.assertion.encode(), change))
        yield batch


def dedicated(url: str) -> redis.Redis:
    """A client on ``url``'s database, flushed — only if it is empty or holds nothing but this benchmark's keys."""
    client = redis.Redis.from_url(url, socket_timeout=120)
    if client.dbsize() and not client.exists(MARKER):
        raise SystemExit(f"{url} holds keys this benchmark did not write; pick another database (--redis)")
    client.flushdb(asynchronous=True)  # a synchronous FLUSHDB of millions of keys blocks the server
    client.set(MARKER, "bench/incident_latency.py")
    return client


def load_index(client: redis.Redis, p: blast.Plan, ts: Sequence[Target], now_ms: int) -> tuple[int, float]:
    """Build the blast graph, the targets' assertions and their previous SUCCESS runs, then publish the exposure
    index as the lineage role's maintainer does; (aspects, seconds)."""
    lineage = RedisLineageStore(client)
    index = RedisExposureIndex(client)
    handler = LineageHandler(lineage, DatahubSettings(), exposure=index)
    started = time.perf_counter()
    aspects = 0
    for i, batch in enumerate(_all_batches(p, ts)):
        handler(batch)
        aspects += len(batch)
        if i % 50 == 0:
            print(f"\r  indexed {aspects:,} aspects", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    assert set(handler.outcomes) == {"applied"}, handler.outcomes
    history = RedisRunHistory(client)
    for t in ts:
        history.record(AssertionRun(t.assertion, now_ms - DAY_MS, ResultType.SUCCESS, t.dataset, "bench-ok"))
    publish_exposure(client, now_ms)
    # The epoch `pareis bootstrap` leaves on an index it loaded: without one, a role refuses an index it finds
    # already written (pareis.store.redis_epoch).
    Epoch(client, "the benchmark's database").rebuilt()
    return aspects, time.perf_counter() - started


def publish_exposure(client: redis.Redis, now_ms: int) -> None:
    """One step of the exposure maintainer (:mod:`pareis.roles.exposure`) over the loaded index: what the lineage
    role's process does beside its handler (``pareis run lineage``), which this benchmark does not run. Without a
    snapshot of the current lineage generation the incidents role's score publisher walks the exposure of every
    class it scores (a minute per model set at full scale), so a burst would measure that walk."""
    began = time.perf_counter()
    maintainer = ExposureMaintainer(RedisLineageStore(client), RedisExposureIndex(client), RedisRunHistory(client))
    made = maintainer.step(now_ms)
    assert made is not None, "the exposure index was not published"
    print(
        f"  exposure index published (version {made.version}) in {time.perf_counter() - began:,.1f} s", file=sys.stderr
    )


def _all_batches(p: blast.Plan, ts: Sequence[Target]) -> Iterator[list[Message[ChangeLog]]]:
    yield from blast.batches(p)
    yield from assertion_batches(ts)


# --- Kafka: topics, the pipeline subprocess, the clocks -------------------------------------------------------------
@dataclass(frozen=True)
class Topics:
    """Fresh uuid-named topics of one run of the pipeline."""

    timeseries: str
    signals: str
    mcp: str
    effects: str
    dlq: str
    versioned: str
    ping: str
    txn_ping: str
    gate: str

    @classmethod
    def fresh(cls) -> Topics:
        tag = uuid.uuid4().hex[:10]
        names = ("mcl-ts", "signals", "mcp", "effects", "dlq", "mcl-v", "ping", "txping", "gate")
        return cls(*(f"bench-il-{tag}-{name}" for name in names))

    def partitions(self) -> dict[str, int]:
        one = (self.dlq, self.versioned, self.ping, self.txn_ping)
        return {name: 1 if name in one else PARTITIONS for name in vars(self).values()}


def create_topics(admin: AdminClient, topics: Topics) -> None:
    futures = admin.create_topics([NewTopic(name, n, 1) for name, n in topics.partitions().items()])
    for future in futures.values():
        future.result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        meta = admin.list_topics(timeout=10).topics
        if all(name in meta and len(meta[name].partitions) == n for name, n in topics.partitions().items()):
            return
        time.sleep(0.1)
    raise TimeoutError("topics not visible in metadata")


def delete_topics(admin: AdminClient, topics: Topics) -> None:
    for future in admin.delete_topics(list(topics.partitions())).values():
        try:
            future.result(30)
        except KafkaException as exc:
            print(f"  could not delete a topic: {exc}", file=sys.stderr)


@dataclass(frozen=True)
class Setting:
    """A cadence of the two roles under test (``None``: as shipped, :class:`pareis.config.RuntimeSettings`)."""

    name: str
    batch_timeout_s: float | None = None
    commit_interval_ms: int | None = None

    def tuning(self) -> dict[str, str]:
        """The overrides, by ``RoleTuning`` field."""
        out = {}
        if self.batch_timeout_s is not None:
            out["batch_timeout_s"] = str(self.batch_timeout_s)
        if self.commit_interval_ms is not None:
            out["commit_interval_ms"] = str(self.commit_interval_ms)
        return out

    def env(self) -> dict[str, str]:
        return {
            f"PAREIS_RUNTIME__ROLES__{role.upper()}__{name.upper()}": value
            for role in ROLES
            for name, value in self.tuning().items()
        }

    def effective(self, role: str) -> RuntimeSettings:
        """What ``role`` runs with under this setting, as the runtime resolves it."""
        overrides = self.tuning()
        return RuntimeSettings(roles={r: RoleTuning.model_validate(overrides) for r in ROLES}).for_role(role)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Pipeline:
    """``pareis run assertions incidents`` (or ``roles``) in a subprocess over ``topics`` and the Redis database."""

    def __init__(
        self,
        bootstrap: str,
        redis_url: str,
        topics: Topics,
        setting: Setting,
        roles: Sequence[str] = ROLES,
        tag: str | None = None,
        instance: str | None = None,
    ) -> None:
        """``tag``: the consumer groups' prefix (a new one by default); ``instance``: the process's instance id among
        its roles' replicas (default ``tag``)."""
        tag = tag or uuid.uuid4().hex[:10]
        self.group_prefix = f"bench-il-{tag}"
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAREIS_")}
        env.update(
            {
                "PAREIS_KAFKA__BOOTSTRAP_SERVERS": bootstrap,
                "PAREIS_KAFKA__GROUP_PREFIX": f"bench-il-{tag}",
                "PAREIS_KAFKA__TRANSACTIONAL_ID_PREFIX": f"bench-il-{tag}",
                "PAREIS_KAFKA__TOPICS__MCL_VERSIONED": topics.versioned,
                "PAREIS_KAFKA__TOPICS__MCL_TIMESERIES": topics.timeseries,
                "PAREIS_KAFKA__TOPICS__MCP": topics.mcp,
                "PAREIS_KAFKA__TOPICS__SIGNALS": topics.signals,
                "PAREIS_KAFKA__TOPICS__EFFECTS": topics.effects,
                "PAREIS_KAFKA__TOPICS__DLQ": topics.dlq,
                "PAREIS_KAFKA__TOPICS__GATE": topics.gate,
                "PAREIS_REDIS_URL": redis_url,
                "PAREIS_RUNTIME__HTTP_HOST": "127.0.0.1",
                "PAREIS_RUNTIME__HTTP_PORT": str(self.port),
                "PAREIS_RUNTIME__INSTANCE_ID": instance or tag,
                "PAREIS_LOG_LEVEL": "WARNING",
                **setting.env(),
            }
        )
        self.log = tempfile.NamedTemporaryFile(prefix="incident-latency-", suffix=".log", delete=False)  # noqa: SIM115
        command = [sys.executable, "-m", "pareis.cli", "run", *roles]
        self.process = subprocess.Popen(command, cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def check(self) -> None:
        if self.process.poll() is not None:
            raise RuntimeError(f"the pipeline exited with {self.process.returncode}:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        return "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-lines:])

    def metrics(self) -> dict[str, float]:
        """Mean batch and commit seconds per role, from the process's ``/metrics``."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
        sums: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            if family.name in ("pareis_batch_duration_seconds", "pareis_commit_duration_seconds"):
                for sample in family.samples:
                    if sample.name.endswith(("_sum", "_count")):
                        kind = "batch" if "batch" in family.name else "commit"
                        sums[f"{sample.labels['role']}.{kind}{sample.name[sample.name.rfind('_') :]}"] = sample.value
        return sums

    def cpu_s(self) -> float:
        """CPU seconds (user + system) its process has used so far (Linux's ``/proc``; ``nan`` elsewhere)."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(40)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()


class Replicas:
    """``n`` instances of one role, each ``pareis run ROLE`` in a process of its own, in one consumer group: as the
    chart scales the role's Deployment."""

    def __init__(self, bootstrap: str, redis_url: str, topics: Topics, setting: Setting, role: str, n: int) -> None:
        tag = uuid.uuid4().hex[:10]
        self.parts = [
            Pipeline(bootstrap, redis_url, topics, setting, roles=(role,), tag=tag, instance=f"{tag}-{i}")
            for i in range(n)
        ]
        self.group_prefix = self.parts[0].group_prefix

    def check(self) -> None:
        for part in self.parts:
            part.check()

    def tail(self, lines: int = 30) -> str:
        return "\n".join(part.tail(lines) for part in self.parts)

    def metrics(self) -> dict[str, float]:
        """The instances' batch and commit sums and counts, added up."""
        out: dict[str, float] = {}
        for part in self.parts:
            for key, value in part.metrics().items():
                out[key] = out.get(key, 0.0) + value
        return out

    def cpu_s(self) -> float:
        """CPU seconds the instances have used so far, together."""
        return sum(part.cpu_s() for part in self.parts)

    def stop(self) -> None:
        for part in self.parts:
            part.stop()


class Pipelines:
    """The roles under test: ``pareis run assertions incidents`` (``shared``: one process, a thread per role, as
    before) or one process per role (``split``: as the chart deploys them, one Deployment per role)."""

    def __init__(self, bootstrap: str, redis_url: str, topics: Topics, setting: Setting, layout: str) -> None:
        groups = [ROLES] if layout == "shared" else [(role,) for role in ROLES]
        self.parts = {"+".join(g): Pipeline(bootstrap, redis_url, topics, setting, roles=g) for g in groups}

    def check(self) -> None:
        for part in self.parts.values():
            part.check()

    def tail(self, lines: int = 30) -> str:
        return "\n".join(f"[{name}]\n{part.tail(lines)}" for name, part in self.parts.items())

    def metrics(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for part in self.parts.values():
            out.update(part.metrics())
        return out

    def cpu_s(self) -> dict[str, float]:
        """CPU seconds used so far, per process (by the roles it runs)."""
        return {name: part.cpu_s() for name, part in self.parts.items()}

    def stop(self) -> None:
        for part in self.parts.values():
            part.stop()


def drained(
    bootstrap: str, group: str, topic: str, since: float, timeout_s: float, pipeline: Pipeline | Replicas
) -> float:
    """Seconds from ``since`` (a :func:`time.perf_counter` time) until ``group`` has committed the end of every
    partition of ``topic`` (its lag drained), looked at every 0.1 s; ``nan`` after ``timeout_s``."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-il-probe-{uuid.uuid4().hex[:8]}"})
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            pipeline.check()
            ends = {tp.partition: probe.get_watermark_offsets(tp, 10)[1] for tp in partitions}
            request = ConsumerGroupTopicPartitions(group, partitions)
            done = admin.list_consumer_group_offsets([request], request_timeout=10)[group].result(10)
            committed = {tp.partition: max(tp.offset, 0) for tp in done.topic_partitions}
            if committed == ends:
                return time.perf_counter() - since
            time.sleep(0.1)
    finally:
        probe.close()
    return float("nan")


def committed_reader(bootstrap: str, group_prefix: str) -> Consumer:
    """A consumer of its own group that reads ``read_committed`` from the beginning and commits nothing."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{group_prefix}-{uuid.uuid4().hex[:10]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )


class Receiver(threading.Thread):
    """Reads the MCP, signal and ping topics (``read_committed``, from the beginning) and notes when each key is
    first seen, on :func:`time.perf_counter`'s clock. Keeps the first incident-keyed value of each incident."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        super().__init__(name="receiver", daemon=True)
        self.consumer = committed_reader(bootstrap, "bench-il-reader")
        partitions = topics.partitions()
        wanted = (topics.mcp, topics.signals, topics.ping, topics.txn_ping)
        self.consumer.assign([TopicPartition(t, p, 0) for t in wanted for p in range(partitions[t])])
        self.mcp = topics.mcp
        self.seen: dict[tuple[str, bytes], float] = {}
        self.incidents: dict[bytes, bytes] = {}
        self.counts: dict[str, int] = dict.fromkeys(wanted, 0)
        self.halt = threading.Event()

    def run(self) -> None:
        seen, poll = self.seen, self.consumer.poll
        while not self.halt.is_set():
            message = poll(0.05)
            if message is None:
                continue
            now = time.perf_counter()
            if message.error() is not None:
                continue
            topic, key = message.topic() or "", message.key() or b""
            seen.setdefault((topic, key), now)
            self.counts[topic] = self.counts.get(topic, 0) + 1
            if topic == self.mcp and key.startswith(b"urn:li:incident:") and key not in self.incidents:
                self.incidents[key] = message.value() or b""
        self.consumer.close()

    def wait(self, keys: Sequence[tuple[str, bytes]], timeout_s: float, pipeline: Pipeline | Pipelines) -> int:
        """Wait until every key is seen (or the timeout); the number missing."""
        deadline = time.monotonic() + timeout_s
        while True:
            missing = sum(1 for k in keys if k not in self.seen)
            if not missing or time.monotonic() > deadline:
                return missing
            pipeline.check()
            time.sleep(0.05)


class TxnPinger(threading.Thread):
    """One trivial message per period in its own transaction (begin, produce, commit), noting the send time."""

    def __init__(self, bootstrap: str, topic: str, period_s: float) -> None:
        super().__init__(name="txn-pinger", daemon=True)
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": f"bench-il-ping-{uuid.uuid4().hex[:10]}"}
        )
        self.producer.init_transactions(30)
        self.topic, self.period_s = topic, period_s
        self.sent: dict[bytes, float] = {}
        self.halt = threading.Event()

    def run(self) -> None:
        i, start = 0, time.perf_counter()
        while not self.halt.is_set():
            key = f"t{i}".encode()
            sent = time.perf_counter()
            self.producer.begin_transaction()
            self.producer.produce(self.topic, b"", key)
            self.producer.commit_transaction(30)
            self.sent[key] = sent
            i += 1
            self.halt.wait(max(0.0, start + i * self.period_s - time.perf_counter()))


# --- one run of the pipeline ----------------------------------------------------------------------------------------
@dataclass
class Phase:
    """What one phase sent: per incident, its target, send time and incident URN; the pings it sent."""

    name: str
    incidents: list[tuple[Target, float, bytes]] = field(default_factory=list)
    pings: dict[bytes, float] = field(default_factory=dict)
    began: float = 0.0
    ended: float = 0.0


class Sender:
    """Produces FAILURE ``assertionRunEvent`` MCLs as GMS frames them (and the plain pings) to the broker."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "enable.idempotence": True}
        )
        self.encoder = Encoder(VendoredSchemaSource(topics.timeseries), topics.timeseries)
        self.topics = topics

    def incident(self, t: Target, seq: int) -> tuple[float, bytes]:
        """Produce ``t``'s FAILURE run now; (send time, the incident URN it must open)."""
        ts = time.time_ns() // 1_000_000
        event = {
            "timestampMillis": ts,
            "assertionUrn": t.assertion,
            "asserteeUrn": t.dataset,
            "runId": f"bench-{seq}",
            "status": "COMPLETE",
            "partitionSpec": {"type": "FULL_TABLE", "partition": "FULL_TABLE_SNAPSHOT"},
            "result": {"type": "FAILURE", "unexpectedCount": 42},
        }
        record = mcl_record(
            entity_urn=t.assertion,
            aspect_name="assertionRunEvent",
            aspect=event,
            system_metadata={"lastObserved": ts, "runId": f"bench-{seq}"},
            created={"time": ts, "actor": "urn:li:corpuser:datahub"},
        )
        value = self.encoder.encode_mcl(record)
        sent = time.perf_counter()
        self.producer.produce(self.topics.timeseries, value, t.assertion.encode())
        self.producer.poll(0)
        return sent, incident_urn(t.dataset, ts).encode()

    def ping(self, key: bytes) -> float:
        sent = time.perf_counter()
        self.producer.produce(self.topics.ping, b"", key)
        self.producer.poll(0)
        return sent


def paced(name: str, sender: Sender, ts: Sequence[Target], rate: float, seq: int, pings: bool = True) -> Phase:
    """Send ``ts`` at ``rate`` per second (``rate`` 0: all at once), a plain ping half a period after each."""
    phase = Phase(name, began=time.perf_counter())
    period = 1 / rate if rate else 0.0
    for i, t in enumerate(ts):
        _sleep_until(phase.began + i * period)
        sent, urn = sender.incident(t, seq + i)
        phase.incidents.append((t, sent, urn))
        if pings and period:
            _sleep_until(phase.began + (i + 0.5) * period)
            key = f"p{seq + i}".encode()
            phase.pings[key] = sender.ping(key)
    sender.producer.flush(30)
    phase.ended = time.perf_counter()
    return phase


def one_at_a_time(
    name: str,
    sender: Sender,
    ts: Sequence[Target],
    seq: int,
    receiver: Receiver,
    pipeline: Pipeline | Pipelines,
    mcp: str,
) -> Phase:
    """Send ``ts`` one by one: each once the previous incident is visible (then a pause of ``GAP_S``)."""
    phase = Phase(name, began=time.perf_counter())
    for i, t in enumerate(ts):
        sent, urn = sender.incident(t, seq + i)
        sender.producer.flush(30)
        phase.incidents.append((t, sent, urn))
        receiver.wait([(mcp, urn)], 120, pipeline)
        time.sleep(GAP_S)
    phase.ended = time.perf_counter()
    return phase


def _sleep_until(deadline: float) -> None:
    delay = deadline - time.perf_counter()
    if delay > 0:
        time.sleep(delay)


@dataclass
class RunResult:
    """One setting's measurements: latencies (ms) by phase and measure, burst throughput, role metrics."""

    setting: Setting
    phases: dict[str, dict[str, list[float]]]
    burst_rate: float
    missing: int
    txn_ping: list[float]
    metrics: dict[str, float]
    mcps_per_incident: dict[str, float]
    windows: dict[str, tuple[float, float]]
    """Per phase, (wall-clock start, end): from its first send to its last incident seen."""
    stalls: list[str] = field(default_factory=list)
    scores_drained_s: float | None = None
    """Seconds from the burst's first send until the scores role's lag was drained (None: no scores role)."""
    scores_instances: int = 1
    """How many instances of the scores role ran (one consumer group)."""
    burst_s: float = 0.0
    """Seconds from the burst's first send until its last incident was visible."""
    burst_cpu_s: dict[str, float] = field(default_factory=dict)
    """CPU seconds each process used during the burst (by the roles it runs; ``scores`` until its lag drained)."""


PHASES = ("small", "burst", "medium", "large")
GAP_S = 0.25


def run_setting(args: argparse.Namespace, setting: Setting, batches: dict[str, list[Target]]) -> RunResult:
    """Start the pipeline with ``setting`` on fresh topics; warm up, then the paced phases of each blast class
    (small with both baselines), the burst; stop it and delete the topics."""
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    topics = Topics.fresh()
    create_topics(admin, topics)
    receiver = Receiver(args.bootstrap, topics)
    receiver.start()
    pipeline = Pipelines(args.bootstrap, args.redis, topics, setting, args.layout)
    scores = (
        Replicas(args.bootstrap, args.redis, topics, setting, "scores", args.scores_instances)
        if args.scores == "process"
        else None
    )
    scores_drained: float | None = None
    burst_cpu: dict[str, float] = {}
    pinger: TxnPinger | None = None
    done: dict[str, Phase] = {}
    mcps: dict[str, float] = {}
    windows: dict[str, tuple[float, float]] = {}
    missing = 0
    try:
        sender = Sender(args.bootstrap, topics)
        print(f"[{setting.name}] warm-up: {len(batches['warmup'])} incidents", file=sys.stderr)
        warm = paced("warmup", sender, batches["warmup"], args.rate, 0)
        if receiver.wait(_keys(warm, topics), 180, pipeline):
            raise RuntimeError(f"warm-up incidents did not come through:\n{pipeline.tail()}")
        for n, name in enumerate(PHASES, start=1):
            if not batches[name]:
                continue
            print(f"[{setting.name}] {name}: {len(batches[name])} incidents", file=sys.stderr)
            before = receiver.counts[topics.mcp]
            if name == "small":
                pinger = TxnPinger(args.bootstrap, topics.txn_ping, 2 / args.rate)
                pinger.start()
                phase = paced(name, sender, batches[name], args.rate, n * 100_000)
            elif name == "burst":
                cpu_before = {**pipeline.cpu_s(), **({"scores": scores.cpu_s()} if scores is not None else {})}
                phase = paced(name, sender, batches[name], 0, n * 100_000, pings=False)
            else:
                phase = one_at_a_time(name, sender, batches[name], n * 100_000, receiver, pipeline, topics.mcp)
            done[name] = phase
            missing += receiver.wait(_keys(phase, topics), 120, pipeline)
            windows[name] = (time.time() - (time.perf_counter() - phase.began), time.time())
            if name == "burst":
                # Each process's CPU from the burst's first send until its last incident was visible (the scores
                # role's until its lag drained): what a burst costs each stage.
                burst_cpu = {k: v - cpu_before[k] for k, v in pipeline.cpu_s().items()}
            if name == "burst" and scores is not None:
                group = f"{scores.group_prefix}-scores"
                scores_drained = drained(args.bootstrap, group, topics.signals, phase.began, 600, scores)
                burst_cpu["scores"] = scores.cpu_s() - cpu_before["scores"]
            time.sleep(0.5)  # the rest of the last transaction's records, for the per-incident count
            mcps[name] = (receiver.counts[topics.mcp] - before) / len(phase.incidents)
            if pinger is not None:
                pinger.halt.set()
                pinger.join(30)
        metrics = pipeline.metrics()
        if scores is not None:
            metrics.update(scores.metrics())
    finally:
        if pinger is not None:
            pinger.halt.set()
        pipeline.stop()
        if scores is not None:
            scores.stop()
        receiver.halt.set()
        receiver.join(10)
        delete_topics(admin, topics)
    verify(receiver, [i for phase in (warm, *done.values()) for i in phase.incidents])
    txn = (
        []
        if pinger is None
        else [
            (receiver.seen[(topics.txn_ping, k)] - s) * 1000
            for k, s in pinger.sent.items()
            if (topics.txn_ping, k) in receiver.seen
        ]
    )
    burst_rate = burst_s = 0.0
    if "burst" in done:
        burst = done["burst"]
        last = max(receiver.seen.get((topics.mcp, urn), 0.0) for _, _, urn in burst.incidents)
        burst_s = last - burst.began
        burst_rate = len(burst.incidents) / burst_s
    return RunResult(
        setting,
        {name: samples(receiver, topics, phase) for name, phase in done.items()},
        burst_rate,
        missing,
        txn,
        metrics,
        mcps,
        windows,
        scores_drained_s=scores_drained,
        scores_instances=args.scores_instances,
        burst_s=burst_s,
        burst_cpu_s=burst_cpu,
    )


def _keys(phase: Phase, topics: Topics) -> list[tuple[str, bytes]]:
    return [(topics.mcp, urn) for _, _, urn in phase.incidents] + [(topics.ping, k) for k in phase.pings]


def verify(receiver: Receiver, incidents: Sequence[tuple[Target, float, bytes]]) -> None:
    """Every matched incident record is the ``incidentInfo`` of an open incident on its target's dataset."""
    decoder = Decoder(VendoredSchemaSource())
    for t, _, urn in incidents:
        value = receiver.incidents.get(urn)
        if value is None:
            continue
        change = decoder.decode_mcp(value)
        info = change.aspect_json()
        assert change.aspect_name == "incidentInfo", change.aspect_name
        assert info["entities"][0] == t.dataset and info["status"]["state"] == "ACTIVE", (urn, info["entities"][:1])


def samples(receiver: Receiver, topics: Topics, phase: Phase) -> dict[str, list[float]]:
    """Latencies in ms of one phase: end to end, its two hops, and the plain pings."""
    out: dict[str, list[float]] = {"incident": [], "assertions hop": [], "incidents hop": [], "ping": []}
    seen = receiver.seen
    for t, sent, urn in phase.incidents:
        done = seen.get((topics.mcp, urn))
        if done is None:
            continue
        out["incident"].append((done - sent) * 1000)
        signalled = seen.get((topics.signals, t.dataset.encode()))
        if signalled is not None:
            out["assertions hop"].append((signalled - sent) * 1000)
            out["incidents hop"].append((done - signalled) * 1000)
    for key, sent in phase.pings.items():
        if (topics.ping, key) in seen:
            out["ping"].append((seen[(topics.ping, key)] - sent) * 1000)
    return out


# --- reporting --------------------------------------------------------------------------------------------------------
def stats(values: list[float]) -> str:
    """``| n | p50 | p95 | p99 | max |`` of ``values`` (ms, nearest rank)."""
    if not values:
        return "| 0 | – | – | – | – |"
    cells = [len(values), *(blast.percentile(values, q) for q in (0.5, 0.95, 0.99)), max(values)]
    return "| " + " | ".join(f"{c:,.0f}" for c in cells) + " |"


def describe(setting: Setting) -> str:
    """The cadence the two roles run with under ``setting`` (the same for both, or each)."""
    parts = []
    for role in ROLES:
        r = setting.effective(role)
        parts.append(
            f"batch_size {r.batch_size}, batch_timeout_s {r.batch_timeout_s:g}, commit_every {r.commit_every}, "
            f"commit_interval_ms {r.commit_interval_ms}"
        )
    return parts[0] if len(set(parts)) == 1 else "; ".join(f"{role}: {p}" for role, p in zip(ROLES, parts, strict=True))


def report(results: Sequence[RunResult], args: argparse.Namespace, sizes: dict[str, int]) -> str:
    q = blast.percentile

    def p50_99(values: list[float]) -> str:
        return f"{q(values, 0.5):,.0f} / {q(values, 0.99):,.0f}" if values else "–"

    lines = [
        "| setting | runtime settings (both roles) | small-blast incidents | p50 ms | p95 ms | p99 ms | max ms "
        "| plain ping p50 / p99 ms | incident ÷ ping, p50 / p99 | medium blast p50 / p99 ms | large blast p50 / p99 ms "
        "| burst: incidents/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        small = r.phases.get("small", {})
        inc, ping = small.get("incident", []), small.get("ping", [])
        ratio = f"{q(inc, 0.5) / q(ping, 0.5):,.0f}× / {q(inc, 0.99) / q(ping, 0.99):,.0f}×" if inc and ping else "–"
        lines.append(
            f"| **{r.setting.name}** | {describe(r.setting)} {stats(inc)} {q(ping, 0.5):,.1f} / {q(ping, 0.99):,.1f} "
            f"| {ratio} | {p50_99(r.phases.get('medium', {}).get('incident', []))} "
            f"| {p50_99(r.phases.get('large', {}).get('incident', []))} | {r.burst_rate:,.0f} |"
        )
    titles = {
        "small": f"small blast ({sizes['small']:,}-dataset tree), paced at {args.rate:g}/s",
        "burst": f"burst: {args.burst:,} small-blast incidents produced at once (queueing included)",
        "medium": f"medium blast ({sizes['medium']:,}-dataset tree), one at a time",
        "large": f"large blast ({sizes['large']:,}-dataset tree), one at a time",
    }
    for r in results:
        lines += [
            "",
            f"`{r.setting.name}`"
            + (f" (**{r.missing} incidents never seen**)" if r.missing else "")
            + ": MCL produced → incident MCP visible, ms",
            "",
            "| phase | n | p50 | p95 | p99 | max | MCP records per incident |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for name, measures in r.phases.items():
            lines.append(f"| **{titles[name]}** {stats(measures['incident'])} {r.mcps_per_incident[name]:,.1f} |")
            lines.append(f"| … of which MCL → signal visible (assertions role) {stats(measures['assertions hop'])} |")
            lines.append(
                f"| … of which signal → incident MCP visible (incidents role + transaction) "
                f"{stats(measures['incidents hop'])} |"
            )
        small = r.phases.get("small", {})
        lines.append(f"| baseline during the small phase: plain produce → consume {stats(small.get('ping', []))} |")
        lines.append(f"| baseline during the small phase: own transaction → consume {stats(r.txn_ping)} |")
        m = r.metrics
        means = []
        for role in ("assertions", "incidents", "scores"):
            for kind in ("batch", "commit"):
                count = m.get(f"{role}.{kind}_count", 0.0)
                if count:
                    means.append(f"{role} {kind} {m[f'{role}.{kind}_sum'] / count * 1000:,.1f} ms ({count:,.0f})")
        lines += ["", "Role metrics, mean over the whole run (count): " + "; ".join(means) + "."]
        n = args.burst
        if r.burst_cpu_s and n:
            parts = [f"{name} {cpu * 1000 / n:,.2f} ms" for name, cpu in r.burst_cpu_s.items()]
            incidents = sum(v for k, v in r.burst_cpu_s.items() if k != "scores")
            lines += [
                "",
                f"Burst, CPU per incident by process (`{args.layout}` layout): "
                + "; ".join(parts)
                + f". The incident path ({' + '.join(k for k in r.burst_cpu_s if k != 'scores')}): "
                f"{incidents * 1000 / n:,.2f} ms CPU per incident, **{n / incidents:,.0f} incidents per CPU-second** "
                f"(wall: {r.burst_rate:,.0f} incidents/s)"
                + (
                    f"; the incidents role alone {n / r.burst_cpu_s['incidents']:,.0f} per CPU-second."
                    if "incidents" in r.burst_cpu_s
                    else "."
                ),
            ]
        if r.scores_drained_s is not None:
            lines += [
                "",
                f"Scores role (`pareis run scores`, {_instances(r.scores_instances)}): its lag drained "
                f"{r.scores_drained_s:,.1f} s "
                f"after the burst's first send, {r.scores_drained_s - r.burst_s:,.1f} s after the burst's last "
                "incident was visible.",
            ]
    return "\n".join(lines)


def _instances(n: int) -> str:
    return "its own process" if n == 1 else f"{n} instances in one consumer group, a process each"


def machine() -> str:
    import confluent_kafka

    cpu = cpu_model()
    return (
        f"{cpu}, {os.cpu_count()} cores shared with other work, Python {platform.python_version()}, "
        f"confluent-kafka {confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"
    )


def stalls(client: redis.Redis, result: RunResult, min_ms: int = 250) -> list[str]:
    """The shared Redis server's slow commands (``SLOWLOG``, any client) of at least ``min_ms`` that ran during one
    of ``result``'s phases: a stall of the server stalls both roles."""
    out = []
    for entry in client.slowlog_get(128):
        start, ms = float(entry["start_time"]), int(entry["duration"]) // 1000
        if ms < min_ms:
            continue
        for name, (began, ended) in result.windows.items():
            if began - ms / 1000 <= start <= ended:
                command = entry["command"]
                text = command.decode(errors="replace") if isinstance(command, bytes) else str(command)
                when = time.strftime("%H:%M:%S", time.localtime(start))
                out.append(f"`{result.setting.name}` {name} phase: `{text.split()[0]}` of {ms:,} ms at {when}")
    return out


def code_version() -> str:
    """The commit of the working tree, and which files of ``pareis/`` differ from it."""

    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True, check=False).stdout

    head = git("rev-parse", "--short", "HEAD").strip()
    dirty = git("status", "--porcelain", "--", "pareis").split()[1::2]
    return f"commit {head}" + (f" with uncommitted changes to {', '.join(dirty)}" if dirty else "")


def verdict(results: Sequence[RunResult]) -> str:
    """The goal, p99 under 1 s for the paced small-blast incidents, per setting."""
    parts = []
    for r in results:
        p99 = blast.percentile(r.phases["small"]["incident"], 0.99) if r.phases.get("small") else float("nan")
        parts.append(f"`{r.setting.name}` {p99:,.0f} ms ({'met' if p99 < 1000 else 'not met'})")
    return "Goal, p99 under 1 s (small blasts, paced): " + "; ".join(parts) + "."


def reading(results: Sequence[RunResult]) -> str:
    """Where the time goes, in words (the figures it names come from ``results`` and the settings)."""
    mcps = {c: max((r.mcps_per_incident.get(c, 0.0) for r in results), default=0.0) for c in CLASSES}
    slow = max((r.setting.effective("incidents") for r in results), key=lambda r: r.commit_interval_ms)
    fast = min((r.setting.effective("incidents") for r in results), key=lambda r: r.commit_interval_ms)
    return (
        f"Reading: a cadence of `batch_timeout_s` {slow.batch_timeout_s:g} s and `commit_interval_ms` "
        f"{slow.commit_interval_ms} puts two floors under every incident. Each role's `consume` waits out the batch "
        "timeout unless `batch_size` messages are there, and the incidents role's transaction, opened by its first "
        "output, commits a commit interval later: an incident waits about half of each on average and up to all of "
        f"them. {fast.batch_timeout_s:g} s and {fast.commit_interval_ms} ms remove most of that, for a commit every "
        f"{fast.commit_interval_ms} ms while busy (a few ms each) and a poll loop {1 / fast.batch_timeout_s:.0f} "
        "times a second when idle. Medium and large blasts add the analysis "
        "itself — the blast radius walked over Redis, then "
        f"~{mcps['medium']:,.0f} / ~{mcps['large']:,.0f} proposals (incident, tags, notes, properties of every "
        "affected model version) built, encoded, journaled and produced per incident — which no runtime setting "
        "changes; while a large one is analysed, every other incident of that role instance waits."
    )


def kafka_version() -> str:
    """The local stack's broker version, from its jar name (deploy/local), if it is there."""
    jars = sorted((REPO / ".stack" / "kafka" / "libs").glob("kafka_2.*-*.jar"))
    names = [j.name for j in jars if j.name.count("-") == 1]
    return f"Kafka {names[0].rsplit('-', 1)[1][: -len('.jar')]} (one local broker)" if names else "one local broker"


def write_results(text: str, args: argparse.Namespace, notes: list[str]) -> None:
    path = Path(__file__).with_name("RESULTS.md")
    section = (
        "## Incident latency\n\n"
        "Time from an assertion FAILURE `assertionRunEvent` MCL produced on the local broker to the incident's "
        "`incidentInfo` proposal visible on the MetadataChangeProposal topic (`read_committed`), through "
        f"`pareis run` ({args.layout} layout: the real runtime, Redis, one exactly-once transaction per "
        "commit interval), measured in this process on one clock. See the docstring of `bench/incident_latency.py` "
        f"for the method.\n\n{text}\n\n" + "".join(f"- {n}\n" for n in notes)
    )
    record_section(path, "Incident latency", section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="of the blast graph (1 = 100,000 datasets)")
    parser.add_argument("--incidents", type=int, default=1000, help="paced small-blast incidents per setting")
    parser.add_argument("--rate", type=float, default=25.0, help="small-blast incidents per second")
    parser.add_argument("--medium", type=int, default=30, help="medium-blast incidents per setting, one at a time")
    parser.add_argument("--large", type=int, default=6, help="large-blast incidents per setting, one at a time")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--burst", type=int, default=1000, help="small-blast incidents produced at once")
    process = RuntimeSettings()
    parser.add_argument("--settings", default="default,throughput", help="comma-separated: default, throughput")
    parser.add_argument("--throughput-batch-timeout-s", type=float, default=process.batch_timeout_s)
    parser.add_argument("--throughput-commit-interval-ms", type=int, default=process.commit_interval_ms)
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/7", help="a database for this benchmark only")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="leave the index in Redis")
    parser.add_argument(
        "--layout",
        choices=("split", "shared"),
        default="split",
        help="split: one process per role, as the chart deploys them; shared: `pareis run assertions incidents`",
    )
    parser.add_argument("--write-results", action="store_true")
    parser.add_argument(
        "--scores",
        choices=("process", "none"),
        default="process" if "scores" in ROLE_NAMES else "none",
        help="run the scores role beside the pipeline in its own process (default where the checkout has it)",
    )
    parser.add_argument(
        "--scores-instances",
        type=int,
        default=1,
        help="instances of the scores role, one consumer group (as the chart scales its Deployment)",
    )
    args = parser.parse_args()
    began = time.perf_counter()
    load_before = os.getloadavg()
    code_before = code_version()
    known = {
        "default": Setting("default"),
        "throughput": Setting("throughput", args.throughput_batch_timeout_s, args.throughput_commit_interval_ms),
    }
    settings = [known[name] for name in args.settings.split(",")]
    p = blast.plan(args.scale)
    sizes = {name: trees[0][1] for name, trees in p.classes().items()}
    per = {"small": args.warmup + args.incidents + args.burst, "medium": args.medium, "large": args.large}
    chosen = targets(p, {c: n * len(settings) for c, n in per.items()}, args.seed)
    everything = [t for c in CLASSES for t in chosen[c]]
    print(f"graph: {p.datasets:,} datasets, {p.column_edges:,} column edges", file=sys.stderr)
    client = dedicated(args.redis)
    results = []
    try:
        aspects, load_s = load_index(client, p, everything, time.time_ns() // 1_000_000)
        used = int(client.info("memory")["used_memory"])
        print(f"index: {aspects:,} aspects in {load_s:,.0f} s", file=sys.stderr)
        for i, setting in enumerate(settings):
            small = chosen["small"][i * per["small"] : (i + 1) * per["small"]]
            batches = {
                "warmup": small[: args.warmup],
                "small": small[args.warmup : args.warmup + args.incidents],
                "burst": small[args.warmup + args.incidents :],
                "medium": chosen["medium"][i * args.medium : (i + 1) * args.medium],
                "large": chosen["large"][i * args.large : (i + 1) * args.large],
            }
            results.append(run_setting(args, setting, batches))
            results[-1].stalls = stalls(client, results[-1])
    finally:
        if not args.keep:
            client.flushdb(asynchronous=True)
    text = report(results, args, sizes)
    print(text)
    wall = time.perf_counter() - began
    notes = [
        f"Index: the blast graph at scale {args.scale:g} ({p.datasets:,} datasets, {p.column_edges:,} column edges, "
        f"{p.features:,} features, {p.models:,} models) plus {len(everything):,} assertions: {aspects:,} aspects "
        f"through the lineage role's handler in {load_s:,.0f} s (not part of the latencies); Redis `used_memory` "
        f"{used / 2**20:,.0f} MiB.",
        "Each incident is a first FAILURE (after a SUCCESS a day earlier) of a column assertion on a dataset not "
        "used before, drawn from the trees of its blast class: its blast reaches that column in every dataset of "
        "the tree, and the incidents role computes it from Redis before it writes.",
        f"Command: `.venv/bin/python bench/incident_latency.py --scale {args.scale:g} --incidents {args.incidents} "
        f"--rate {args.rate:g} --medium {args.medium} --large {args.large} --burst {args.burst} "
        f"--settings {args.settings} --scores {args.scores} --scores-instances {args.scores_instances} "
        f"--layout {args.layout} "
        f"--throughput-batch-timeout-s {args.throughput_batch_timeout_s:g} --throughput-commit-interval-ms "
        f"{args.throughput_commit_interval_ms} --seed {args.seed} --write-results`",
        f"Machine: {machine()}; {kafka_version()}, Redis {client.info('server')['redis_version']}; "
        f"load average {load_before[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; the whole run took "
        f"{wall / 60:.1f} min.",
    ]
    code_after = code_version()
    notes.append(
        f"Code: {code_before}."
        if code_after == code_before
        else f"Code: {code_before} at the start, {code_after} at the end (it changed during the run)."
    )
    notes.insert(0, verdict(results))
    found = [stall for r in results for stall in r.stalls]
    notes.append(
        "Redis server stalls during a phase (its `SLOWLOG`, commands of any client ≥ 250 ms; the server is shared): "
        + ("; ".join(found) if found else "none")
        + "."
    )
    notes.insert(1, reading(results))
    for n in notes:
        print(f"- {n}")
    if args.write_results:
        write_results(text, args, notes)


if __name__ == "__main__":
    main()
