"""Live re-evaluation (DESIGN §3): the cost of following the graph while incidents are active.

    .venv/bin/python bench/live_reevaluation.py                    # full blast scale, 100 active incidents
    .venv/bin/python bench/live_reevaluation.py --scale 0.05 --versions 20 --rounds 4    # a quick run
    .venv/bin/python bench/live_reevaluation.py --write-results    # and replace "## Live re-evaluation" in RESULTS.md

**Redis**: a private ``redis-server`` started for the run (``--redis URL`` to use a database of one's own instead:
the shared server's databases are flushed by other engineers' test runs).

**Index.** The generated graph of ``bench/blast.py`` (``--scale``; 1 = 100,000 datasets, 2,021,580 column edges,
20,000 features, 2,000 models) goes through the lineage role's handler into that Redis (flushed before and after,
as ``bench/incident_latency.py`` does, whose loader this reuses), with ``--incidents`` column
assertions: each on the column a distinct feature is sourced from, in a distinct small (10-dataset) lineage tree,
with a SUCCESS run a day earlier. Not timed.

**Active incidents.** One FAILURE run per assertion, recorded in the run history and stepped through the incidents
role's handler in this process over the same Redis (setup, not timed: the reliability-score publisher, whose
per-run cost on the full graph is another benchmark's subject, is left out here); each incident's watch set is then
in the watch index (``pareis.store.watch_redis``). Then ``pareis run lineage assertions incidents`` in a subprocess
(the production entry point, fresh topics of 3 partitions, the same Redis) over those active incidents.

**Latency (headline).** ``--versions`` new model versions, paced at ``--rate`` per second: each one
``mlModelProperties`` MCL (as GMS frames it) on the versioned topic, a new model in a new group reading the
poisoned feature of one active incident (round robin), after one warm-up version came through (not counted).
Latency = the first proposal keyed by the new model's URN on the MetadataChangeProposal topic (its
``pareis-at-risk`` tag, the first of an Update's writes about it; checked by decoding) − the time just before
``produce``, on one monotonic clock: lineage role (index write, watch check, signal) → signals topic → incidents
role (recompute, one exactly-once transaction) → read. Baseline, same run and pace: a
plain produce → ``read_committed`` consume on a fresh topic half a period after each version (the broker round trip).

**Throughput (no relevant changes).** In this process, after the pipeline stopped, with the 100 incidents' watch
index in Redis: the lineage role's handler (translate + ``apply`` + the watch) over change-log batches of 500 that
touch no active incident — fresh 10-dataset lineage trees (``schemaMetadata`` + ``upstreamLineage`` with column
lineage), features sourced from them and models reading those — each batch *applied* (new entities, so the watch
checks every update; a restatement would be skipped before the check). The baseline is the same handler without
the watch, on equally shaped batches, batch by batch: one batch each, back to back, alternating which goes first
(after one uncounted warm-up round); the table gives the ratio over all batches and the median of the pairs' ratios,
in the same run. On the Redis store (production) and on the in-memory store (the watch's CPU against a much cheaper
apply: the worst case).
Every watched batch must produce no signal.
"""

from __future__ import annotations

import argparse
import gc
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import blast
from bench import incident_latency as il
from bench.results import record_section
from pareis.config import DatahubSettings
from pareis.contracts.records import Message
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.wire.changelog import ChangeLog
from pareis.datahub.wire.codec import Decoder, Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.roles.lineage import LineageHandler
from pareis.roles.lineage_watch import LineageWatch
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.watch_redis import RedisWatchStore

ROLES = ("lineage", "assertions", "incidents")
TREE = 10


@dataclass(frozen=True)
class Poisoned:
    target: il.Target
    feature: str


def targets(p: blast.Plan, count: int, seed: int) -> list[Poisoned]:
    """``count`` features in distinct small trees, each with an assertion on the column it is sourced from."""
    rng = random.Random(seed)
    small = {start: size for start, size in p.classes()["small"]}
    tree_of = {start + i: start for start, size in small.items() for i in range(size)}
    features = list(range(p.features))
    rng.shuffle(features)
    out: list[Poisoned] = []
    used: set[int] = set()
    for n in features:
        k = blast.feature_dataset(p, n)
        tree = tree_of.get(k)
        if tree is None or tree in used:
            continue
        used.add(tree)
        j = n % blast.COLUMNS
        t = il.Target(k, blast.dataset(k), f"urn:li:assertion:bench-live-{k:06d}", blast.column(k, j), "small")
        out.append(Poisoned(t, blast.feature(n)))
        if len(out) == count:
            return out
    raise SystemExit(f"only {len(out)} small trees with a feature at --scale {p.datasets / 100_000}")


