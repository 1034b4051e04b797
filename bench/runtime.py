"""Runtime throughput: the lineage role's consume → decode → filter → no-op handler → commit, per process, beside
DataHub Actions' own Kafka event source and pipeline (no-op action) on the same corpus, broker and topic.

    .venv/bin/python bench/runtime.py [--messages 30000] [--runs 3] [--bootstrap 127.0.0.1:9092]

The corpus is a change log as GMS writes it (Confluent-framed Avro MCLs, key = URN): about a third lineage
aspects, the rest the everyday aspects the lineage role skips. Both sides decode by writer schema id through the
same local Confluent-compatible registry (a tiny in-process HTTP server; both clients cache the schema after the
first message) and keep the same aspects:

* Pareis: :class:`pareis.kafka.runner.RoleRunner`, at-least-once, with the lineage role's decoder
  (``changelog_decoder`` with ``LINEAGE_ASPECTS``: one pass, ``Decoder.kept_mcl``, filtering on the aspect name,
  then decoding what the roles read) and a handler that does nothing; the runtime's own commit cadence
  (``commit_every`` / ``commit_interval_ms``; on the hot path the offset commit is asynchronous, see
  :mod:`pareis.kafka.checkpoint`).
* DataHub Actions: ``Pipeline.create`` with its ``kafka`` source (AvroDeserializer, pre-deserialisation MCL filter
  on the same aspect names via an ``event_type`` filter), and an action that does nothing; its own commit scheme
  (offsets stored per event, committed asynchronously).

Throughput is measured from the first message seen to the last one processed (group join excluded), as the median
of ``--runs`` runs, each on a fresh consumer group. The *busy* fractions say how much of that wall time the side
spent on a CPU: the process (its CPU time, librdkafka's threads included, over the wall time) and, for Pareis, the
role's loop thread alone (its thread CPU time over the wall time; what is left is the loop waiting: for fetches,
for the broker, or for a core on a loaded machine). Prints a Markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from pareis.compose.decoding import changelog_decoder
from pareis.config import KafkaSettings, RuntimeSettings, Settings, Topics
from pareis.contracts.records import Message, OutRecord
from pareis.datahub.translate.lineage import LINEAGE_ASPECTS
from pareis.datahub.wire.codec import Decoder, Encoder, mcl_record
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.errors import DecodeError
from pareis.kafka.role import Delivery, Pipeline, Role
from pareis.kafka.runner import RoleRunner
from pareis.telemetry.health import Health
from pareis.telemetry.metrics import RuntimeMetrics

TOPIC_NAME = "MetadataChangeLog_Versioned_v1"


# --- corpus ----------------------------------------------------------------------------------------------------------
def _columns(rng: random.Random, n: int) -> list[str]:
    return [f"col_{rng.randrange(10_000)}_{i}" for i in range(n)]


def _aspect(rng: random.Random, name: str, urn: str) -> dict[str, Any]:
    table = urn.rsplit(",", 2)[1]
    cols = _columns(rng, rng.randint(8, 40))
    if name == "upstreamLineage":
        ups = [f"urn:li:dataset:(urn:li:dataPlatform:snowflake,raw.t{rng.randrange(500)},PROD)" for _ in range(3)]
        return {
            "upstreams": [{"dataset": u, "type": "TRANSFORMED", "auditStamp": {"time": 0, "actor": "x"}} for u in ups],
            "fineGrainedLineages": [
                {
                    "upstreamType": "FIELD_SET",
                    "upstreams": [f"urn:li:schemaField:({ups[0]},{c})"],
                    "downstreamType": "FIELD",
                    "downstreams": [f"urn:li:schemaField:({urn},{c})"],
                    "transformOperation": "SQL: select",
                    "confidenceScore": 0.9,
                }
                for c in cols
            ],
        }
    if name in ("schemaMetadata", "editableSchemaMetadata"):
        return {
            "schemaName": table,
            "platform": "urn:li:dataPlatform:snowflake",
            "version": 0,
            "hash": "",
            "platformSchema": {"com.linkedin.schema.MySqlDDL": {"tableSchema": ""}},
            "fields": [
                {
                    "fieldPath": c,
                    "nativeDataType": "VARCHAR(256)",
                    "type": {"type": {"com.linkedin.schema.StringType": {}}},
                    "nullable": True,
                    "description": "a column " * rng.randint(1, 8),
                }
                for c in cols
            ],
        }
    if name == "datasetProperties":
        return {
            "name": table,
            "description": "A table of things. " * rng.randint(5, 60),
            "customProperties": {f"prop_{i}": "v" * rng.randint(5, 40) for i in range(rng.randint(3, 20))},
        }
    if name == "ownership":
        owners = [{"owner": f"urn:li:corpuser:user{rng.randrange(99)}", "type": "DATAOWNER"} for _ in range(4)]
        return {"owners": owners, "lastModified": {"time": 0, "actor": "urn:li:corpuser:datahub"}}
    if name == "globalTags":
        return {"tags": [{"tag": f"urn:li:tag:t{rng.randrange(50)}"} for _ in range(rng.randint(1, 8))]}
    if name == "browsePathsV2":
        return {"path": [{"id": f"level{i}"} for i in range(rng.randint(2, 6))]}
    if name == "status":
        return {"removed": False}
    return {"typeNames": ["Table"], "note": "x" * rng.randint(50, 2000)}


ASPECT_MIX = (
    ["upstreamLineage"] * 12
    + ["schemaMetadata"] * 10
    + ["status"] * 6
    + ["datasetProperties"] * 18
    + ["ownership"] * 10
    + ["globalTags"] * 10
    + ["browsePathsV2"] * 10
    + ["editableSchemaMetadata"] * 8
    + ["subTypes"] * 8
    + ["dataPlatformInstance"] * 8
)


def corpus(n: int, seed: int = 1) -> list[tuple[bytes, bytes]]:
    """``n`` (key, value) MCL frames; ~28% lineage aspects."""
    rng = random.Random(seed)
    encoder = Encoder(VendoredSchemaSource(), TOPIC_NAME)
    out = []
    for i in range(n):
        urn = f"urn:li:dataset:(urn:li:dataPlatform:snowflake,db.schema.table_{i % 5000},PROD)"
        name = rng.choice(ASPECT_MIX)
        aspect = _aspect(rng, name, urn)
        previous = _aspect(rng, name, urn) if rng.random() < 0.5 else None
        system = {"lastObserved": 1_700_000_000_000 + i, "runId": f"ingest-{i // 1000}", "version": str(i % 9)}
        created = {"time": 1_700_000_000_000 + i, "actor": "urn:li:corpuser:datahub"}
        record = mcl_record(
            entity_urn=urn,
            aspect_name=name,
            aspect=aspect,
            previous_aspect=previous,
            system_metadata=system,
            created=created,
        )
        out.append((urn.encode(), encoder.encode_mcl(record)))
    return out


# --- a Confluent-compatible registry serving the vendored schemas by id ----------------------------------------------
class Registry:
    """``GET /schemas/ids/<id>`` for DataHub's internal ids over the vendored schemas."""

    def __init__(self) -> None:
        source = VendoredSchemaSource()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                match = re.match(r"^/schemas/ids/(\d+)", self.path)
                status, body = 404, {"error_code": 40403, "message": "Schema not found"}
                if match:
                    try:
                        writer = source.writer_schema(int(match.group(1)))
                        status, body = 200, {"schema": json.dumps(writer.json), "schemaType": "AVRO"}
                    except DecodeError:  # an id DataHub's internal registry does not have: 404
                        pass
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


