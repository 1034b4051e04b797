"""The assertions role's throughput: run events recorded and forwarded as signals per second, one instance, on Redis.

    .venv/bin/python bench/assertions_throughput.py                       # handler, then the pipeline over Kafka
    .venv/bin/python bench/assertions_throughput.py --what handler --profile /tmp/assertions.prof

**Input.** A synthetic burst of ``--events`` ``assertionRunEvent`` change-log entries (encoded as GMS frames them,
:class:`pareis.datahub.wire.codec.Encoder`) on ``--assertions`` assertions over ``--datasets`` warehouse tables,
a third of the tables with a dbt sibling (indexed through the lineage role's handler, so the incident keys are
resolved through real sibling classes) whose assertions name the dbt node as assertee; timestamps ascending per
assertion; results 80% SUCCESS, 15% FAILURE, 5% ERROR; 2% of the events are redeliveries of an earlier one (the
duplicate path: the stored run is forwarded). Plus one ``operation`` aspect per 20 run events.

**handler** — the role's decoder and handler (built as :func:`pareis.compose.roles.assertions_pipeline` builds
them) in this process on the dedicated Redis database (``--redis``, flushed before and after), in batches of
``--batch`` (the runtime's ``batch_size``): wall and CPU per event, no Kafka. The **baseline, same run**: the same
events through the per-message path the role had before its history writes were pipelined (the loop at the end of
this file: one ``record`` per run, one ``get`` per duplicate, one ``record_operation`` per operation), on fresh
keys; the ratio is the batched path's rate over it. ``--profile FILE`` writes cProfile stats of the batched run.

**pipeline** — ``pareis run assertions`` in a subprocess on fresh topics (as ``bench/incident_latency.py`` starts
its pipeline), the whole burst produced at once once the role has joined its group; run events/s = events / (last
signal visible ``read_committed`` − first event produced).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
import redis
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import incident_latency as il
from bench.machine import cpu_model
from pareis.compose.decoding import changelog_decoder
from pareis.config import DatahubSettings, Settings
from pareis.contracts.records import Message, OutRecord, RawMessage
from pareis.core.keys import incident_keys
from pareis.core.runs import OPERATION_ASPECT, AssertionRun, ResultType
from pareis.datahub.wire.changelog import ChangeLog
from pareis.datahub.wire.codec import Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.roles.assertions import ASPECT, AssertionsHandler, Observed, ObservedOperation, ObservedRun, run_decoder
from pareis.roles.lineage import LineageHandler
from pareis.roles.messages import RunSignal, encode
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.redis_epoch import Epoch
from pareis.store.runs_redis import DEFAULT_PREFIX, RedisRunHistory

TOPIC = "MetadataChangeLog_Timeseries_v1"
MARKER = b"bench:assertions_throughput:owner"
T0 = 1_780_000_000_000
RESULTS = {"SUCCESS": 0.80, "FAILURE": 0.15, "ERROR": 0.05}
SIGNALS = "pareis.signals.v1"


@dataclass(frozen=True)
class Burst:
    """The encoded events (key, value) and what they must give."""

    events: list[tuple[bytes, bytes]]
    runs: int
    operations: int
    signals: int
    """SUCCESS and FAILURE runs, redeliveries included (each is forwarded again)."""


def table(i: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:snowflake,bench.at.t{i:05d},PROD)"


def dbt_node(i: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:dbt,bench.at.t{i:05d},PROD)"


def dedicated(url: str) -> redis.Redis:
    """A client on ``url``'s database, flushed — only if it is empty or holds nothing but this benchmark's keys."""
    client = redis.Redis.from_url(url, socket_timeout=120)
    if client.dbsize() and not client.exists(MARKER):
        raise SystemExit(f"{url} holds keys this benchmark did not write; pick another database (--redis)")
    client.flushdb(asynchronous=True)
    client.set(MARKER, "bench/assertions_throughput.py")
    return client


def index_siblings(client: redis.Redis, datasets: int) -> int:
    """A third of the tables get a dbt sibling (both sides declaring), through the lineage role's handler."""
    handler = LineageHandler(RedisLineageStore(client), DatahubSettings())
    batch: list[Message[ChangeLog]] = []
    for i in range(0, datasets, 3):
        for entity, other, primary in ((table(i), dbt_node(i), False), (dbt_node(i), table(i), True)):
            change = ChangeLog(
                entity_type="dataset",
                entity_urn=entity,
                change_type="UPSERT",
                aspect_name="siblings",
                aspect=orjson.dumps({"siblings": [other], "primary": primary}),
                previous_aspect=None,
                system_metadata={"version": "1", "lastObserved": T0, "runId": "bench"},
                created={"time": T0, "actor": "urn:li:corpuser:datahub"},
                headers=None,
                schema_id=0,
            )
            batch.append(Message("MetadataChangeLog_Versioned_v1", 0, len(batch), entity.encode(), change))
    handler(batch)
    Epoch(client, "the benchmark's database").rebuilt()  # as `pareis bootstrap` leaves an index it loaded
    return len(batch)