def new_model(i: int) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,bench_live_{i:05d},PROD)"


class VersionSender:
    """Produces ``mlModelProperties`` MCLs as GMS frames them, and plain pings."""

    def __init__(self, bootstrap: str, topics: il.Topics) -> None:
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "enable.idempotence": True}
        )
        self.encoder = Encoder(VendoredSchemaSource(topics.versioned), topics.versioned)
        self.topics = topics

    def version(self, i: int, feature: str) -> float:
        ts = time.time_ns() // 1_000_000
        urn = new_model(i)
        aspect = {
            "name": f"bench live {i}",
            "mlFeatures": [feature],
            "groups": [f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,bench_live_{i:05d},PROD)"],
            "created": {"time": ts},
        }
        record = mcl_record(
            entity_urn=urn,
            aspect_name="mlModelProperties",
            aspect=aspect,
            system_metadata={"lastObserved": ts, "runId": f"bench-live-{i}"},
            created={"time": ts, "actor": "urn:li:corpuser:datahub"},
        )
        value = self.encoder.encode_mcl(record)
        sent = time.perf_counter()
        self.producer.produce(self.topics.versioned, value, urn.encode())
        self.producer.poll(0)
        return sent

    def ping(self, key: bytes) -> float:
        sent = time.perf_counter()
        self.producer.produce(self.topics.ping, b"", key)
        self.producer.poll(0)
        return sent


@dataclass
class Latency:
    versions: list[float]
    pings: list[float]
    open_s: float
    watched: int
    mcp_per_version: float


def latency(args: argparse.Namespace, client: redis.Redis, poisoned: Sequence[Poisoned]) -> Latency:
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    topics = il.Topics.fresh()
    il.create_topics(admin, topics)
    opened_s = open_incidents(client, poisoned)
    receiver = il.Receiver(args.bootstrap, topics)
    receiver.start()
    pipeline = il.Pipeline(args.bootstrap, args.redis, topics, il.Setting("default"), roles=ROLES)
    try:
        watch = RedisWatchStore(client)
        deadline = time.monotonic() + args.open_timeout_s
        while len(watch.watches()) < len(poisoned):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(watch.watches())} of {len(poisoned)} incidents in the watch index")
            time.sleep(0.1)
        watched = len(watch.watches())
        sender = VersionSender(args.bootstrap, topics)
        # Warm-up, not counted: until one new version comes through, the consumer groups are still forming.
        warm = 0
        while True:
            urn = new_model(100_000 + warm).encode()
            sender.version(100_000 + warm, poisoned[warm % len(poisoned)].feature)
            sender.producer.flush(30)
            warm += 1
            if not receiver.wait([(topics.mcp, urn)], 30, pipeline):
                break
            if warm > 10:
                raise RuntimeError(f"no warm-up version came through:\n{pipeline.tail()}")
        period = 1 / args.rate
        time.sleep(0.5)  # the warm-up's last records, so they are not counted below
        before = receiver.counts[topics.mcp]
        start = time.perf_counter()
        sent: dict[bytes, float] = {}
        pings: dict[bytes, float] = {}
        for i in range(args.versions):
            _sleep_until(start + i * period)
            sent[new_model(i).encode()] = sender.version(i, poisoned[i % len(poisoned)].feature)
            _sleep_until(start + (i + 0.5) * period)
            key = f"ping-{i}".encode()
            pings[key] = sender.ping(key)
        sender.producer.flush(30)
        missing = receiver.wait([(topics.mcp, k) for k in sent] + [(topics.ping, k) for k in pings], 120, pipeline)
        if missing:
            raise RuntimeError(f"{missing} versions or pings never came through:\n{pipeline.tail()}")
        time.sleep(0.5)  # the rest of the last transaction's records, for the per-version count
        per_version = (receiver.counts[topics.mcp] - before) / args.versions
        verify(args.bootstrap, topics, sent)
    finally:
        pipeline.stop()
        receiver.halt.set()
        receiver.join(10)
        il.delete_topics(admin, topics)
    return Latency(
        [(receiver.seen[(topics.mcp, k)] - s) * 1000 for k, s in sent.items()],
        [(receiver.seen[(topics.ping, k)] - s) * 1000 for k, s in pings.items()],
        opened_s,
        watched,
        per_version,
    )


