"""Retrain-gate benchmark: :func:`pareis.answers.gate.gate` on models of ``bench/blast.py``'s generated graph, with
the lineage index and the run history in Redis vs in process memory (the baseline), in one run.

    .venv/bin/python bench/gate.py --scale 0.1 --redis redis://127.0.0.1:6379/9
    .venv/bin/python bench/gate.py --scale 0.1 --write-results   # and replace "## Retrain gate" in RESULTS.md
    .venv/bin/python bench/gate.py --scale 0.1 --cluster redis+cluster://127.0.0.1:7000   # and on Redis Cluster

**Graph**: ``bench/blast.py``'s (``--scale 1``: 100,000 datasets of 22 columns in lineage trees of 10, 1,000 and
10,000 datasets, 2,021,580 column edges, 20,000 features, 2,000 models), built through the lineage role's handler
into both stores, plus the gated models: ``--models`` per tree class (small, medium, large), each a version of its
own group with 20 features, each feature sourced from one column of a random dataset of one random tree of that
class (so a model's upstream is 20 column paths up to the tree's root).

**Run history** (both stores, same runs): a not-null assertion on every gated feature's source column and a
row-count assertion on each of its datasets, passing every day for ``--days`` days; background assertions on one
column of every 50th dataset, passing daily; ``--incidents`` of those background assertions, in small trees, fail
on day 2 and pass again on day 3 (healed incidents the gate must find and analyse, none reaching the gated models);
and on each small-class gated model, one source column's assertion fails on day 4 and heals on day 5 (an incident
that reaches it: its blast radius is computed in every gate call). The gate is asked at the end of the last day.

**Exposure index**: after the build, :func:`pareis.roles.exposure.rebuild` over each store into its own exposure
index (memory; Redis under ``bench:gate:exposure:``), as the lineage role's maintainer keeps it.

**Measured**: wall time of one ``gate(sources, model=…)`` (a fresh :class:`~pareis.core.graph.Memo` each call:
nothing is cached between calls), alternating which store goes first; both answers are checked equal. Reliability
is the gate's default score (check 9), read through the exposure index; on the first ``--walk-reps`` calls of the
first ``--walk-models`` models of each class also the old path (``use_index=False``: the downstream walk), the
baseline, checked equal. ``gc.freeze()`` after the build.

**Redis Cluster** (``--cluster URL``): the index, run history and exposure index built there too, and every gate call
made on it as well (the stores' order rotating), in the same run; a table gives its p50/p99 beside standalone Redis.
"""

from __future__ import annotations

import argparse
import gc
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.blast import COLUMNS, T0, Plan, build, column, dataset, dedicated_cluster, percentile, plan
from bench.results import record_section
from pareis.answers.gate import GateAnswer, gate
from pareis.answers.sources import Sources
from pareis.config import DatahubSettings
from pareis.contracts.records import Message
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.wire.changelog import ChangeLog
from pareis.roles.exposure import rebuild
from pareis.roles.lineage import LineageHandler
from pareis.store.exposure import MemoryExposureIndex
from pareis.store.exposure_redis import RedisExposureIndex
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.runs_memory import MemoryRunHistory
from pareis.store.runs_redis import RedisRunHistory

LINEAGE_PREFIX = "bench:lineage:"
RUNS_PREFIX = "bench:gate:runs:"
EXPOSURE_PREFIX = "bench:gate:exposure:"
FEATURES = 20
DAY = 86_400_000
BACKGROUND_EVERY = 50


@dataclass
class Gated:
    cls: str
    tree_size: int
    model: str
    sources: list[str]


@dataclass
class Extra:
    """What this benchmark adds to the blast graph: aspects for the index, runs for the history."""

    entries: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)
    runs: list[AssertionRun] = field(default_factory=list)
    gated: list[Gated] = field(default_factory=list)


def assertion_info(urn: str, ds: str, col: str | None) -> tuple[str, str, str, dict[str, Any]]:
    body: dict[str, Any] = {"dataset": ds, "aggregation": "IDENTITY" if col else "ROW_COUNT"}
    body.update(
        {"scope": "DATASET_COLUMN", "fields": [col], "operator": "NOT_NULL"} if col else {"scope": "DATASET_ROWS"}
    )
    return "assertion", urn, "assertionInfo", {"type": "DATASET", "datasetAssertion": body}


def daily(urn: str, ds: str, days: int, fail: set[int] | None = None) -> list[AssertionRun]:
    """One run a day at 06:00, SUCCESS except on the days in ``fail``."""
    failing = fail or set()
    return [
        AssertionRun(urn, T0 + d * DAY + 6 * 3_600_000, ResultType.FAILURE if d in failing else ResultType.SUCCESS, ds)
        for d in range(days)
    ]


