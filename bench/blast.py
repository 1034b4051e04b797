"""Blast-radius benchmark: the lineage index in Redis vs in process memory, on one generated graph, in one run.

    .venv/bin/python bench/blast.py                         # full scale, print the tables
    .venv/bin/python bench/blast.py --scale 0.02            # a quick run
    .venv/bin/python bench/blast.py --scale 0.05 --build-only   # the index build alone
    .venv/bin/python bench/blast.py --write-results         # and replace "## Blast radius" in bench/RESULTS.md
    .venv/bin/python bench/blast.py --cluster redis+cluster://127.0.0.1:7000   # and on Redis Cluster, in the same run

**Graph** (``--scale 1``): 100,000 datasets of 22 columns in lineage trees (each dataset's column *j* derives from
column *j* of its parent; branching factor 3): one tree of 10,000 datasets, nine of 1,000, the rest of 10 —
2,021,580 column edges; 20,000 features, each sourced from one column; 2,000 models of 10 features each, in 200
model groups. Every dataset has ``schemaMetadata``, every non-root one ``upstreamLineage`` with
``fineGrainedLineages``. A blast from any column of a tree reaches that column in every dataset of the tree
(upstream to the root, then down), so the three tree sizes give blasts of 10, 1,000 and 10,000 columns (down
to ``--scale 0.25``; smaller scales shrink the two larger classes).

**Build**: the generated change-log entries (Pegasus JSON bytes, as the role's decoder hands them over) go through
the lineage role's handler (:class:`pareis.roles.lineage.LineageHandler`: translate + ``apply``) in batches of
500 — the same batch into the in-memory store (baseline) and the Redis store, each timed alone. Generation is
not timed. Rates are aspects per wall-clock second.

**Memory**: Redis ``INFO memory`` ``used_memory`` before and after the build, on a dedicated database (flushed
before and, unless ``--keep``, after; only if it holds nothing but this benchmark's keys). ``used_memory`` is
server-wide, so concurrent use of the same server skews it; ``MEMORY USAGE`` of a random key sample times the
key count is printed beside it as a cross-check.

**Blasts**: :func:`pareis.core.blast.blast_radius` of one random column of a random tree of each size, the same
column on both stores, alternating which goes first; every answer is checked equal on both. ``gc.freeze()``
after the build, so the collector does not walk the in-memory index during the baseline's blasts.

**Redis Cluster** (``--cluster URL``): the same build, memory figures (per primary: ``used_memory`` after − before and
keys, showing how the index spreads) and blasts on the cluster too, in the same run, rotating the three stores'
order; the tables gain its columns and its ratio to standalone Redis.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import redis
from redis.cluster import RedisCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import record_section
from pareis.compose.ports import redis_client
from pareis.config import DatahubSettings
from pareis.contracts.records import Message
from pareis.core.blast import blast_radius
from pareis.core.graph import LineageView
from pareis.datahub.wire.changelog import ChangeLog
from pareis.roles.lineage import LineageHandler
from pareis.store.lineage import LineageStore
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore

PREFIX = "bench:lineage:"
COLUMNS = 22
BRANCHING = 3
FEATURES_PER_MODEL = 10
VERSIONS_PER_GROUP = 10
BATCH = 500
T0 = 1_759_276_800_000


# --- the graph --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    datasets: int
    trees: tuple[tuple[int, int], ...]
    """(first dataset index, size) of each lineage tree."""
    features: int
    models: int

    @property
    def column_edges(self) -> int:
        return (self.datasets - len(self.trees)) * COLUMNS

    @property
    def groups(self) -> int:
        return math.ceil(self.models / VERSIONS_PER_GROUP)

    def classes(self) -> dict[str, list[tuple[int, int]]]:
        """Trees by blast class: small (10), medium (1,000), large (10,000) datasets, at this scale."""
        sizes = sorted({size for _, size in self.trees})
        named = {"small": sizes[0], "medium": sizes[len(sizes) // 2], "large": sizes[-1]}
        return {name: [t for t in self.trees if t[1] == size] for name, size in named.items()}


def plan(scale: float) -> Plan:
    datasets = max(int(100_000 * scale), 300)
    # The blast classes keep their sizes down to --scale 0.25 (25,000 datasets); below, they shrink.
    large, medium, small = min(10_000, datasets * 2 // 5), min(1_000, datasets // 25), 10
    sizes = [large] + [medium] * 9
    rest = datasets - sum(sizes)
    sizes += [small] * (rest // small)
    if rest % small:
        sizes.append(rest % small)
    trees, start = [], 0
    for size in sizes:
        trees.append((start, size))
        start += size
    return Plan(datasets, tuple(trees), max(int(20_000 * scale), 20), max(int(2_000 * scale), 2))


def dataset(k: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,bench.schema_{k // 1000:03d}.table_{k:06d},PROD)"


def column(k: int, j: int) -> str:
    return f"urn:li:schemaField:({dataset(k)},col_{j:02d})"


def feature(n: int) -> str:
    return f"urn:li:mlFeature:(bench_features,feature_{n:05d})"


def model(m: int) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,model_{m // VERSIONS_PER_GROUP:04d}_v{m % 10},PROD)"


def group(g: int) -> str:
    return f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,model_{g:04d},PROD)"


def schema_metadata(k: int) -> dict[str, Any]:
    return {
        "schemaName": f"bench.table_{k:06d}",
        "platform": "urn:li:dataPlatform:postgres",
        "version": 0,
        "hash": "",
        "platformSchema": {"com.linkedin.schema.OtherSchema": {"rawSchema": ""}},
        "fields": [
            {
                "fieldPath": f"col_{j:02d}",
                "nullable": True,
                "nativeDataType": "text",
                "type": {"type": {"com.linkedin.schema.StringType": {}}},
            }
            for j in range(COLUMNS)
        ],
    }


def upstream_lineage(k: int, parent: int) -> dict[str, Any]:
    return {
        "upstreams": [
            {
                "dataset": dataset(parent),
                "type": "TRANSFORMED",
                "auditStamp": {"time": T0, "actor": "urn:li:corpuser:etl"},
            }
        ],
        "fineGrainedLineages": [
            {
                "upstreamType": "FIELD_SET",
                "downstreamType": "FIELD",
                "upstreams": [column(parent, j)],
                "downstreams": [column(k, j)],
            }
            for j in range(COLUMNS)
        ],
    }


def feature_dataset(p: Plan, n: int) -> int:
    return (n * 7919) % p.datasets


def entries(p: Plan) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """(entity type, urn, aspect name, aspect) of the whole graph, in a plausible ingestion order."""
    for start, size in p.trees:
        for i in range(size):
            k = start + i
            yield "dataset", dataset(k), "schemaMetadata", schema_metadata(k)
            if i:
                yield "dataset", dataset(k), "upstreamLineage", upstream_lineage(k, start + (i - 1) // BRANCHING)
    for n in range(p.features):
        source = column(feature_dataset(p, n), n % COLUMNS)
        yield "mlFeature", feature(n), "mlFeatureProperties", {"sources": [source]}
    for g in range(p.groups):
        yield "mlModelGroup", group(g), "mlModelGroupProperties", {"name": f"model_{g:04d}"}
    for m in range(p.models):
        feats = [feature((m * FEATURES_PER_MODEL + i) % p.features) for i in range(FEATURES_PER_MODEL)]
        aspect = {
            "name": f"model {m}",
            "mlFeatures": feats,
            "groups": [group(m // VERSIONS_PER_GROUP)],
            "created": {"time": T0 + m},
        }
        yield "mlModel", model(m), "mlModelProperties", aspect


def batches(p: Plan) -> Iterator[list[Message[ChangeLog]]]:
    batch: list[Message[ChangeLog]] = []
    for offset, (kind, urn, name, aspect) in enumerate(entries(p)):
        change = ChangeLog(
            entity_type=kind,
            entity_urn=urn,
            change_type="UPSERT",
            aspect_name=name,
            aspect=orjson.dumps(aspect),
            previous_aspect=None,
            system_metadata={"version": "1", "lastObserved": T0, "runId": "bench"},
            created={"time": T0, "actor": "urn:li:corpuser:datahub"},
            headers=None,
            schema_id=0,
        )
        batch.append(Message("MetadataChangeLog_Versioned_v1", 0, offset, urn.encode(), change))
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


# --- measuring --------------------------------------------------------------------------------------------------
@dataclass
class Build:
    aspects: int = 0
    memory_s: float = 0.0
    redis_s: float = 0.0
    cluster_s: float = 0.0


def build(p: Plan, memory: MemoryLineageStore, store: RedisLineageStore, cluster: LineageStore | None = None) -> Build:
    """The graph through the lineage role's handler into ``memory``, ``store`` and ``cluster`` (when given), batch
    by batch, the stores' order rotating."""
    settings = DatahubSettings()
    stores: dict[str, LineageStore] = {"memory": memory, "redis": store}
    if cluster is not None:
        stores["cluster"] = cluster
    handlers = {name: LineageHandler(s, settings) for name, s in stores.items()}
    names = list(handlers)
    spent = dict.fromkeys(names, 0.0)
    result = Build()
    gc.disable()  # millions of long-lived containers: the collector would dominate both builds
    try:
        for i, batch in enumerate(batches(p)):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                started = time.perf_counter()
                handlers[name](batch)
                spent[name] += time.perf_counter() - started
            result.aspects += len(batch)
            if i % 50 == 0:
                print(f"\r  built {result.aspects:,} aspects", end="", file=sys.stderr, flush=True)
    finally:
        gc.enable()
    print(file=sys.stderr)
    outcomes = {name: set(h.outcomes) for name, h in handlers.items()}
    assert all(o == {"applied"} for o in outcomes.values()), outcomes
    result.memory_s, result.redis_s, result.cluster_s = spent["memory"], spent["redis"], spent.get("cluster", 0.0)
    return result


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def sampled_memory(client: redis.Redis, samples: int) -> tuple[int, float, dict[str, float]]:
    """(key count, estimated bytes: mean MEMORY USAGE of random keys × key count, estimated share per key kind)."""
    keys = client.dbsize()
    pipe = client.pipeline(transaction=False)
    for _ in range(samples):
        pipe.randomkey()
    sample = [k for k in pipe.execute() if k is not None]
    pipe = client.pipeline(transaction=False)
    for key in sample:
        pipe.memory_usage(key, samples=0)
    sizes = [s or 0 for s in pipe.execute()]
    by_kind: dict[str, float] = {}
    for key, size in zip(sample, sizes, strict=True):
        kind = key.decode()[len(PREFIX) :].rsplit("}", 1)[-1]  # layout 3: P{<home>}<kind>
        name = "record (r:)" if kind.startswith("r:") else kind
        by_kind[name] = by_kind.get(name, 0) + size
    total = sum(sizes)
    shares = {k: v / total for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])} if total else {}
    return keys, (total / len(sizes) * keys if sizes else 0.0), shares


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass
class Blasts:
    name: str
    tree_size: int
    columns: list[int]
    models: list[int]
    memory_s: list[float]
    redis_s: list[float]
    cluster_s: list[float] = field(default_factory=list)