def open_incidents(client: redis.Redis, poisoned: Sequence[Poisoned]) -> float:
    """Open every incident in this process (setup, not timed in the figures): each FAILURE run recorded in the run
    history and stepped through the incidents role's handler over the same Redis (its incident store and watch
    index), without the reliability-score publisher, whose per-run cost on the full graph is another benchmark's
    subject. Seconds taken."""
    from pareis.datahub.writes.writer import MemoryWriter
    from pareis.roles.incident_watch import IncidentWatch
    from pareis.roles.incidents import IncidentsHandler
    from pareis.roles.messages import RunSignal
    from pareis.roles.output import Written
    from pareis.store.incidents_redis import RedisIncidentStore
    from pareis.store.journal import MemoryStepJournal
    from pareis.store.runs_redis import RedisRunHistory

    started = time.perf_counter()
    lineage, history = RedisLineageStore(client), RedisRunHistory(client)
    handler = IncidentsHandler(
        lineage=lineage,
        runs=history,
        incidents=RedisIncidentStore(client),
        journal=MemoryStepJournal(),
        output=Written(MemoryWriter(), DatahubSettings()),
        datahub=DatahubSettings(),
        effects_topic="bench-live-setup",
        watch=IncidentWatch(RedisWatchStore(client), lineage),
    )
    now = time.time_ns() // 1_000_000
    for i, x in enumerate(poisoned):
        t = x.target
        run = AssertionRun(t.assertion, now - 60_000 + i, ResultType.FAILURE, t.dataset, f"bench-{i}", failed_rows=42)
        history.record(run)
        handler([Message("pareis.signals.v1", 0, i, t.dataset.encode(), RunSignal(t.dataset, run, run.timestamp_ms))])
        print(f"\r  opened {i + 1} incidents", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return time.perf_counter() - started


def verify(bootstrap: str, topics: il.Topics, sent: dict[bytes, float]) -> None:
    """The first proposal about each new version is a ``globalTags`` patch adding ``pareis-at-risk`` (read back from
    the topic, ``read_committed``, and decoded)."""
    from confluent_kafka import Consumer, TopicPartition

    decoder = Decoder(VendoredSchemaSource())
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-live-verify-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topics.mcp, n, 0) for n in range(il.PARTITIONS)])
    first: dict[bytes, Any] = {}
    ended: set[int] = set()
    deadline = time.monotonic() + 120
    while len(ended) < il.PARTITIONS and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error() is not None:
            ended.add(message.partition() or 0)
            continue
        key = message.key() or b""
        if key in sent and key not in first:
            first[key] = decoder.decode_mcp(message.value() or b"")
    consumer.close()
    for key in sent:
        change = first.get(key)
        assert change is not None, f"no proposal about {key!r}"
        assert change.aspect_name == "globalTags" and b"pareis-at-risk" in (change.aspect or b""), change


def irrelevant(base: int, aspects: int) -> Iterator[list[Message[ChangeLog]]]:
    """Batches of about ``aspects`` change-log entries touching no active incident (see the module docstring):
    fresh trees of 10 datasets from index ``base`` on, a feature per dataset, a model per tree."""
    entries: list[tuple[str, str, str, dict[str, Any]]] = []
    k = base
    while len(entries) < aspects:
        for i in range(TREE):
            entries.append(("dataset", blast.dataset(k + i), "schemaMetadata", blast.schema_metadata(k + i)))
            if i:
                parent = k + (i - 1) // blast.BRANCHING
                entries.append(
                    ("dataset", blast.dataset(k + i), "upstreamLineage", blast.upstream_lineage(k + i, parent))
                )
            feature = f"urn:li:mlFeature:(bench_quiet,feature_{k + i:07d})"
            entries.append(("mlFeature", feature, "mlFeatureProperties", {"sources": [blast.column(k + i, i)]}))
        model = f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,quiet_{k:07d},PROD)"
        feats = [f"urn:li:mlFeature:(bench_quiet,feature_{k + i:07d})" for i in range(TREE)]
        entries.append(("mlModel", model, "mlModelProperties", {"name": model, "mlFeatures": feats}))
        k += TREE
    batch: list[Message[ChangeLog]] = []
    for offset, (kind, urn, name, aspect) in enumerate(entries):
        change = ChangeLog(
            entity_type=kind,
            entity_urn=urn,
            change_type="UPSERT",
            aspect_name=name,
            aspect=orjson.dumps(aspect),
            previous_aspect=None,
            system_metadata={"version": "1", "lastObserved": blast.T0, "runId": "bench"},
            created={"time": blast.T0, "actor": "urn:li:corpuser:datahub"},
            headers=None,
            schema_id=0,
        )
        batch.append(Message("MetadataChangeLog_Versioned_v1", 0, offset, urn.encode(), change))
        if len(batch) == blast.BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class Throughput:
    store: str
    aspects: int
    base_s: float
    watch_s: float
    signals: int
    pairs: list[float] = field(default_factory=list)
    """Per pair of batches (one each side, run back to back): watched throughput / baseline throughput."""

    @property
    def ratio(self) -> float:
        """Watched throughput / baseline throughput over all batches (1.0: no cost)."""
        return self.base_s / self.watch_s

    @property
    def median(self) -> float:
        """The median of :attr:`pairs`: the ratio least moved by another process's spell on the shared machine."""
        return statistics.median(self.pairs)


