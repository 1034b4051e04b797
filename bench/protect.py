"""Protect benchmark: reliability scores and ranked gaps (``pareis protect``) on the blast benchmark's graph.

    .venv/bin/python bench/protect.py --scale 0.05            # what bench/RESULTS.md records
    .venv/bin/python bench/protect.py --scale 0.05 --write-results
    .venv/bin/python bench/protect.py --scale 1 --whole-only --no-whole-walk --write-results   # item 2 alone

**Graph**: :mod:`bench.blast`'s (``--scale 1``: 100,000 datasets of 22 columns in lineage trees, 20,000 features,
2,000 models in 200 groups), built into the in-memory store and the Redis store by the lineage role's handler, plus
assertions and runs: every 5th dataset has a ``not_null`` assertion on ``col_00`` and one on ``col_01``, each with a
SUCCESS run a day for 7 days, and one assertion of one dataset of the largest tree fails on the 6th day (an
incident, so gaps can match a past incident). Runs go into both run histories (memory and Redis). ``gc.freeze()``
after the build, as in ``bench/blast.py``.

**Exposure index** (:mod:`pareis.store.exposure`): after the build, the maintainer's recomputation
(:func:`pareis.roles.exposure.rebuild`: the snapshot of every column's downstream features and models, and the
affected columns of every past incident) over each store into its own index (memory; Redis under
``bench:exposure:``), timed: what a lineage change costs the running service.

**Measured**, in one run:

1. one model — :func:`pareis.answers.reliability.protect` ``--model`` for random model versions, the same model on
   both stores (alternating which goes first), read from the exposure index; on the first ``--walk-reps`` of them
   also the old path (``use_index=False``: the downstream walk and the analysed incident list), the baseline; every
   answer checked equal on both stores and both paths; p50/p99 per store and path, and the ratios;
2. the whole graph in memory — protect with no ``--model``: every model's and upstream dataset's score and every gap
   ranked (once; the figure is its wall time), from the index, and (unless ``--no-whole-walk``) by the walk;
   ``--whole-only`` measures this item alone (no Redis: the in-memory store built by the lineage role's handler,
   its exposure index rebuilt), recorded in its own section;
3. score write volume — the incidents role's score publisher (:class:`pareis.roles.scores.ScorePublisher`) on a
   burst of 1,000 runs of one dataset's assertions, in batches of 100, and ``pareis demo``'s recorded timeline
   through every role: writes per run, and against the baseline of one write per run per entity.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import blast
from bench.machine import cpu_model
from bench.results import record_section
from pareis.answers.reliability import protect
from pareis.answers.sources import Sources
from pareis.config import DatahubSettings
from pareis.contracts.records import Message
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.translate.lineage import lineage_update
from pareis.roles.exposure import rebuild
from pareis.roles.lineage import LineageHandler
from pareis.roles.messages import RunSignal
from pareis.roles.scores import ScorePublisher
from pareis.store.exposure import MemoryExposureIndex
from pareis.store.exposure_redis import RedisExposureIndex
from pareis.store.lineage import LineageStore, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.runs import RunHistory
from pareis.store.runs_memory import MemoryRunHistory
from pareis.store.runs_redis import RedisRunHistory
from pareis.store.scores import MemoryScoreLedger

DAY = 86_400_000
RUNS_PREFIX = "bench:runs:"
EXPOSURE_PREFIX = "bench:exposure:"


def assertion(k: int, j: int) -> str:
    return f"urn:li:assertion:bench-{k:06d}-{j:02d}"


def add_assertions(p: blast.Plan, stores: list[LineageStore], histories: list[RunHistory]) -> tuple[int, int]:
    """Assertions on col_00 and col_01 of every 5th dataset, 7 daily runs each; one failure in the large tree."""
    (large_start, large_size) = p.classes()["large"][0]
    failing = large_start + large_size // 2
    updates = []
    runs: list[AssertionRun] = []
    for k in range(0, p.datasets, 5):
        for j in (0, 1):
            info = {"type": "DATASET", "datasetAssertion": {"dataset": blast.dataset(k), "scope": "DATASET_COLUMN",
                    "operator": "NOT_NULL", "fields": [blast.column(k, j)]}}  # fmt: skip
            update = lineage_update(assertion(k, j), "assertionInfo", "UPSERT", info, Stamp(1, blast.T0))
            assert update is not None
            updates.append(update)
            for day in range(7):
                bad = k == failing - failing % 5 and j == 0 and day == 5
                result = ResultType.FAILURE if bad else ResultType.SUCCESS
                runs.append(AssertionRun(assertion(k, j), blast.T0 + day * DAY, result, blast.dataset(k)))
    for store in stores:
        for i in range(0, len(updates), 500):
            store.apply(updates[i : i + 500])
    for history in histories:
        for run in runs:
            history.record(run)
    return len(updates), len(runs)


def percentile(values: list[float], q: float) -> float:
    return blast.percentile(values, q)


def one_model(
    p: blast.Plan, memory: Sources, on_redis: Sources, reps: int, walk_reps: int, seed: int, at_ms: int
) -> dict[str, Any]:
    rng = random.Random(seed)
    times: dict[str, list[float]] = {"memory": [], "redis": [], "memory walk": [], "redis walk": []}
    gaps: list[int] = []
    for i in range(reps):
        m = blast.model(rng.randrange(p.models))
        order = [("memory", memory), ("redis", on_redis)]
        if i % 2:
            order.reverse()
        answers = {}
        for walk in (False, True) if i < walk_reps else (False,):
            for label, sources in order:
                name = f"{label} walk" if walk else label
                started = time.perf_counter()
                answers[name] = protect(sources, at_ms=at_ms, model=m, use_index=not walk).to_json()
                times[name].append(time.perf_counter() - started)
                print(f"  {m[-24:]} {name}: {times[name][-1]:.3f} s", file=sys.stderr)
        first = answers["memory"]
        assert all(a == first for a in answers.values()), f"stores or paths disagree on {m}"
        gaps.append(len(first["gaps"]))
    return {"times": times, "gaps": gaps}


def whole_graph(memory: Sources, at_ms: int, walk: bool) -> tuple[float, float | None, dict[str, Any]]:
    started = time.perf_counter()
    answer = protect(memory, at_ms=at_ms).to_json()
    indexed = time.perf_counter() - started
    if not walk:
        return indexed, None, answer
    started = time.perf_counter()
    walked = protect(memory, at_ms=at_ms, use_index=False).to_json()
    walk_s = time.perf_counter() - started
    assert walked == answer, "the whole-graph answer differs between the index and the walk"
    return indexed, walk_s, answer


def burst(p: blast.Plan, lineage: MemoryLineageStore, at_ms: int) -> dict[str, int]:
    """1,000 runs of one dataset's two assertions (alternating results every 50 runs) in batches of 100: score
    writes, against the 1,000 signals a write-every-run publisher would send per entity."""
    history = MemoryRunHistory()
    k = 5 * (p.datasets // 10)
    publisher = ScorePublisher(lineage, history, MemoryScoreLedger())
    writes, entities = 0, set()
    batch: list[Message[RunSignal]] = []
    for n in range(1000):
        ok = (n // 50) % 2 == 0
        run = AssertionRun(assertion(k, n % 2), at_ms + n * 60_000, ResultType.SUCCESS if ok else ResultType.FAILURE,
                           blast.dataset(k))  # fmt: skip
        history.record(run)
        batch.append(Message("pareis.signals.v1", 0, n, None, RunSignal(blast.dataset(k), run, run.timestamp_ms)))
        if len(batch) == 100:
            found = publisher.writes(batch)
            writes += len(found)
            entities |= {w.urn for w in found}
            batch = []
    return {"runs": 1000, "writes": writes, "entities": len(entities)}


def demo_volume() -> dict[str, int]:
    """Score writes of ``pareis demo``'s recorded timeline (every role over in-memory ports), against the other
    writes of the same run."""
    from pareis.commands.demo import default_timeline
    from pareis.config import load_settings
    from pareis.demo.session import DemoSession, steps_of

    session = DemoSession(load_settings())
    before = len(session.writer.proposals)
    runs = 0
    for step in steps_of(default_timeline()):
        runs += sum(1 for p in step.proposals if p.aspect_name == "assertionRunEvent")
        session.run(step)
    writes = session.writer.proposals[before:]
    scores = [w for w in writes if "io.pareis.reliability_score" in str(w.to_obj())]
    return {
        "runs": runs,
        "writes": len(scores),
        "entities": len({str(w.entityUrn) for w in scores}),
        "other": len(writes) - len(scores),
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}"


def row(label: str, values: list[float], base: list[float] | None = None) -> str:
    if not values:
        return f"| {label} | 0 | – | – | – |"
    p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
    ratio = f"{percentile(base, 0.99) / p99:,.0f}× faster" if base else "baseline"
    return f"| {label} | {len(values)} | {ms(p50)} | {ms(p99)} | {ratio} |"


def report(p: blast.Plan, args: argparse.Namespace, r: dict[str, Any], whole: dict[str, Any], maint: dict[str, Any],
           volume: dict[str, int], demo: dict[str, int], setup: str, wall_s: float, load: str) -> str:  # fmt: skip
    t = r["times"]
    machine = f"{platform.machine()}, {cpu_model()}, {os.cpu_count()} cores shared with other work, Python " + (
        platform.python_version()
    )
    scope = "full scale" if args.scale >= 1 else f"scale {args.scale} (the full scale was not run)"
    w = whole["walk_s"]
    walk_row = (
        f"| every model, by the walk (the old path) | {len(whole['answer']['models']):,} "
        f"| {len(whole['answer']['datasets']):,} | {len(whole['answer']['gaps']):,} | {w:,.1f} | baseline |"
        if w is not None
        else "| every model, by the walk (the old path) | – | – | – | not run | |"
    )
    ratio = f"{w / whole['index_s']:,.1f}× faster" if w is not None else ""
    r99 = percentile(t["redis"], 0.99)
    m99 = percentile(t["memory"], 0.99)
    return "\n".join(
        [
            "## Protect",
            "",
            f"`pareis protect` on the blast benchmark's graph ({scope}): {p.datasets:,} datasets, "
            f"{p.column_edges:,} column edges, {p.features:,} features, {p.models:,} models in {p.groups:,} groups; "
            f"{setup}. Answers read the exposure index (`pareis.store.exposure`) against the old path (the downstream "
            "walk and the analysed incident history) in the same run; every answer checked equal on both stores and "
            "both paths. See the docstring of `bench/protect.py`.",
            "",
            "| one model (`--model`, a version) | runs | p50 ms | p99 ms | vs the walk (p99) |",
            "|---|---:|---:|---:|---:|",
            row("memory, the walk (old path)", t["memory walk"]),
            row("memory, exposure index", t["memory"], t["memory walk"]),
            row("Redis, the walk (old path)", t["redis walk"]),
            row("Redis, exposure index", t["redis"], t["redis walk"]),
            "",
            f"Redis/memory p99 with the index: {r99 / m99:.2f}×.",
            "",
            "| whole graph, in memory | models scored | datasets scored | gaps ranked | seconds | vs the walk |",
            "|---|---:|---:|---:|---:|---:|",
            walk_row,
            f"| every model, exposure index | {len(whole['answer']['models']):,} "
            f"| {len(whole['answer']['datasets']):,} | {len(whole['answer']['gaps']):,} | {whole['index_s']:,.1f} "
            f"| {ratio} |",
            "",
            "| exposure index recomputation (`rebuild`: snapshot + past incidents) | seconds | datasets with an entry "
            "| columns with an exposure | incidents |",
            "|---|---:|---:|---:|---:|",
            f"| over the in-memory store | {maint['memory_s']:,.1f} | {maint['datasets']:,} | {maint['columns']:,} "
            f"| {maint['incidents']:,} |",
            f"| over the Redis store, into Redis | {maint['redis_s']:,.1f} | {maint['datasets']:,} "
            f"| {maint['columns']:,} | {maint['incidents']:,} |",
            "",
            "| score writes (`io.pareis.reliability_score`) | runs | writes | entities | writes per run "
            "| vs a write per run per entity |",
            "|---|---:|---:|---:|---:|---:|",
            f"| burst on one dataset, batches of 100 | {volume['runs']:,} | {volume['writes']:,} "
            f"| {volume['entities']:,} | {volume['writes'] / volume['runs']:.3f} "
            f"| {volume['writes'] / max(1, volume['runs'] * volume['entities']):.4f}× |",
            f"| `pareis demo`, recorded timeline ({demo['other']:,} other DataHub writes) | {demo['runs']:,} "
            f"| {demo['writes']:,} | {demo['entities']:,} | {demo['writes'] / max(1, demo['runs']):.3f} "
            f"| {demo['writes'] / max(1, demo['runs'] * demo['entities']):.4f}× |",
            "",
            f"- Command: `.venv/bin/python bench/protect.py --scale {args.scale} --reps {args.reps} "
            f"--walk-reps {args.walk_reps} --seed {args.seed}{' --no-whole-walk' if not args.whole_walk else ''}"
            f"{' --write-results' if args.write_results else ''}`",
            f"- Machine: {machine}; Redis {args.redis_version}; load average {load}; the whole run took "
            f"{wall_s / 60:.1f} min",
            "- Goals (issue 13): one model ≤ 250 ms p99 on Redis, the whole graph in memory under 60 s, at full scale.",
        ]
    )


def write_results(text: str) -> None:
    path = Path(__file__).with_name("RESULTS.md")
    record_section(path, "Protect", text)


def whole_only(args: argparse.Namespace) -> str:
    """Item 2 alone, in memory: build, rebuild the exposure index, time protect over the whole graph (and the walk
    unless ``--no-whole-walk``, checked equal)."""
    began = time.perf_counter()
    p = blast.plan(args.scale)
    memory, history = MemoryLineageStore(), MemoryRunHistory()
    handler = LineageHandler(memory, DatahubSettings())
    gc.disable()  # as blast.build: millions of long-lived containers
    try:
        for batch in blast.batches(p):
            handler(batch)
    finally:
        gc.enable()
    assertions, runs = add_assertions(p, [memory], [history])
    gc.collect()
    gc.freeze()
    index = MemoryExposureIndex()
    started = time.perf_counter()
    rebuild(memory, index, history, blast.T0)
    rebuild_s = time.perf_counter() - started
    on_memory = Sources(memory, history, origin="memory", exposure=index)
    index_s, walk_s, answer = whole_graph(on_memory, blast.T0 + 7 * DAY, args.whole_walk)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    walked = f"{walk_s:,.1f} s by the walk ({walk_s / index_s:,.1f}×)" if walk_s is not None else "the walk not run"
    return "\n".join(
        [
            "## Protect: the whole graph alone",
            "",
            f"`pareis protect` with no `--model` over the blast benchmark's graph in memory (scale {args.scale}: "
            f"{p.datasets:,} datasets, {p.column_edges:,} column edges, {p.features:,} features, {p.models:,} "
            f"models; {assertions:,} assertions, {runs:,} runs), read from the exposure index (rebuilt in "
            f"{rebuild_s:,.1f} s): **{index_s:,.1f} s** for {len(answer['models']):,} models, "
            f"{len(answer['datasets']):,} datasets and {len(answer['gaps']):,} gaps ranked; {walked}.",
            "",
            f"- Command: `.venv/bin/python bench/protect.py --scale {args.scale} --whole-only"
            f"{' --no-whole-walk' if not args.whole_walk else ''}`",
            f"- Machine: {platform.machine()}, {cpu_model()}, {os.cpu_count()} cores shared with other work, Python "
            f"{platform.python_version()}; load average {load}; the whole run took "
            f"{(time.perf_counter() - began) / 60:.1f} min",
            "- Goal (issue 13): the whole graph in memory under 60 s at full scale.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.05, help="1 = 100,000 datasets (bench/blast.py's graph)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/9", help="a database for this benchmark only")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--walk-reps", type=int, default=5, help="of the reps, how many also run the old path")
    parser.add_argument("--no-whole-walk", dest="whole_walk", action="store_false", help="skip the whole-graph walk")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--whole-only", action="store_true", help="only the whole graph in memory (no Redis)")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    if args.whole_only:
        text = whole_only(args)
        print(text)
        if args.write_results:
            record_section(Path(__file__).with_name("RESULTS.md"), "Protect: the whole graph alone", text)
        return
    began = time.perf_counter()
    p = blast.plan(args.scale)
    client = redis.Redis.from_url(args.redis, socket_timeout=600)
    for key in client.scan_iter(count=1000):
        if not key.startswith((blast.PREFIX.encode(), RUNS_PREFIX.encode(), EXPOSURE_PREFIX.encode())):
            raise SystemExit(f"{args.redis} holds keys this benchmark did not write (e.g. {key!r})")
    client.flushdb()
    try:
        memory, store = MemoryLineageStore(), RedisLineageStore(client, prefix=blast.PREFIX)
        blast.build(p, memory, store)
        mem_runs, redis_runs = MemoryRunHistory(), RedisRunHistory(client, prefix=RUNS_PREFIX)
        assertions, runs = add_assertions(p, [memory, store], [mem_runs, redis_runs])
        setup = f"{assertions:,} assertions with {runs:,} runs over 7 days, one incident"
        gc.collect()
        gc.freeze()  # as bench/blast.py: the collector would walk the in-memory index during the timings
        at = blast.T0 + 7 * DAY
        mem_index, redis_index = MemoryExposureIndex(), RedisExposureIndex(client, prefix=EXPOSURE_PREFIX)
        print("exposure index …", file=sys.stderr)
        started = time.perf_counter()
        made = rebuild(memory, mem_index, mem_runs, blast.T0)
        maint: dict[str, Any] = {"memory_s": time.perf_counter() - started}
        started = time.perf_counter()
        rebuild(store, redis_index, redis_runs, blast.T0)
        maint["redis_s"] = time.perf_counter() - started
        assert made is not None
        everything = mem_index.read([blast.dataset(k) for k in range(p.datasets)], mem_index.incident_urns())
        maint["datasets"] = len(everything.datasets)
        maint["columns"] = sum(len(e.columns) for e in everything.datasets.values())
        maint["incidents"] = len(everything.incidents)
        on_memory = Sources(memory, mem_runs, origin="memory", exposure=mem_index)
        on_redis = Sources(store, redis_runs, origin="redis", exposure=redis_index)
        print("one model …", file=sys.stderr)
        r = one_model(p, on_memory, on_redis, args.reps, args.walk_reps, args.seed, at)
        print("whole graph …", file=sys.stderr)
        index_s, walk_s, answer = whole_graph(on_memory, at, args.whole_walk)
        whole = {"index_s": index_s, "walk_s": walk_s, "answer": answer}
        print("burst …", file=sys.stderr)
        volume = burst(p, memory, at)
        print("demo …", file=sys.stderr)
        demo = demo_volume()
        args.redis_version = client.info("server")["redis_version"]
    finally:
        client.flushdb()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    text = report(p, args, r, whole, maint, volume, demo, setup, time.perf_counter() - began, load)
    print(text)
    if args.write_results:
        write_results(text)


if __name__ == "__main__":
    main()