# --- the two sides ---------------------------------------------------------------------------------------------------
def noop(_batch: Sequence[Message[Any]]) -> Iterable[OutRecord]:
    return ()


def run_pareis(
    bootstrap_servers: str, topic: str, total: int, registry_url: str
) -> tuple[float, float, tuple[float, float]]:
    """(msg/s, msg per CPU-second, (the loop thread's fractions of the wall time on a CPU, and runnable but
    waiting for a core)) of one run."""
    settings = Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap_servers, schema_registry_url=registry_url, topics=Topics()),
        runtime=RuntimeSettings(instance_id="bench", http_port=0),
    )
    role = Role(
        "lineage",
        (topic,),
        f"bench-pareis-{uuid.uuid4()}",
        Delivery.AT_LEAST_ONCE,
        lambda: Pipeline(decode=changelog_decoder(settings, LINEAGE_ASPECTS), handle=noop),
    )
    metrics, stop = RuntimeMetrics(), threading.Event()
    runner = RoleRunner(role, settings, metrics=metrics, health=Health(), stop=stop)
    thread = threading.Thread(target=runner.run)
    thread.start()
    assert thread.native_id is not None
    schedstat = Path(f"/proc/self/task/{thread.native_id}/schedstat")
    counter = metrics.consumed.labels("lineage", topic, "0")

    def consumed() -> float:
        # The counter's value itself: a registry scan per look (every 20 ms) would take the GIL from the loop.
        return float(counter._value.get())

    start_count, started, cpu = _wait_first(consumed)
    on_cpu, runnable = _sched(schedstat)
    finished, cpu_used = _wait_count(consumed, total, cpu)
    on_cpu_end, runnable_end = _sched(schedstat)
    stop.set()
    thread.join(30)
    wall = finished - started
    loop = ((on_cpu_end - on_cpu) / wall, (runnable_end - runnable) / wall)
    return (total - start_count) / wall, (total - start_count) / cpu_used, loop


