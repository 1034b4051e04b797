"""The incidents role's handler in process, on Redis ports, without Kafka: where ``bench/incident_latency.py``'s
burst and large-blast time goes, for profiling and for comparing two checkouts on one index.

    .venv/bin/python bench/incident_handler.py build --scale 0.25 --redis redis://127.0.0.1:6379/10
    .venv/bin/python bench/incident_handler.py run --what small --n 1000 --no-scores --digest
    .venv/bin/python bench/incident_handler.py run --what large --n 1 --profile      # pyinstrument, if installed
    .venv/bin/python bench/incident_handler.py run --role scores --n 1000 --digest   # the scores role's handler

``build`` loads ``bench/blast.py``'s graph and the targets' assertions and SUCCESS runs through
:func:`bench.incident_latency.load_index` into the (dedicated, flushed) database and writes the targets to
``--state``. ``run`` resets the incidents role's keys and the targets' runs, records one FAILURE run per target
(as the assertions role would), then times the handler (built as :func:`pareis.compose.roles.incidents_pipeline`
builds it, with the Kafka writer) on the signals: ``small`` in batches of ``--batch`` (the runtime's
``batch_size``), ``medium`` and ``large`` one per batch; ``--role scores``, the scores role's handler instead (built as
:func:`pareis.compose.roles.scores_pipeline` builds it: the reliability scores and the retrain gate's records, its
ledgers reset first) on the same signals; ``--history N`` first records a FAILURE an hour earlier on N other small
targets (the incidents a burst after the paced phase of ``bench/incident_latency.py`` finds in the run history);
``--warm K`` then hands their signals to the same handler first, untimed, K per batch (as the paced phase did: what
the role keeps from batch to batch, its walk cache, is then as warm as in the pipeline).
``--digest`` prints a SHA-256 of every output record
(topic, key, value, headers), to check that two checkouts give the same bytes; ``--no-scores`` leaves out the
reliability-score publisher in a checkout whose incidents role still computes scores (before the scores role: since,
the handler has none to leave out). Another checkout runs this same file with its own code when started from its
directory with this one's ``--state``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import inspect
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import redis

sys.path.insert(0, str(Path.cwd()))  # the checkout this is started from (to compare two)
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from bench import blast
from bench import incident_latency as il
from pareis.compose import heap
from pareis.config import DatahubSettings
from pareis.contracts.records import Message, OutRecord
from pareis.core.runs import AssertionRun, ResultType
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.writer import KafkaWriter
from pareis.roles.incident_watch import IncidentWatch
from pareis.roles.incidents import IncidentsHandler
from pareis.roles.messages import AnySignal, RunSignal
from pareis.roles.output import McpTopic
from pareis.roles.scores import ScorePublisher
from pareis.store.exposure_redis import RedisExposureIndex
from pareis.store.incidents_redis import RedisIncidentStore
from pareis.store.journal_redis import RedisStepJournal
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.runs_redis import RedisRunHistory
from pareis.store.scores_redis import RedisScoreLedger
from pareis.store.watch_redis import RedisWatchStore


def build(args: argparse.Namespace) -> None:
    p = blast.plan(args.scale)
    chosen = il.targets(p, {"small": args.small, "medium": args.medium, "large": args.large}, args.seed)
    everything = [t for c in il.CLASSES for t in chosen[c]]
    client = il.dedicated(args.redis)
    now = time.time_ns() // 1_000_000
    aspects, seconds = il.load_index(client, p, everything, now)
    print(f"{aspects:,} aspects in {seconds:,.0f} s")
    state = {c: [vars(t) for t in ts] for c, ts in chosen.items()}
    Path(args.state).write_text(json.dumps({**state, "now": now, "scale": args.scale}))


def reset(client: redis.Redis, ts: list[il.Target], now: int) -> None:
    """The incidents role's keys (the reach index's included) gone, and the targets' runs back to their one SUCCESS a
    day earlier."""
    keys: list[bytes | str] = list(client.scan_iter(match="pareis:journal:*", count=10_000))
    keys += ["pareis:{incidents}:state", "pareis:{incidents}:active", "pareis:scores", "pareis:{watch}:sets"]
    keys += list(client.scan_iter(match="pareis:*gate*", count=10_000))
    keys += list(client.scan_iter(match="pareis:{reach}:*", count=10_000))
    keys += [f"pareis:runs:{{{t.assertion}}}:{kind}" for t in ts for kind in ("all", "counting")]
    for i in range(0, len(keys), 1000):
        client.delete(*keys[i : i + 1000])
    history = RedisRunHistory(client)
    for t in ts:
        history.record(AssertionRun(t.assertion, now - il.DAY_MS, ResultType.SUCCESS, t.dataset, "bench-ok"))


def handler(client: redis.Redis, scores: bool) -> IncidentsHandler:
    lineage, runs = RedisLineageStore(client), RedisRunHistory(client)
    datahub = DatahubSettings().model_copy(update={"ml_incident_types": []})
    extra = {}
    if scores and "scores" in inspect.signature(IncidentsHandler).parameters:  # a checkout before the scores role
        # The exposure index load_index published, as compose.roles.incidents_pipeline passed ports.exposure.
        extra["scores"] = ScorePublisher(lineage, runs, RedisScoreLedger(client), RedisExposureIndex(client))
    if "exposure" in inspect.signature(IncidentsHandler).parameters:  # the radii it keeps, as compose.roles passes
        extra["exposure"] = RedisExposureIndex(client)
    if "reaches" in inspect.signature(IncidentsHandler).parameters:  # the reach index, as compose.roles passes
        from pareis.store.reaches_redis import RedisReachStore

        extra["reaches"] = RedisReachStore(client)
    return IncidentsHandler(
        lineage=lineage,
        runs=runs,
        incidents=RedisIncidentStore(client),
        journal=RedisStepJournal(client, keep=3000),
        output=McpTopic(KafkaWriter.from_source(VendoredSchemaSource(), "MetadataChangeProposal_v1"), datahub),
        datahub=datahub,
        effects_topic="pareis.effects.v1",
        watch=IncidentWatch(RedisWatchStore(client), lineage),
        **extra,
    )


def scores_handler(client: redis.Redis) -> Callable[[list[Message[RunSignal]]], list[OutRecord]]:
    """The scores role's handler as :func:`pareis.compose.roles.scores_pipeline` builds it, on ``client``."""
    from pareis.answers.sources import Sources
    from pareis.compose.gates import gate_decisions
    from pareis.core.upstream import ModelUpstream
    from pareis.core.walk_cache import WalkCache
    from pareis.roles.gates import GatePublisher
    from pareis.roles.scores import ScoresHandler
    from pareis.store.gates_redis import RedisGateLedger

    lineage, runs, exposure = RedisLineageStore(client), RedisRunHistory(client), RedisExposureIndex(client)
    walks = WalkCache[ModelUpstream]()
    if "kept" in inspect.signature(WalkCache).parameters:  # the radii the exposure index keeps, as compose.roles wires
        from pareis.store.exposure_reader import kept_radii

        walks = WalkCache[ModelUpstream](kept=functools.partial(kept_radii, exposure))
    publisher = ScorePublisher(lineage, runs, RedisScoreLedger(client), exposure, walks)
    incidents = RedisIncidentStore(client)
    sources = Sources(lineage, runs, incidents, origin="scores role", exposure=exposure, walks=walks)
    gates = GatePublisher(RedisGateLedger(client), gate_decisions(sources), "pareis.gate.v1")
    datahub = DatahubSettings()
    output = McpTopic(KafkaWriter.from_source(VendoredSchemaSource(), "MetadataChangeProposal_v1"), datahub)
    return ScoresHandler(publisher, output, gates)