def burst(n: int, assertions: int, datasets: int, seed: int) -> Burst:
    """``n`` run events (see the module docstring) and one ``operation`` per 20."""
    rng = random.Random(seed)
    encoder = Encoder(VendoredSchemaSource(TOPIC), TOPIC)
    owner = [rng.randrange(datasets) for _ in range(assertions)]
    clock = [T0] * assertions
    events: list[tuple[bytes, bytes]] = []
    sent: list[tuple[tuple[bytes, bytes], bool]] = []
    operations = signals = 0
    results, weights = list(RESULTS), list(RESULTS.values())
    for k in range(n):
        if sent and rng.random() < 0.02:
            event, counts = rng.choice(sent)
        else:
            a = rng.randrange(assertions)
            clock[a] += rng.randrange(1, 60_000)
            i = owner[a]
            result = rng.choices(results, weights)[0]
            urn = f"urn:li:assertion:bench-at-{a:05d}"
            aspect = {
                "timestampMillis": clock[a],
                "assertionUrn": urn,
                "asserteeUrn": dbt_node(i) if i % 3 == 0 and a % 2 else table(i),
                "runId": f"bench-{k}",
                "status": "COMPLETE",
                "partitionSpec": {"type": "FULL_TABLE", "partition": "FULL_TABLE_SNAPSHOT"},
                "result": {"type": result, "unexpectedCount": 42 if result == "FAILURE" else 0},
            }
            record = mcl_record(
                entity_urn=urn,
                aspect_name=ASPECT,
                aspect=aspect,
                system_metadata={"lastObserved": clock[a], "runId": f"bench-{k}"},
                created={"time": clock[a], "actor": "urn:li:corpuser:datahub"},
            )
            event, counts = (urn.encode(), encoder.encode_mcl(record)), result != "ERROR"
            sent.append((event, counts))
        events.append(event)
        signals += counts
        if k % 20 == 19:
            i = rng.randrange(datasets)
            ts = T0 + k * 1000
            record = mcl_record(
                entity_urn=table(i),
                aspect_name=OPERATION_ASPECT,
                aspect={"timestampMillis": ts, "lastUpdatedTimestamp": ts, "operationType": "INSERT"},
                system_metadata={"lastObserved": ts, "runId": f"bench-op-{k}"},
                created={"time": ts, "actor": "urn:li:corpuser:datahub"},
            )
            events.append((table(i).encode(), encoder.encode_mcl(record)))
            operations += 1
    return Burst(events, n, operations, signals)


def settings() -> Settings:
    return Settings.model_validate({"kafka": {"topics": {"mcl_timeseries": TOPIC}}})


def decode_all(b: Burst) -> tuple[list[Message[Observed]], float]:
    """The burst through the role's decoder; (messages, CPU seconds)."""
    decode = run_decoder(changelog_decoder(settings(), {ASPECT, OPERATION_ASPECT}))
    out: list[Message[Observed]] = []
    began = time.process_time()
    for offset, (key, value) in enumerate(b.events):
        got = decode(RawMessage(TOPIC, 0, offset, key, value, (), T0 + offset))
        if got is not None:
            out.append(Message(TOPIC, 0, offset, key, got))
    return out, time.process_time() - began