def _sched(schedstat: Path) -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for a core) of one thread so far (Linux schedstat)."""
    on_cpu, waiting, _ = schedstat.read_text().split()
    return int(on_cpu) / 1e9, int(waiting) / 1e9


def run_actions(bootstrap_servers: str, topic: str, total: int, registry_url: str) -> tuple[float, float, None]:
    from datahub_actions.action.action import Action
    from datahub_actions.action.action_registry import action_registry
    from datahub_actions.pipeline.pipeline import Pipeline as ActionsPipeline

    handled = [0]

    class NoOpAction(Action):
        @classmethod
        def create(cls, config_dict: dict[str, Any], ctx: Any) -> NoOpAction:
            return cls()

        def act(self, event: Any) -> None:
            handled[0] += 1

        def close(self) -> None:
            return None

    action_registry.register("bench-noop", NoOpAction, override=True)
    pipeline = ActionsPipeline.create(
        {
            "name": f"bench-actions-{uuid.uuid4()}",
            "source": {
                "type": "kafka",
                "config": {
                    "connection": {
                        "bootstrap": bootstrap_servers,
                        "schema_registry_url": registry_url,
                        "consumer_config": {"auto.offset.reset": "earliest"},
                    },
                    "topic_routes": {"mcl": topic},
                },
            },
            "filters": [
                {
                    "type": "event_type",
                    "config": {
                        "filter": {"MetadataChangeLogEvent_v1": {"event": [{"aspectName": sorted(LINEAGE_ASPECTS)}]}}
                    },
                }
            ],
            "action": {"type": "bench-noop"},
        }
    )
    seen = [0]
    source: Any = pipeline.source
    observe = source._observe_message

    def counting(message: Any) -> None:
        seen[0] += 1
        observe(message)

    source._observe_message = counting
    thread = threading.Thread(target=pipeline.run, daemon=True)
    thread.start()
    start_count, started, cpu = _wait_first(lambda: float(seen[0]))
    finished, cpu_used = _wait_count(lambda: float(seen[0]), total, cpu)
    pipeline.stop()
    thread.join(30)
    pipeline.close()
    return (total - start_count) / (finished - started), (total - start_count) / cpu_used, None


def _wait_first(count: Any, timeout_s: float = 120) -> tuple[float, float, float]:
    """(count, wall clock, process CPU time) when the first messages have been seen."""
    deadline = time.monotonic() + timeout_s
    while (value := count()) == 0:
        if time.monotonic() > deadline:
            raise TimeoutError("no message consumed")
        time.sleep(0.005)
    return value, time.monotonic(), time.process_time()


def _wait_count(count: Any, total: int, cpu_start: float, timeout_s: float = 900) -> tuple[float, float]:
    """(wall clock, CPU seconds used since ``cpu_start``) once ``total`` messages have been seen."""
    deadline = time.monotonic() + timeout_s
    while count() < total:
        if time.monotonic() > deadline:
            raise TimeoutError(f"consumed {count()} of {total}")
        time.sleep(0.02)
    return time.monotonic(), time.process_time() - cpu_start


def measure(
    side: str, bootstrap_servers: str, topic: str, total: int, registry_url: str
) -> tuple[float, float, tuple[float, float] | None]:
    """One run of ``side`` in a fresh interpreter (no state shared between runs): (msg/s, msg per CPU-second,
    the loop thread's (on-CPU, waiting-for-a-core) fractions or None)."""
    args = ["--side", side, "--topic", topic, "--messages", str(total), "--bootstrap", bootstrap_servers]
    done = subprocess.run(
        [sys.executable, __file__, *args, "--registry", registry_url],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{side} run failed:\n{done.stderr[-4000:]}")
    rate, cpu_rate, loop_busy = json.loads(done.stdout.strip().splitlines()[-1])
    return float(rate), float(cpu_rate), tuple(loop_busy) if loop_busy else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, default=30_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--bootstrap", default="127.0.0.1:9092")
    p.add_argument("--side", choices=["pareis", "actions"], help=argparse.SUPPRESS)
    p.add_argument("--topic", help=argparse.SUPPRESS)
    p.add_argument("--registry", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.side:  # one measured run, in its own process
        logging.disable(logging.INFO)
        fn = run_pareis if a.side == "pareis" else run_actions
        print(json.dumps(fn(a.bootstrap, a.topic, a.messages, a.registry)))
        return 0
    print(f"building {a.messages} MCLs…", file=sys.stderr)
    records = corpus(a.messages)
    sizes = [len(v) for _, v in records]
    header = Decoder(VendoredSchemaSource()).header
    kept = sum(1 for _, v in records if header(v).aspect_name in LINEAGE_ASPECTS)
    topic = f"bench-runtime-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": a.bootstrap, "linger.ms": 20})
    for i, (key, value) in enumerate(records):
        producer.produce(topic, value, key)
        if i % 1000 == 0:
            producer.poll(0)
    producer.flush(60)
    del records
    registry = Registry()
    results: dict[str, list[tuple[float, float]]] = {"pareis": [], "actions": []}
    loop_busy: list[tuple[float, float]] = []
    try:
        for run in range(a.runs):
            for side in ("pareis", "actions"):
                rate, cpu_rate, busy = measure(side, a.bootstrap, topic, a.messages, registry.url)
                results[side].append((rate, cpu_rate))
                if busy is not None:
                    loop_busy.append(busy)
                loop = ""
                if busy is not None:
                    loop = f", loop thread on a CPU {busy[0]:.0%}, waiting for a core {busy[1]:.0%}"
                print(
                    f"run {run + 1}: {side}: {rate:,.0f} msg/s, {cpu_rate:,.0f} msg/CPU-s, process busy "
                    f"{rate / cpu_rate:.0%}{loop}",
                    file=sys.stderr,
                )
    finally:
        for future in admin.delete_topics([topic]).values():
            future.result(30)
    wall = {side: statistics.median(r for r, _ in runs) for side, runs in results.items()}
    cpu = {side: statistics.median(c for _, c in runs) for side, runs in results.items()}
    print(
        f"\n{a.messages:,} MCLs, mean {statistics.mean(sizes):,.0f} B (max {max(sizes):,} B), "
        f"{kept / a.messages:.0%} lineage aspects kept; 1 partition; median of {a.runs} runs, each side in its "
        "own process\n"
    )
    print(
        "| path | msg/s per process | msg per CPU-second | busy: process / loop thread (+ waiting for a core) "
        "| vs Actions (wall / CPU) |\n|---|---:|---:|---:|---:|"
    )
    print(
        "| DataHub Actions: kafka source + event_type filter (aspectName) + no-op action "
        f"| {wall['actions']:,.0f} | {cpu['actions']:,.0f} | {wall['actions'] / cpu['actions']:.0%} / — | 1× / 1× |"
    )
    print(
        "| Pareis lineage role: RoleRunner + lineage decoder + no-op handler + its commit cadence "
        f"| {wall['pareis']:,.0f} | {cpu['pareis']:,.0f} "
        f"| {wall['pareis'] / cpu['pareis']:.0%} / {statistics.median(b for b, _ in loop_busy):.0%} "
        f"(+ {statistics.median(w for _, w in loop_busy):.0%}) "
        f"| {wall['pareis'] / wall['actions']:.1f}× / {cpu['pareis'] / cpu['actions']:.1f}× |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