def run(args: argparse.Namespace) -> None:
    state = json.loads(Path(args.state).read_text())
    now = state["now"]
    ts = [il.Target(**t) for t in state[args.what]][: args.n]
    earlier = [il.Target(**t) for t in state["small"]][-args.history :] if args.history else []
    if set(earlier) & set(ts):
        raise SystemExit(f"--history {args.history} and --n {args.n} overlap: {len(state['small'])} small targets")
    client = redis.Redis.from_url(args.redis, socket_timeout=120)
    if not client.exists(il.MARKER):  # a shared server: someone else's FLUSHDB would make this measure nothing
        raise SystemExit(f"{args.redis} holds no index built by this benchmark (run build first)")
    everyone = {t for cls in il.CLASSES for t in (il.Target(**x) for x in state[cls])}
    reset(client, sorted(everyone, key=lambda t: t.k), now)  # no run of an earlier invocation left behind
    history = RedisRunHistory(client)
    warming: list[Message[AnySignal]] = []
    for i, t in enumerate(earlier):  # incidents before these, as a burst after a paced phase finds them
        run_ = AssertionRun(t.assertion, now - 3_600_000 + i, ResultType.FAILURE, t.dataset, f"earlier-{i}")
        history.record(run_)
        warming.append(
            Message("pareis.signals.v1", 0, i, t.dataset.encode(), RunSignal(t.dataset, run_, run_.timestamp_ms))
        )
    messages: list[Message[AnySignal]] = []
    for i, t in enumerate(ts):
        failure = AssertionRun(t.assertion, now + i, ResultType.FAILURE, t.dataset, f"bench-{i}")
        history.record(failure)
        signal = RunSignal(t.dataset, failure, now + i)
        messages.append(Message("pareis.signals.v1", 0, 1000 + i, t.dataset.encode(), signal))
    h: Callable[[list[Message[RunSignal]]], list[OutRecord]]
    h = scores_handler(client) if args.role == "scores" else handler(client, not args.no_scores)  # type: ignore[assignment]
    size = args.batch if args.what == "small" else 1
    batches = [messages[i : i + size] for i in range(0, len(messages), size)]
    between = _collection(args.gc)
    if args.warm:  # the earlier incidents' signals through the same handler first, untimed, as the paced phase's
        for i in range(0, len(warming), args.warm):
            h(warming[i : i + args.warm])
            between()
    profiler = None
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
        profiler.start()
    out: list[OutRecord] = []
    times = []
    began, cpu = time.perf_counter(), time.process_time()
    for b in batches:
        t0 = time.perf_counter()
        out += h(b)
        between()  # the role's loop collects between batches: its cost is the role's
        times.append(time.perf_counter() - t0)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    if not client.exists(il.MARKER):
        raise SystemExit(f"{args.redis} was flushed during the run: these figures measure nothing")
    if profiler is not None:
        profiler.stop()
        Path(f"{args.role}-handler-{args.what}.txt").write_text(profiler.output_text(unicode=True, color=False))
    per_batch = ", ".join(f"{x * 1000:,.0f}" for x in times[:10])
    print(
        f"{args.what}: {len(messages):,} signals in {wall * 1000:,.0f} ms ({len(messages) / wall:,.0f}/s), "
        f"CPU {cpu * 1000:,.0f} ms; per batch ms {per_batch}; {len(out):,} records"
    )
    if args.digest:
        digest = hashlib.sha256()
        for r in out:
            digest.update(repr((r.topic, r.key, r.value, r.headers)).encode())
        print("digest", digest.hexdigest())


