"""MCP layer overhead: each tool's latency through ``pareis mcp`` over stdio and over streamable HTTP vs the direct
answers-layer call, on the same Redis index, interleaved in one run.

    .venv/bin/python bench/mcp.py                      # the demo recording in Redis, 50 rounds, print the table
    .venv/bin/python bench/mcp.py --write-results      # and replace "## MCP server" in bench/RESULTS.md

**Index**: the demo recording (``deploy/demo/recorded/``: warehouse, dbt, MLflow metadata and eleven steps of runs,
one incident reaching eight model versions) loaded into a dedicated Redis database by ``pareis bootstrap``
(flushed first). Every path reads that Redis: the baseline opens it in this process
(:func:`pareis.compose.sources.open_sources`), the servers are subprocesses (``pareis mcp --redis URL`` on stdio,
``pareis mcp --http --redis URL`` on loopback) driven by the SDK's own client (``mcp.Client``, the current
protocol revision) from this process.

**Baseline** per question: the answers-layer call a tool makes, with its ``to_json()`` (what the tool then pages and
renders). **MCP**: ``client.call_tool`` round trip — argument validation, the tool, output validation against its
schema, the JSON text, the transport both ways, the client's parsing. Each round asks every question once on each
path, in that order; warm-up rounds are not timed. Overhead = MCP p50 − baseline p50 (goal ≤ 10 ms).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
# This script is named like the SDK's package: drop its own folder from the path so ``import mcp`` finds the SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(REPO))

from bench.machine import cpu_model  # noqa: E402
from bench.results import record_section  # noqa: E402

RECORDED = REPO / "deploy" / "demo" / "recorded"
RAW = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)"
CHURN = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
LEGACY = "2025-11-25"
AT_MS = 1_759_752_000_000  # 2025-10-06T12:00Z, inside the recording's incident (the gate says NO-GO)


def load(redis_url: str) -> None:
    import redis

    with redis.Redis.from_url(redis_url) as client:
        client.flushdb()
    cmd = [sys.executable, "-m", "pareis.cli", "bootstrap", "--metadata", str(RECORDED), "--redis", redis_url]
    subprocess.run(cmd, check=True, cwd=REPO, stdout=subprocess.DEVNULL)


def questions(sources: Any) -> list[tuple[str, dict[str, Any], Callable[[], Any]]]:
    """``(tool, arguments, the direct answers-layer call)`` for every tool this build has."""
    from pareis.answers.blast import blast
    from pareis.answers.gate import gate
    from pareis.answers.incidents import analysis, incident_list
    from pareis.answers.reliability import protect
    from pareis.answers.verdicts import model_verdicts

    (only,) = incident_list(sources)
    assertion = only.assertions[0]
    asked: list[tuple[str, dict[str, Any], Callable[[], Any]]] = [
        ("list_incidents", {"state": "ALL"}, lambda: [s.to_json() for s in incident_list(sources)]),
        ("get_incident", {"urn": RAW}, lambda: analysis(sources, dataset=RAW).to_json()),
        ("get_blast_radius", {"urn": assertion}, lambda: blast(sources, assertion=assertion).to_json()),
        ("get_model_verdicts", {"urn": CHURN}, lambda: model_verdicts(sources, CHURN).to_json()),
        (
            "check_retrain_gate",
            {"model_urn": CHURN, "at": AT_MS},
            lambda: gate(sources, model=CHURN, at_ms=AT_MS).to_json(),
        ),
        (
            "get_reliability",
            {"urn": CHURN, "at": AT_MS},
            lambda: protect(sources, at_ms=AT_MS, model=CHURN, max_gaps=10).to_json(),
        ),
        ("get_evidence_pack", {"model_urn": CHURN, "at": AT_MS, "format": "full"}, lambda: evidence(sources)),
    ]
    return asked


def evidence(sources: Any) -> tuple[dict[str, Any], str]:
    from pareis.answers.evidence import evidence_pack
    from pareis.answers.evidence_render import markdown

    pack = evidence_pack(sources, CHURN, AT_MS).to_json()
    return pack, markdown(pack)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], deadline_s: float = 180) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"pareis mcp --http exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer within {deadline_s:.0f} s")


class RawStdio:
    """``pareis mcp`` on stdio, spoken to in raw JSON-RPC lines (the initialize handshake, then one request at a
    time): the server and the pipe, with no client library's own processing."""

    def __init__(self, redis_url: str, env: dict[str, str]) -> None:
        cmd = [sys.executable, "-m", "pareis.cli", "mcp", "--redis", redis_url]
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ident = 0
        info = {"name": "bench", "version": "1"}
        self.request("initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": info})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ident += 1
        self._send({"jsonrpc": "2.0", "id": self.ident, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.ident:
                return dict(message["result"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


async def measure(redis_url: str, rounds: int, warmup: int) -> tuple[dict[str, dict[str, list[float]]], str]:
    import httpx
    from mcp import Client

    from pareis.compose.sources import open_sources
    from pareis.mcp.server import build_server

    sources = open_sources(redis_url=redis_url)
    asked = questions(sources)
    port = free_port()
    env = {**os.environ, "PAREIS_LOG_LEVEL": "WARNING"}
    cmd = [sys.executable, "-m", "pareis.cli", "mcp", "--http", "--redis", redis_url, "--port", str(port)]
    http_proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL)
    paths = ("direct", "server", "stdio", "http", "sdk")
    handled: list[float] = []

    async def timing(ctx: Any, call_next: Any) -> Any:
        started = time.perf_counter()
        try:
            return await call_next(ctx)
        finally:
            handled.append(time.perf_counter() - started)

    in_process = build_server(sources, middleware=[timing])
    times: dict[str, dict[str, list[float]]] = {name: {p: [] for p in paths} for name, _, _ in asked}
    stdio = None
    try:
        wait_healthy(f"http://127.0.0.1:{port}/healthz", http_proc)
        stdio = RawStdio(redis_url, env)
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": LEGACY}
        with httpx.Client(timeout=300) as http:
            async with Client(url, read_timeout_seconds=300) as sdk, Client(in_process, mode="legacy") as local:
                for i in range(warmup + rounds):
                    for name, args, direct in asked:
                        params = {"name": name, "arguments": args}
                        started = time.perf_counter()
                        direct()
                        t_direct = time.perf_counter() - started
                        handled.clear()
                        await local.call_tool(name, args)
                        t_server = handled[-1]
                        started = time.perf_counter()
                        a = stdio.request("tools/call", params)
                        t_stdio = time.perf_counter() - started
                        started = time.perf_counter()
                        body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
                        b = http.post(url, json=body, headers=headers).json()["result"]
                        t_http = time.perf_counter() - started
                        started = time.perf_counter()
                        c = await sdk.call_tool(name, args)
                        t_sdk = time.perf_counter() - started
                        same = a["structuredContent"] == b["structuredContent"] == c.structured_content
                        if a["isError"] or b["isError"] or c.is_error or not same:
                            raise SystemExit(f"{name}: the paths disagree or failed")
                        if i >= warmup:
                            for path, t in zip(paths, (t_direct, t_server, t_stdio, t_http, t_sdk), strict=True):
                                times[name][path].append(t * 1000)
                version = sdk.protocol_version
    finally:
        if stdio is not None:
            stdio.close()
        http_proc.terminate()
        http_proc.wait(timeout=30)
        sources.close()
    return times, version


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def table(times: dict[str, dict[str, list[float]]]) -> tuple[str, float, float]:
    """The per-tool table; the worst p50 overhead of the server's own handling, and of a raw round trip."""
    rows = [
        "| tool | direct p50 / p99 ms | server handling p50 / p99 ms | stdio p50 / p99 ms | HTTP p50 / p99 ms "
        "| SDK client over HTTP p50 / p99 ms | overhead p50 ms: handling, stdio, HTTP, SDK client |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    worst_server = worst_trip = 0.0
    for name, by in times.items():
        p50 = {path: statistics.median(values) for path, values in by.items()}
        order = ("direct", "server", "stdio", "http", "sdk")
        cells = [f"{p50[path]:.1f} / {pct(by[path], 0.99):.1f}" for path in order]
        over = [p50[path] - p50["direct"] for path in order[1:]]
        worst_server = max(worst_server, over[0])
        worst_trip = max(worst_trip, over[1], over[2])
        rows.append(f"| `{name}` | " + " | ".join(cells) + " | " + ", ".join(f"{o:.1f}" for o in over) + " |")
    return "\n".join(rows), worst_server, worst_trip


def write_results(text: str, notes: list[str]) -> None:
    path = Path(__file__).with_name("RESULTS.md")
    section = (
        "## MCP server\n\n"
        "Per-tool latency through `pareis mcp` over stdio and over streamable HTTP (subprocesses, the SDK's client) "
        "vs the direct answers-layer call (the baseline), on one Redis index, interleaved in one run. See the "
        f"docstring of `bench/mcp.py` for the method.\n\n{text}\n\n" + "".join(f"- {n}\n" for n in notes)
    )
    record_section(path, "MCP server", section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/6", help="a database for this benchmark only")
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)  # before the SDK configures INFO logging for this process
    load_avg = os.getloadavg()[0]
    started = time.monotonic()
    load(args.redis)
    loaded_s = time.monotonic() - started
    times, version_used = anyio.run(measure, args.redis, args.rounds, args.warmup)
    text, worst_server, worst_trip = table(times)
    notes = [
        f"Command: `.venv/bin/python bench/mcp.py --rounds {args.rounds} --warmup {args.warmup}"
        f"{' --write-results' if args.write_results else ''}`",
        f"Machine: {cpu_model()}, {os.cpu_count()} cores shared with other work (load average {load_avg:.1f} at "
        f"start); Python {platform.python_version()}; mcp {version('mcp')}, uvicorn {version('uvicorn')}; "
        f"raw JSON-RPC on protocol {LEGACY} (stdio after the initialize handshake; HTTP stateless, no session), "
        f"the SDK client on {version_used}",
        f"Index: the demo recording loaded into Redis by `pareis bootstrap` in {loaded_s:.0f} s; {args.rounds} timed "
        f"rounds after {args.warmup} warm-up rounds, each asking every tool once per path",
        "Columns: *direct* = the answers-layer call with `to_json()` in this process (the baseline); *server "
        "handling* = the same request through the MCP server built in this process, timed from dispatch to the "
        "finished response (argument validation, the tool on a worker thread, output-schema validation, the JSON "
        "text); *stdio* / *HTTP* = the round trip to a `pareis mcp` subprocess in raw JSON-RPC; *SDK client* = "
        "`mcp.Client.call_tool` over HTTP, which adds the client's own jsonschema validation of "
        "`structuredContent` against the tool's `outputSchema`",
        f"Goal: MCP overhead ≤ 10 ms p50 per tool: server handling worst {worst_server:.1f} ms "
        f"(**{'met' if worst_server <= 10 else 'not met'}**); stdio/HTTP round trip worst {worst_trip:.1f} ms "
        f"(**{'met' if worst_trip <= 10 else 'not met'}**)",
    ]
    print(text)
    for note in notes:
        print("-", note)
    if args.write_results:
        write_results(text, notes)


if __name__ == "__main__":
    main()