Handle = Callable[[Sequence[Message[Observed]]], list[OutRecord]]


def timed(handle: Handle, messages: Sequence[Message[Observed]], size: int) -> tuple[float, float, list[OutRecord]]:
    """(wall s, CPU s, records) of ``handle`` over ``messages`` in batches of ``size``."""
    out: list[OutRecord] = []
    began, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(messages), size):
        out += handle(messages[i : i + size])
    return time.perf_counter() - began, time.process_time() - cpu, out


_OLD_RECORD = """
if #redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1], 'LIMIT', 0, 1) > 0 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] == '1' then redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2]) end
return 1
"""


def per_message(client: redis.Redis, prefix: str, lineage: RedisLineageStore) -> Handle:
    """The baseline: the handler and the Redis run history as they were before the history's writes were batched
    (commit 2b24a2d): per run, two ``SADD`` and the record script, each a round trip, and a read of the stored run
    for a duplicate; per operation, one ``ZADD``."""
    script = client.register_script(_OLD_RECORD)
    reader = RedisRunHistory(client, prefix=prefix)

    def record(run: AssertionRun) -> bool:
        member = json.dumps(run.to_json(), sort_keys=True, separators=(",", ":"))
        client.sadd(f"{prefix}dataset:{run.dataset}", run.assertion)
        if run.result is ResultType.FAILURE:
            client.sadd(prefix + "failed", run.dataset)
        keys = [f"{prefix}{{{run.assertion}}}:all", f"{prefix}{{{run.assertion}}}:counting"]
        return bool(script(keys=keys, args=[run.timestamp_ms, member, "1" if run.counts else "0"]))

    def handle(batch: Sequence[Message[Observed]]) -> list[OutRecord]:
        recorded: list[ObservedRun] = []
        for message in batch:
            value = message.value
            if isinstance(value, ObservedOperation):
                client.zadd(f"{prefix}operation:{value.dataset}", {str(value.time_ms): value.time_ms})
                continue
            run = value.run
            if not record(run):
                run = reader.get(run.assertion, run.timestamp_ms) or run
            recorded.append(ObservedRun(run, value.logged_ms))
        counting = [o for o in recorded if o.run.counts]
        keys = incident_keys(lineage, {o.run.dataset for o in counting})
        out = []
        for o in counting:
            key = keys[o.run.dataset]
            out.append(OutRecord(SIGNALS, key.encode("utf-8"), encode(RunSignal(key, o.run, o.logged_ms))))
        return out

    return handle


def handler_phase(args: argparse.Namespace, b: Burst) -> list[str]:
    client = dedicated(args.redis)
    try:
        index_siblings(client, args.datasets)
        messages, decode_cpu = decode_all(b)
        lineage = RedisLineageStore(client)
        baseline = per_message(client, "bench:baseline:runs:", lineage)
        batched: Handle = AssertionsHandler(RedisRunHistory(client, prefix=DEFAULT_PREFIX), lineage, SIGNALS)
        profiler = cProfile.Profile() if args.profile else None
        base_wall, base_cpu, base_out = timed(baseline, messages, args.batch)
        if profiler is not None:
            profiler.enable()
        wall, cpu, out = timed(batched, messages, args.batch)
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile)
        if [(r.key, r.value) for r in out] != [(r.key, r.value) for r in base_out]:
            raise SystemExit("the batched handler's signals differ from the baseline's")
        if len(out) != b.signals:
            raise SystemExit(f"{len(out)} signals, expected {b.signals}")
    finally:
        client.flushdb(asynchronous=True)
    n = len(messages)
    rows = [
        "| path | events | wall s | events/s | CPU µs per event | ratio (events/s) |",
        "|---|---:|---:|---:|---:|---:|",
        f"| baseline: one round trip or more per message | {n:,} | {base_wall:.3f} | {n / base_wall:,.0f} "
        f"| {base_cpu / n * 1e6:,.0f} | 1.0× |",
        f"| the role's handler (batched) | {n:,} | {wall:.3f} | {n / wall:,.0f} | {cpu / n * 1e6:,.0f} "
        f"| **{base_wall / wall:.1f}×** |",
        f"| the role's decoder (both paths, not in the above) | {len(b.events):,} | — | — "
        f"| {decode_cpu / len(b.events) * 1e6:,.0f} | — |",
    ]
    return rows


