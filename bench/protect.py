"""Protect benchmark: reliability scores and ranked gaps (``pareis protect``) on the blast benchmark's graph.

    .venv/bin/python bench/protect.py --scale 0.05            # what bench/RESULTS.md records
    .venv/bin/python bench/protect.py --scale 0.05 --write-results

**Graph**: :mod:`bench.blast`'s (``--scale 1``: 100,000 datasets of 22 columns in lineage trees, 20,000 features,
2,000 models in 200 groups), built into the in-memory store and the Redis store by the lineage role's handler, plus
assertions and runs: every 5th dataset has a ``not_null`` assertion on ``col_00`` and one on ``col_01``, each with a
SUCCESS run a day for 7 days, and one assertion of one dataset of the largest tree fails on the 6th day (an
incident, so gaps can match a past incident). Runs go into both run histories (memory and Redis). ``gc.freeze()``
after the build, as in ``bench/blast.py``.

**Measured**, in one run:

1. one model — :func:`pareis.answers.reliability.protect` ``--model`` for random model versions, the same model on
   both stores (alternating which goes first); every answer checked equal on both; p50/p99 per store and the
   Redis/memory ratio (the baseline);
2. the whole graph in memory — protect with no ``--model``: every model's and upstream dataset's score and every gap
   ranked (once; the figure is its wall time);
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
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.translate import lineage_update
from pareis.model.records import Message
from pareis.roles.messages import RunSignal
from pareis.roles.scores import ScorePublisher
from pareis.store.lineage import LineageStore, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.runs import RunHistory
from pareis.store.runs_memory import MemoryRunHistory
from pareis.store.runs_redis import RedisRunHistory
from pareis.store.scores import MemoryScoreLedger

DAY = 86_400_000
RUNS_PREFIX = "bench:runs:"


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


def one_model(p: blast.Plan, memory: Sources, on_redis: Sources, reps: int, seed: int, at_ms: int) -> dict[str, Any]:
    rng = random.Random(seed)
    times: dict[str, list[float]] = {"memory": [], "redis": []}
    gaps: list[int] = []
    for i in range(reps):
        m = blast.model(rng.randrange(p.models))
        order = [("memory", memory), ("redis", on_redis)]
        if i % 2:
            order.reverse()
        answers = {}
        for label, sources in order:
            started = time.perf_counter()
            answers[label] = protect(sources, at_ms=at_ms, model=m).to_json()
            times[label].append(time.perf_counter() - started)
        assert answers["memory"] == answers["redis"], f"stores disagree on {m}"
        gaps.append(len(answers["memory"]["gaps"]))
    return {"times": times, "gaps": gaps}


def whole_graph(memory: Sources, at_ms: int) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    answer = protect(memory, at_ms=at_ms).to_json()
    return time.perf_counter() - started, answer


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


def report(p: blast.Plan, args: argparse.Namespace, r: dict[str, Any], whole_s: float, whole: dict[str, Any],
           volume: dict[str, int], demo: dict[str, int], setup: str, wall_s: float) -> str:  # fmt: skip
    mem, red = r["times"]["memory"], r["times"]["redis"]
    m50, m99, r50, r99 = (percentile(mem, 0.5), percentile(mem, 0.99), percentile(red, 0.5), percentile(red, 0.99))
    machine = f"{platform.machine()}, {cpu_model()}, {os.cpu_count()} cores shared with other work, Python " + (
        platform.python_version()
    )
    scope = "full scale" if args.scale >= 1 else f"scale {args.scale} (the full scale was not run)"
    return "\n".join(
        [
            "## Protect",
            "",
            f"`pareis protect` on the blast benchmark's graph ({scope}): {p.datasets:,} datasets, "
            f"{p.column_edges:,} column edges, {p.features:,} features, {p.models:,} models in {p.groups:,} groups; "
            f"{setup}. See the docstring of `bench/protect.py`.",
            "",
            "| one model (`--model`, a version) | runs | memory p50 ms | memory p99 ms | Redis p50 ms | Redis p99 ms "
            "| Redis/memory p99 |",
            "|---|---:|---:|---:|---:|---:|---:|",
            f"| random versions, same model on both | {len(mem)} | {ms(m50)} | {ms(m99)} | {ms(r50)} | {ms(r99)} "
            f"| {r99 / m99:.2f}× |",
            "",
            "| whole graph, in memory | models scored | datasets scored | gaps ranked | seconds |",
            "|---|---:|---:|---:|---:|",
            f"| every model (no `--model`) | {len(whole['models']):,} | {len(whole['datasets']):,} "
            f"| {len(whole['gaps']):,} | {whole_s:.1f} |",
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
            f"--seed {args.seed}{' --write-results' if args.write_results else ''}`",
            f"- Machine: {machine}; Redis {args.redis_version}; the whole run took {wall_s / 60:.1f} min",
            "- Goals (issue 13): one model ≤ 250 ms p99 on Redis, the whole graph in memory under 60 s, at full scale.",
        ]
    )


def write_results(text: str) -> None:
    path = Path(__file__).with_name("RESULTS.md")
    record_section(path, "Protect", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.05, help="1 = 100,000 datasets (bench/blast.py's graph)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/9", help="a database for this benchmark only")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    began = time.perf_counter()
    p = blast.plan(args.scale)
    client = redis.Redis.from_url(args.redis, socket_timeout=120)
    for key in client.scan_iter(count=1000):
        if not key.startswith((blast.PREFIX.encode(), RUNS_PREFIX.encode())):
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
        on_memory, on_redis = Sources(memory, mem_runs, origin="memory"), Sources(store, redis_runs, origin="redis")
        print("one model …", file=sys.stderr)
        r = one_model(p, on_memory, on_redis, args.reps, args.seed, at)
        print("whole graph …", file=sys.stderr)
        whole_s, whole = whole_graph(on_memory, at)
        print("burst …", file=sys.stderr)
        volume = burst(p, memory, at)
        print("demo …", file=sys.stderr)
        demo = demo_volume()
        args.redis_version = client.info("server")["redis_version"]
    finally:
        client.flushdb()
    text = report(p, args, r, whole_s, whole, volume, demo, setup, time.perf_counter() - began)
    print(text)
    if args.write_results:
        write_results(text)


if __name__ == "__main__":
    main()