def throughput(args: argparse.Namespace, client: redis.Redis, p: blast.Plan) -> list[Throughput]:
    out = []
    settings = DatahubSettings()
    # Fresh dataset indices, far past the graph's, so every update applies.
    next_base = p.datasets + 1_000_000
    for name in ("redis", "memory"):
        store = RedisLineageStore(client) if name == "redis" else MemoryLineageStore()
        watch = LineageWatch(RedisWatchStore(client), "bench-live-unused")
        base = LineageHandler(store, settings)
        watched = LineageHandler(store, settings, watch=watch)
        result = Throughput(name, 0, 0.0, 0.0, 0)
        gc.collect()
        gc.freeze()
        for r in range(-1, args.rounds):  # round -1 warms both handlers up and is not counted
            chunks = []
            for _ in range(2):
                chunks.append(list(irrelevant(next_base, args.throughput_aspects)))
                next_base += args.throughput_aspects  # more than enough room per chunk
            # batch by batch, the two handlers alternating which goes first: a slow spell of the shared machine
            # then lands on both sides of a pair
            for k, pair in enumerate(zip(chunks[0], chunks[1], strict=False)):
                first, second = (base, watched) if k % 2 == r % 2 else (watched, base)
                order = [(first, pair[0]), (second, pair[1])]
                per_aspect: dict[bool, float] = {}
                for handler, batch in order:
                    started = time.perf_counter()
                    signals = len(list(handler(batch)))
                    elapsed = time.perf_counter() - started
                    per_aspect[handler is base] = elapsed / len(batch)
                    if r < 0:
                        result.signals += signals
                    elif handler is base:
                        result.base_s += elapsed
                        result.aspects += len(batch)
                    else:
                        result.watch_s += elapsed
                        result.signals += signals
                if r >= 0:
                    result.pairs.append(per_aspect[True] / per_aspect[False])
        gc.unfreeze()
        assert watch.index, "the watch index of the active incidents was read"
        assert set(base.outcomes) == {"applied"} and set(watched.outcomes) == {"applied"}, (
            base.outcomes,
            watched.outcomes,
        )
        out.append(result)
        print(f"  throughput on {name}: ratio {result.ratio:.3f}, median pair {result.median:.3f}", file=sys.stderr)
    return out


def _sleep_until(deadline: float) -> None:
    delay = deadline - time.perf_counter()
    if delay > 0:
        time.sleep(delay)