def extra(p: Plan, per_class: int, days: int, incidents: int, seed: int) -> Extra:
    rng = random.Random(seed)
    out = Extra()
    n = 0
    for cls, trees in p.classes().items():
        for i in range(per_class):
            start, size = rng.choice(trees)
            group = f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,gate_{cls}_{i},PROD)"
            model = f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,gate_{cls}_{i}_v1,PROD)"
            feats, sources = [], []
            for f in range(FEATURES):
                k, j = start + rng.randrange(size), rng.randrange(COLUMNS)
                feature = f"urn:li:mlFeature:(gate_features,g{n:04d}_{f:02d})"
                feats.append(feature)
                sources.append(column(k, j))
                out.entries.append(("mlFeature", feature, "mlFeatureProperties", {"sources": [column(k, j)]}))
            out.entries.append(("mlModelGroup", group, "mlModelGroupProperties", {"name": f"gate_{cls}_{i}"}))
            out.entries.append(
                (
                    "mlModel",
                    model,
                    "mlModelProperties",
                    {"name": model, "mlFeatures": feats, "groups": [group], "created": {"time": T0 + DAY}},
                )
            )
            for f, col in enumerate(sources):
                ds = col[len("urn:li:schemaField:(") : col.rindex(",")]
                urn = f"urn:li:assertion:gate-{n}-{f}"
                out.entries.append(assertion_info(urn, ds, col))
                # The small-class models: one source column fails on day 4 and heals on day 5.
                fail = {4} if cls == "small" and f == 0 and days > 5 else set()
                out.runs += daily(urn, ds, days, fail)
            for ds in sorted({c[len("urn:li:schemaField:(") : c.rindex(",")] for c in sources}):
                urn = f"urn:li:assertion:gate-{n}-rows-{ds[-12:-6]}"
                out.entries.append(assertion_info(urn, ds, None))
                out.runs += daily(urn, ds, days)
            out.gated.append(Gated(cls, size, model, sources))
            n += 1
    small = list(p.classes()["small"])
    failing = set(rng.sample(range(len(small)), min(incidents, len(small))))
    for k in range(0, p.datasets, BACKGROUND_EVERY):
        urn = f"urn:li:assertion:background-{k}"
        col = column(k, k % COLUMNS)
        out.entries.append(assertion_info(urn, dataset(k), col))
        tree = next((i for i, (s, size) in enumerate(small) if s <= k < s + size), None)
        out.runs += daily(urn, dataset(k), days, {2} if tree in failing else set())
    return out


def messages(entries: list[tuple[str, str, str, dict[str, Any]]]) -> Iterator[list[Message[ChangeLog]]]:
    batch: list[Message[ChangeLog]] = []
    for offset, (kind, urn, name, aspect) in enumerate(entries):
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
        if len(batch) == 500:
            yield batch
            batch = []
    if batch:
        yield batch