def timed(view: LineageView, col: str) -> tuple[float, Any]:
    started = time.perf_counter()
    radius = blast_radius(view, columns=[col])
    return time.perf_counter() - started, radius


def blasts(
    p: Plan,
    memory: MemoryLineageStore,
    store: RedisLineageStore,
    reps: dict[str, int],
    seed: int,
    cluster: LineageView | None = None,
) -> list[Blasts]:
    rng = random.Random(seed)
    out = []
    views: list[tuple[str, LineageView]] = [("memory", memory), ("redis", store)]
    if cluster is not None:
        views.append(("cluster", cluster))
    for name, trees in p.classes().items():
        result = Blasts(name, trees[0][1], [], [], [], [])
        times = {"memory": result.memory_s, "redis": result.redis_s, "cluster": result.cluster_s}
        for i in range(reps[name]):
            start, size = rng.choice(trees)
            col = column(start + rng.randrange(size), rng.randrange(COLUMNS))
            order = views[i % len(views) :] + views[: i % len(views)]
            answers = {}
            for label, view in order:
                seconds, radius = timed(view, col)
                times[label].append(seconds)
                answers[label] = radius
            assert all(a == answers["memory"] for a in answers.values()), f"stores disagree on {col}"
            result.columns.append(len(answers["memory"].columns))
            result.models.append(len(answers["memory"].models))
        out.append(result)
    return out