def report(
    args: argparse.Namespace, p: blast.Plan, load: tuple[int, float], lat: Latency, tps: list[Throughput]
) -> str:
    v50, v99 = blast.percentile(lat.versions, 0.5), blast.percentile(lat.versions, 0.99)
    g50, g99 = blast.percentile(lat.pings, 0.5), blast.percentile(lat.pings, 0.99)
    lines = [
        f"Scale {args.scale}: {p.datasets:,} datasets, {p.column_edges:,} column edges, {p.features:,} features, "
        f"{p.models:,} models; {load[0]:,} aspects indexed in {load[1]:.0f} s (not timed below). "
        f"{lat.watched} active incidents in the watch index (opened in {lat.open_s:.0f} s).",
        "",
        "| new model version reading a poisoned feature → its at-risk tag on the MCP topic | n | p50 ms | p95 ms "
        "| p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|",
        "| through lineage → signals → incidents " + il.stats(lat.versions),
        "| baseline: plain produce → read_committed consume " + il.stats(lat.pings),
        "",
        f"p99 {v99:,.0f} ms (goal ≤ 2,000 ms): {'met' if v99 <= 2000 else 'NOT met'}; p50 {v50:,.0f} ms = "
        f"{v50 / max(g50, 0.001):.1f}× the broker round trip (p50 {g50:,.0f} ms, p99 {g99:,.0f} ms). "
        f"{lat.mcp_per_version:.1f} proposals per caught version. Paced at {args.rate}/s.",
        "",
        "| lineage role on a change log with no relevant change | aspects per side | baseline aspects/s "
        "| with the watch aspects/s | throughput ratio | median of the batch pairs' ratios | signals |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for t in tps:
        lines.append(
            f"| {t.store} store | {t.aspects:,} | {t.aspects / t.base_s:,.0f} | {t.aspects / t.watch_s:,.0f} "
            f"| {t.ratio:.3f} (drop {max(0.0, 1 - t.ratio) * 100:.1f}%) "
            f"| {t.median:.3f} (drop {max(0.0, 1 - t.median) * 100:.1f}%, {len(t.pairs)} pairs) | {t.signals} |"
        )
    worst = min(t.ratio for t in tps if t.store == "redis")
    lines += [
        "",
        f"Throughput drop on the Redis store (production): {max(0.0, 1 - worst) * 100:.1f}% (goal ≤ 10%): "
        f"{'met' if worst >= 0.9 else 'NOT met'}.",
    ]
    return "\n".join(lines)


def write_results(text: str, notes: list[str]) -> None:
    path = Path(__file__).with_name("RESULTS.md")
    section = (
        "## Live re-evaluation\n\n"
        "While incidents are active, lineage changes alone re-evaluate them (DESIGN §3): the latency from a new "
        "model version's MCL to its at-risk tag, through `pareis run lineage assertions incidents` on the local "
        "broker and Redis with the full blast graph loaded and 100 active incidents, and the lineage role's "
        "throughput with and without the watch on a change log that touches no active incident. See the "
        f"docstring of `bench/live_reevaluation.py` for the method.\n\n{text}\n\n" + "".join(f"- {n}\n" for n in notes)
    )
    record_section(path, "Live re-evaluation", section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--incidents", type=int, default=100)
    parser.add_argument("--versions", type=int, default=100)
    parser.add_argument("--rate", type=float, default=5.0, help="new model versions per second")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--open-timeout-s", type=float, default=1200, help="for the incidents to open (setup)")
    parser.add_argument("--throughput-aspects", type=int, default=3000, help="aspects per side per round")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument(
        "--redis", default=None, help="a database of its own (flushed); default: a private redis-server for the run"
    )
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    if args.redis is None:
        with private_redis() as url:
            args.redis = url
            run(args)
    else:
        run(args)


def run(args: argparse.Namespace) -> None:
    p = blast.plan(args.scale)
    poisoned = targets(p, args.incidents, args.seed)
    client = il.dedicated(args.redis)
    started = time.time()
    try:
        load_avg = _load()
        print(f"indexing scale {args.scale} ({p.datasets:,} datasets)", file=sys.stderr)
        load = il.load_index(client, p, [x.target for x in poisoned], time.time_ns() // 1_000_000)
        lat = latency(args, client, poisoned)
        print(f"  latency p99 {blast.percentile(lat.versions, 0.99):.0f} ms", file=sys.stderr)
        tps = throughput(args, client, p)
    finally:
        client.flushdb(asynchronous=True)
    text = report(args, p, load, lat, tps)
    notes = [
        f"Machine: {il.machine()}; one local Kafka broker; load average {load_avg} at the "
        f"start, {_load()} at the end; the whole run took {(time.time() - started) / 60:.1f} min.",
        f"Command: `.venv/bin/python bench/live_reevaluation.py --scale {args.scale} --incidents {args.incidents} "
        f"--versions {args.versions} --rate {args.rate} --rounds {args.rounds} "
        f"--throughput-aspects {args.throughput_aspects}`.",
    ]
    print(text)
    for n in notes:
        print(f"- {n}")
    if args.write_results:
        write_results(text, notes)


@contextmanager
def private_redis() -> Iterator[str]:
    """A redis-server of this run's own on a free loopback port (no persistence, ``noeviction``), stopped after:
    the shared server's databases are used by other engineers' tests, which flush them."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed; pass --redis URL of a database of your own")
    port = il.free_port()
    with tempfile.TemporaryDirectory(prefix="bench-live-redis-") as home:
        args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", home, "--save", "", "--appendonly", "no"]
        server = subprocess.Popen([*args, "--maxmemory-policy", "noeviction"], stdout=subprocess.DEVNULL)
        try:
            client = redis.Redis(port=port)
            deadline = time.monotonic() + 30
            while True:
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            client.close()
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            server.terminate()
            server.wait(30)


def _load() -> str:
    import os

    return f"{os.getloadavg()[0]:.1f}"


if __name__ == "__main__":
    main()