def _diff(a: Any, b: Any, path: str = "") -> str:
    """Where two JSON values first differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return _diff(a.get(k), b.get(k), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _diff(x, y, f"{path}[{i}]")
    return f"{path}: {str(a)[:300]} != {str(b)[:300]}"


def timed(sources: Sources, model: str, at_ms: int, use_index: bool = True) -> tuple[float, GateAnswer]:
    started = time.perf_counter()
    answer = gate(sources, model=model, at_ms=at_ms, use_index=use_index)
    return time.perf_counter() - started, answer


def dedicated(url: str) -> redis.Redis:
    """A client on ``url``'s database, flushed — only if it holds nothing but this benchmark's keys."""
    client = redis.Redis.from_url(url, socket_timeout=120)
    for key in client.scan_iter(count=1000):
        if not key.startswith((LINEAGE_PREFIX.encode(), RUNS_PREFIX.encode(), EXPOSURE_PREFIX.encode())):
            raise SystemExit(f"{url} holds keys this benchmark did not write (e.g. {key!r}); pick another database")
    client.flushdb()
    return client


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="1 = 100,000 datasets, 2M column edges")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/9", help="a database for this benchmark only")
    parser.add_argument("--cluster", default=None, help="a Redis Cluster URL (redis+cluster://…), emptied: also there")
    parser.add_argument("--models", type=int, default=5, help="gated 20-feature models per tree class")
    parser.add_argument("--reps", type=int, default=10, help="gate calls per model and store")
    parser.add_argument("--walk-reps", type=int, default=1, help="of them, calls that also run the old path")
    parser.add_argument("--walk-models", type=int, default=2, help="models per class that run the old path")
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--incidents", type=int, default=20, help="healed background incidents in small trees")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    began = time.perf_counter()
    p = plan(args.scale)
    more = extra(p, args.models, args.days, args.incidents, args.seed)
    print(
        f"graph: {p.datasets:,} datasets, {p.column_edges:,} column edges; +{len(more.gated)} gated models, "
        f"{len(more.entries):,} more aspects, {len(more.runs):,} runs",
        file=sys.stderr,
    )
    client = dedicated(args.redis)
    on_cluster = dedicated_cluster(args.cluster) if args.cluster else None
    try:
        memory, store = MemoryLineageStore(), RedisLineageStore(client, prefix=LINEAGE_PREFIX)
        cluster = RedisLineageStore(on_cluster, prefix=LINEAGE_PREFIX) if on_cluster is not None else None
        built = build(p, memory, store, cluster)
        settings = DatahubSettings()
        for batch in messages(more.entries):
            for target in (memory, store, cluster):
                if target is not None:
                    LineageHandler(target, settings)(batch)
        mem_runs, redis_runs = MemoryRunHistory(), RedisRunHistory(client, prefix=RUNS_PREFIX)
        cluster_runs = RedisRunHistory(on_cluster, prefix=RUNS_PREFIX) if on_cluster is not None else None
        for r in more.runs:
            mem_runs.record(r)
        pipe_started = time.perf_counter()
        for r in more.runs:
            redis_runs.record(r)
            if cluster_runs is not None:
                cluster_runs.record(r)
        print(f"  runs recorded in Redis in {time.perf_counter() - pipe_started:.1f} s", file=sys.stderr)
        gc.collect()
        gc.freeze()
        mem_index, redis_index = MemoryExposureIndex(), RedisExposureIndex(client, prefix=EXPOSURE_PREFIX)
        started = time.perf_counter()
        rebuild(memory, mem_index, mem_runs, T0)
        rebuilt = {"memory": time.perf_counter() - started}
        started = time.perf_counter()
        rebuild(store, redis_index, redis_runs, T0)
        rebuilt["redis"] = time.perf_counter() - started
        print(f"  exposure index rebuilt in {rebuilt['memory']:.1f} s / {rebuilt['redis']:.1f} s", file=sys.stderr)
        sources = {
            "memory": Sources(memory, mem_runs, exposure=mem_index),
            "redis": Sources(store, redis_runs, exposure=redis_index),
        }
        if cluster is not None and cluster_runs is not None and on_cluster is not None:
            cluster_index = RedisExposureIndex(on_cluster, prefix=EXPOSURE_PREFIX)
            rebuild(cluster, cluster_index, cluster_runs, T0)
            sources["cluster"] = Sources(cluster, cluster_runs, exposure=cluster_index)
        at_ms = T0 + args.days * DAY
        rows = []
        for cls in ("small", "medium", "large"):
            times: dict[str, list[float]] = {
                "memory": [],
                "redis": [],
                "cluster": [],
                "memory walk": [],
                "redis walk": [],
                "cluster walk": [],
            }
            shapes = []
            labels = list(sources)
            for n, g in enumerate(g for g in more.gated if g.cls == cls):
                for i in range(args.reps):
                    order = labels[i % len(labels) :] + labels[: i % len(labels)]
                    answers = {}
                    walks = (True, False) if i < args.walk_reps and n < args.walk_models else (True,)
                    for use_index in walks:
                        for label in order:
                            if label == "cluster" and not use_index:
                                continue  # the old path is a standalone baseline
                            name = label if use_index else f"{label} walk"
                            seconds, answers[name] = timed(sources[label], g.model, at_ms, use_index)
                            times[name].append(seconds)
                    first = answers["memory"].to_json()
                    for label, a in answers.items():
                        assert a.to_json() == first, f"{label} disagrees with memory on {g.model}: " + _diff(
                            first, a.to_json()
                        )
                shapes.append(answers["memory"])
                print(f"  {cls} {n}: {ms(times['memory'][-1])} / {ms(times['redis'][-1])} ms", file=sys.stderr)
            tree = next(g.tree_size for g in more.gated if g.cls == cls)
            decisions = "/".join(sorted({a.decision for a in shapes}))
            incidents = max(len(a.result.incidents) for a in shapes)
            rows.append((cls, tree, len(shapes), times, decisions, incidents))
    finally:
        client.flushdb()
        if on_cluster is not None:
            for node in on_cluster.get_primaries():
                on_cluster.get_redis_connection(node).flushall()
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, Redis " + str(
        client.info("server")["redis_version"]
    )
    lines = [
        "| gated models (20 features) | tree | models | calls per store | decision | incidents reaching | "
        "memory p50 ms | memory p99 ms | Redis p50 ms | Redis p99 ms | Redis/memory p50 | Redis/memory p99 |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    walked = [
        "",
        "| the old path (downstream walk for check 9), same run | tree | calls per store | memory p50 ms "
        "| Redis p50 ms | Redis p99 ms | index vs walk, Redis p50 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for cls, tree, models, times, decisions, incidents in rows:
        m50, m99 = percentile(times["memory"], 0.5), percentile(times["memory"], 0.99)
        r50, r99 = percentile(times["redis"], 0.5), percentile(times["redis"], 0.99)
        lines.append(
            f"| {cls} | {tree:,} datasets | {models} | {len(times['redis'])} | {decisions} | {incidents} | {ms(m50)} "
            f"| {ms(m99)} | {ms(r50)} | {ms(r99)} | {r50 / m50:.2f}× | {r99 / m99:.2f}× |"
        )
        if times["redis walk"]:
            w50, wr50 = percentile(times["memory walk"], 0.5), percentile(times["redis walk"], 0.5)
            wr99 = percentile(times["redis walk"], 0.99)
            walked.append(
                f"| {cls} | {tree:,} datasets | {len(times['redis walk'])} | {ms(w50)} | {ms(wr50)} | {ms(wr99)} "
                f"| {wr50 / r50:,.1f}× faster |"
            )
    if any(times["cluster"] for *_, times, _, _ in rows):
        walked += [
            "",
            "| on Redis Cluster (same run, same models) | tree | calls | standalone p50 ms | standalone p99 ms "
            "| cluster p50 ms | cluster p99 ms | cluster/standalone p50 | cluster/standalone p99 |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for cls, tree, _, times, _, _ in rows:
            r50, r99 = percentile(times["redis"], 0.5), percentile(times["redis"], 0.99)
            c50, c99 = percentile(times["cluster"], 0.5), percentile(times["cluster"], 0.99)
            walked.append(
                f"| {cls} | {tree:,} datasets | {len(times['cluster'])} | {ms(r50)} | {ms(r99)} | {ms(c50)} "
                f"| {ms(c99)} | {c50 / r50:.2f}× | {c99 / r99:.2f}× |"
            )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    walked.append("")
    walked.append(
        f"Exposure index rebuild (snapshot + past incidents): {rebuilt['memory']:.1f} s over the in-memory store, "
        f"{rebuilt['redis']:.1f} s over Redis into Redis; load average at the end {load}."
    )
    text = "\n".join(lines + walked)
    print(text)
    wall = time.perf_counter() - began
    print(f"build: {built.aspects:,} aspects; whole run {wall / 60:.1f} min; {machine}", file=sys.stderr)
    if args.write_results:
        write_results(text, args, p, more, machine, wall)


def write_results(text: str, args: argparse.Namespace, p: Plan, more: Extra, machine: str, wall_s: float) -> None:
    path = Path(__file__).with_name("RESULTS.md")
    scope = "full scale" if args.scale >= 1 else f"scale {args.scale} (the full scale was not run for this record)"
    section = (
        "## Retrain gate\n\n"
        "`pareis gate` (the answers layer's `gate`) on 20-feature models of the blast benchmark's generated graph, "
        f"index and run history in Redis vs in process memory (the baseline), in one run ({scope}): "
        f"{p.datasets:,} datasets, {p.column_edges:,} column edges, {len(more.gated)} gated models, "
        f"{len(more.runs):,} assertion runs (with {args.incidents} healed background incidents and one incident "
        "reaching each small-class model). See the docstring of `bench/gate.py` for the method.\n\n"
        f"{text}\n\n"
        f"- Command: `.venv/bin/python bench/gate.py --scale {args.scale} --models {args.models} --reps {args.reps} "
        f"--walk-reps {args.walk_reps} --walk-models {args.walk_models} "
        f"--days {args.days} --incidents {args.incidents} --seed {args.seed} --write-results`\n"
        f"- Machine: {machine} (shared with other work while it ran); the whole run took {wall_s / 60:.1f} min\n"
        "- Goal: Redis p99 within 3× of in-memory and under 250 ms for a model with 20 features.\n"
    )
    record_section(path, "Retrain gate", section)


if __name__ == "__main__":
    main()