# --- reporting --------------------------------------------------------------------------------------------------
def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}"


def build_table(b: Build) -> list[str]:
    lines = [
        "| Index build (lineage role handler, batches of 500) | aspects | seconds | aspects/s | vs memory |",
        "|---|---:|---:|---:|---:|",
        f"| in-memory store (baseline) | {b.aspects:,} | {b.memory_s:,.1f} | {b.aspects / b.memory_s:,.0f} | 1.00× |",
        f"| Redis store | {b.aspects:,} | {b.redis_s:,.1f} | {b.aspects / b.redis_s:,.0f} | "
        f"{b.memory_s / b.redis_s:.2f}× |",
    ]
    if b.cluster_s:
        lines.append(
            f"| Redis Cluster store | {b.aspects:,} | {b.cluster_s:,.1f} | {b.aspects / b.cluster_s:,.0f} | "
            f"{b.memory_s / b.cluster_s:.2f}× |"
        )
    return lines


def tables(p: Plan, b: Build, memory: dict[str, Any], results: list[Blasts]) -> str:
    lines = [
        *build_table(b),
        "",
        "| Redis memory | value |",
        "|---|---:|",
        f"| `used_memory` after − before | {memory['delta'] / 2**20:,.1f} MiB |",
        f"| per column edge ({p.column_edges:,}) | {memory['delta'] / p.column_edges:,.0f} B |",
        f"| per stored edge, all relations ({memory['edges']:,.0f}) | {memory['delta'] / memory['edges']:,.0f} B |",
        f"| keys | {memory['keys']:,.0f} |",
        f"| cross-check: mean `MEMORY USAGE` of {memory['samples']:,.0f} random keys × keys | "
        f"{memory['sampled'] / 2**20:,.1f} MiB |",
        f"| where it goes (sampled, by key kind) | {memory['shares']} |",
        "",
        "| Blast (one failing column) | tree | affected columns | models | runs | memory p50 ms | memory p99 ms "
        "| Redis p50 ms | Redis p99 ms | Redis/memory p50 | Redis/memory p99 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        m50, m99 = percentile(r.memory_s, 0.5), percentile(r.memory_s, 0.99)
        r50, r99 = percentile(r.redis_s, 0.5), percentile(r.redis_s, 0.99)
        cols = sorted(r.columns)[len(r.columns) // 2]
        mods = sorted(r.models)[len(r.models) // 2]
        lines.append(
            f"| {r.name} | {r.tree_size:,} datasets | {cols:,} | {mods:,} | {len(r.redis_s)} | {ms(m50)} | {ms(m99)} "
            f"| {ms(r50)} | {ms(r99)} | {r50 / m50:.2f}× | {r99 / m99:.2f}× |"
        )
    if any(r.cluster_s for r in results):
        lines += [
            "",
            "| Blast on Redis Cluster (same run, same columns) | tree | runs | standalone p50 ms | standalone p99 ms "
            "| cluster p50 ms | cluster p99 ms | cluster/standalone p50 | cluster/standalone p99 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in results:
            r50, r99 = percentile(r.redis_s, 0.5), percentile(r.redis_s, 0.99)
            c50, c99 = percentile(r.cluster_s, 0.5), percentile(r.cluster_s, 0.99)
            lines.append(
                f"| {r.name} | {r.tree_size:,} datasets | {len(r.cluster_s)} | {ms(r50)} | {ms(r99)} | {ms(c50)} "
                f"| {ms(c99)} | {c50 / r50:.2f}× | {c99 / r99:.2f}× |"
            )
    if memory.get("nodes"):
        lines += [
            "",
            "| Redis Cluster memory, per primary | `used_memory` after − before | keys | per column edge |",
            "|---|---:|---:|---:|",
        ]
        total = 0
        for node, (delta, keys) in sorted(memory["nodes"].items()):
            total += delta
            lines.append(f"| {node} | {delta / 2**20:,.1f} MiB | {keys:,} | {delta / p.column_edges:,.0f} B |")
        lines.append(f"| all primaries | {total / 2**20:,.1f} MiB | | {total / p.column_edges:,.0f} B |")
    return "\n".join(lines)


PREVIOUS = {
    "memory_rate": 1_642,
    "redis_rate": 1_011,
    "per_column_edge": 2_069,
    "memory_p99_ms": 974.1,
    "redis_p99_ms": 2_881.9,
}
"""The full-scale figures of the first recorded run (before the translation fast paths and the compact Redis
layout), for the comparison line."""

LAYOUT_1 = {"memory_rate": 6_521, "redis_rate": 1_853, "per_column_edge": 945, "redis_p99_ms": 1_727.6}
"""The last full-scale run on Redis layout 1 (one hash per column; ``used_memory`` server-wide on the shared
server), for the second comparison line."""


def comparison(p: Plan, b: Build, memory: dict[str, Any], results: list[Blasts]) -> str:
    """One line: this run against :data:`PREVIOUS` (build rates, bytes per column edge, large-blast p99)."""
    large = next(r for r in results if r.name == "large")
    memory_rate, redis_rate = b.aspects / b.memory_s, b.aspects / b.redis_s
    per_edge = memory["delta"] / p.column_edges
    m99, r99 = percentile(large.memory_s, 0.99) * 1000, percentile(large.redis_s, 0.99) * 1000
    old = PREVIOUS
    return (
        f"- Against the previous full-scale run: build {old['memory_rate']:,} → {memory_rate:,.0f} aspects/s "
        f"in memory ({memory_rate / old['memory_rate']:.1f}×), {old['redis_rate']:,} → {redis_rate:,.0f} on Redis "
        f"({redis_rate / old['redis_rate']:.1f}×); Redis {old['per_column_edge']:,} → {per_edge:,.0f} B per "
        f"column edge ({per_edge / old['per_column_edge']:.0%}; the sampled cross-check says "
        f"{memory['sampled'] / p.column_edges:,.0f} B); {large.tree_size:,}-dataset blast p99 "
        f"{old['memory_p99_ms']:,.0f} → {m99:,.0f} ms in memory, {old['redis_p99_ms']:,.0f} → {r99:,.0f} ms on Redis."
        f"\n- Against the last layout-1 run (one hash per column): Redis build {LAYOUT_1['redis_rate']:,} aspects/s "
        f"({LAYOUT_1['redis_rate'] / LAYOUT_1['memory_rate']:.2f}× memory) → {redis_rate:,.0f} "
        f"({redis_rate / memory_rate:.2f}× memory); {LAYOUT_1['per_column_edge']:,} → {per_edge:,.0f} B "
        f"per column edge (`used_memory`, server-wide); large-blast Redis p99 {LAYOUT_1['redis_p99_ms']:,.0f} → "
        f"{r99:,.0f} ms. Absolute rates move with the machine's load; compare the ratios."
    )


def write_results(
    text: str, args: argparse.Namespace, p: Plan, machine: str, wall_s: float, compared: str = ""
) -> None:
    path = Path(__file__).with_name("RESULTS.md")
    full = args.scale >= 1
    scope = "full scale" if full else f"scale {args.scale} (the full scale was not run for this record)"
    section = (
        "## Blast radius\n\n"
        "The lineage index in Redis vs in process memory (the baseline), on one generated graph, measured in one "
        f"run ({scope}): {p.datasets:,} datasets, {p.column_edges:,} column edges, {p.features:,} features, "
        f"{p.models:,} models in {p.groups:,} groups. See the docstring of `bench/blast.py` for the graph and the "
        f"method.\n\n{text}\n\n"
        f"- Command: `.venv/bin/python bench/blast.py --scale {args.scale} --reps {args.reps} --seed {args.seed} "
        "--write-results`\n"
        f"- Machine: {machine}; the whole run took {wall_s / 60:.1f} min\n"
        "- Goals: Redis p99 within 5× of in-memory for the large (10,000-column) blast; Redis index build "
        "≥ 5,000 aspects/s and ≥ 0.7× the in-memory build (issue 17).\n" + (f"{compared}\n" if compared else "")
    )
    record_section(path, "Blast radius", section)


def dedicated(url: str) -> redis.Redis:
    """A client on ``url``'s database, flushed — only if it holds nothing but this benchmark's keys."""
    client = redis.Redis.from_url(url, socket_timeout=120)
    for key in client.scan_iter(count=1000):
        if not key.startswith(PREFIX.encode()):
            raise SystemExit(f"{url} holds keys this benchmark did not write (e.g. {key!r}); pick another database")
    client.flushdb()
    return client


def dedicated_cluster(url: str) -> Any:
    """A client on the Redis Cluster at ``url``, emptied — only if it holds nothing but this benchmark's keys (and
    Pareis's epoch: its stores' first run stamps one)."""
    client = redis_client(url)
    if not isinstance(client, RedisCluster):
        raise SystemExit(f"{url} is no Redis Cluster URL (redis+cluster://…)")
    for node in client.get_primaries():
        server = client.get_redis_connection(node)
        for key in server.scan_iter(count=1000):
            if not key.startswith((PREFIX.encode(), b"pareis:epoch", b"pareis-test:")):
                raise SystemExit(f"{url} holds keys this benchmark did not write (e.g. {key!r}); use another cluster")
        server.flushall()
    return client


def node_memory(client: Any) -> dict[str, tuple[int, int]]:
    """(``used_memory``, keys) of every primary of a cluster."""
    out = {}
    for node in client.get_primaries():
        server = client.get_redis_connection(node)
        out[node.name] = (int(server.info("memory")["used_memory"]), int(server.dbsize()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="1 = 100,000 datasets, 2M column edges")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/9", help="a database for this benchmark only")
    parser.add_argument("--cluster", default=None, help="a Redis Cluster URL (redis+cluster://…), emptied: also there")
    parser.add_argument("--reps", type=int, default=20, help="blasts of the large class; medium ×2.5, small ×10")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="leave the index in Redis")
    parser.add_argument("--write-results", action="store_true")
    parser.add_argument(
        "--build-only", action="store_true", help="time the index build, print its table, skip memory and blasts"
    )
    args = parser.parse_args()
    if args.build_only and args.write_results:
        parser.error("--build-only prints only; --write-results needs the whole run")
    began = time.perf_counter()
    p = plan(args.scale)
    print(
        f"graph: {p.datasets:,} datasets, {p.column_edges:,} column edges, {p.features:,} features, "
        f"{p.models:,} models",
        file=sys.stderr,
    )
    client = dedicated(args.redis)
    on_cluster = dedicated_cluster(args.cluster) if args.cluster else None
    try:
        before = used_memory(client)
        nodes_before = node_memory(on_cluster) if on_cluster is not None else {}
        memory, store = MemoryLineageStore(), RedisLineageStore(client, prefix=PREFIX)
        cluster = RedisLineageStore(on_cluster, prefix=PREFIX) if on_cluster is not None else None
        b = build(p, memory, store, cluster)
        if args.build_only:
            print("\n".join(build_table(b)))
            return
        after = used_memory(client)
        samples = 20_000
        keys, sampled, shares = sampled_memory(client, samples)
        edges = sum(len(targets) for targets in memory._out.values())  # every stored edge, counted once
        mem: dict[str, Any] = {
            "delta": after - before,
            "keys": keys,
            "sampled": sampled,
            "samples": samples,
            "edges": edges,
        }
        if on_cluster is not None:
            nodes_after = node_memory(on_cluster)
            mem["nodes"] = {
                n: (used - nodes_before.get(n, (0, 0))[0], count) for n, (used, count) in nodes_after.items()
            }
        mem["shares"] = ", ".join(f"{kind} {share:.0%}" for kind, share in list(shares.items())[:6])
        gc.collect()
        gc.freeze()
        reps = {"small": args.reps * 10, "medium": int(args.reps * 2.5), "large": args.reps}
        results = blasts(p, memory, store, reps, args.seed, cluster)
    finally:
        if not args.keep:
            client.flushdb()
            if on_cluster is not None:
                for node in on_cluster.get_primaries():
                    on_cluster.get_redis_connection(node).flushall()
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, Redis " + str(
        client.info("server")["redis_version"]
    )
    text = tables(p, b, mem, results)
    compared = comparison(p, b, mem, results)
    print(text)
    print(compared)
    if args.write_results:
        write_results(text, args, p, machine, time.perf_counter() - began, compared)


if __name__ == "__main__":
    main()