def _collection(policy: str) -> Callable[[], None]:
    """The process's garbage collection, started now that the handler is built: ``process``, as ``pareis run``
    starts it (:class:`pareis.compose.heap.Collector`: collections between batches only); ``settle``, the thresholds
    alone (:func:`pareis.compose.heap.settle`, what ``pareis run`` did before); ``default``, CPython's. Returns what
    to call between batches."""
    if policy == "process":
        collector = heap.Collector()
        collector.start()
        return collector.between
    if policy == "settle":
        heap.settle()
    return lambda: None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/7", help="a database for this benchmark only")
    parser.add_argument("--state", default="incident-handler-targets.json")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--scale", type=float, default=0.25)
    b.add_argument("--small", type=int, default=2000)
    b.add_argument("--medium", type=int, default=10)
    b.add_argument("--large", type=int, default=5)
    b.add_argument("--seed", type=int, default=7)
    r = sub.add_parser("run")
    r.add_argument("--what", choices=il.CLASSES, default="small")
    r.add_argument("--n", type=int, default=1000)
    r.add_argument("--batch", type=int, default=500)
    r.add_argument("--profile", action="store_true")
    r.add_argument(
        "--gc",
        choices=["process", "settle", "default"],
        default="process",
        help="the garbage collection policy (process: as `pareis run` collects, between batches)",
    )
    r.add_argument("--digest", action="store_true")
    r.add_argument("--no-scores", action="store_true")
    r.add_argument("--role", choices=["incidents", "scores"], default="incidents")
    r.add_argument("--history", type=int, default=0, help="FAILURE runs an hour earlier on as many other small targets")
    r.add_argument("--warm", type=int, default=0, help="with --history: its signals handled first in batches of this")
    args = parser.parse_args()
    if args.command == "build":
        build(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