class Counter(threading.Thread):
    """Counts the records on the signals topic (``read_committed``); notes when the ``expected``-th arrives."""

    def __init__(self, bootstrap: str, topic: str, expected: int) -> None:
        super().__init__(name="counter", daemon=True)
        self.consumer = il.committed_reader(bootstrap, "bench-at-reader")
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(il.PARTITIONS)])
        self.expected = expected
        self.count = 0
        self.done = threading.Event()
        self.last = 0.0

    def run(self) -> None:
        while not self.done.is_set():
            for m in self.consumer.consume(1000, 0.05):
                if m.error() is None:
                    self.count += 1
                    if self.count >= self.expected:
                        self.last = time.perf_counter()
                        self.done.set()
        self.consumer.close()


def pipeline_phase(args: argparse.Namespace, b: Burst) -> list[str]:
    client = dedicated(args.redis)
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    topics = il.Topics.fresh()
    il.create_topics(admin, topics)
    index_siblings(client, args.datasets)
    pipeline = il.Pipeline(args.bootstrap, args.redis, topics, il.Setting("default"), roles=("assertions",))
    producer = Producer(
        {"bootstrap.servers": args.bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True}
    )
    try:
        # Warm-up: one run event, seen as a signal, so the group has formed and the role is polling.
        warm = burst(1, 1, 1, args.seed + 1)
        counter = Counter(args.bootstrap, topics.signals, 1)
        counter.start()
        producer.produce(topics.timeseries, warm.events[0][1], warm.events[0][0])
        producer.flush(30)
        deadline = time.monotonic() + 120
        while not counter.done.wait(0.2):
            pipeline.check()
            if time.monotonic() > deadline:
                raise SystemExit("the warm-up signal never came")
        counter = Counter(args.bootstrap, topics.signals, b.signals + 1)
        counter.count = 0
        counter.start()
        load = os_load()
        began = time.perf_counter()
        for key, value in b.events:
            producer.produce(topics.timeseries, value, key)
            producer.poll(0)
        producer.flush(60)
        produced = time.perf_counter() - began
        deadline = time.monotonic() + 300
        while not counter.done.wait(0.2):
            pipeline.check()
            if time.monotonic() > deadline:
                raise SystemExit(f"{counter.count:,} of {b.signals + 1:,} signals after 300 s")
        wall = counter.last - began
    finally:
        pipeline.stop()
        il.delete_topics(admin, topics)
        client.flushdb(asynchronous=True)
    n = len(b.events)
    return [
        "| pipeline (`pareis run assertions`, one instance) | events | produced in s | last signal visible s "
        "| events/s | load |",
        "|---|---:|---:|---:|---:|---:|",
        f"| burst produced at once | {n:,} | {produced:.2f} | {wall:.2f} | **{n / wall:,.0f}** | {load} |",
    ]


def os_load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--assertions", type=int, default=2_000)
    parser.add_argument("--datasets", type=int, default=600)
    parser.add_argument("--batch", type=int, default=500, help="the runtime's batch_size")
    parser.add_argument("--what", choices=("handler", "pipeline", "both"), default="both")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/8", help="a database for this benchmark only")
    parser.add_argument("--profile", help="write cProfile stats of the batched handler here")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    b = burst(args.events, args.assertions, args.datasets, args.seed)
    print(
        f"{args.events:,} run events ({b.signals:,} forwarded) and {b.operations:,} operations; "
        f"{cpu_model()}, load {os_load()}\n"
    )
    if args.what in ("handler", "both"):
        print("\n".join(handler_phase(args, b)) + "\n")
    if args.what in ("pipeline", "both"):
        print("\n".join(pipeline_phase(args, b)) + "\n")


if __name__ == "__main__":
    main()
