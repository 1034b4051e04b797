"""Same-run A/B of the Redis lineage index build: this checkout's lineage handler + Redis store against a git ref's.

    .venv/bin/python bench/blast_build_ab.py --scale 0.05 --redis redis://127.0.0.1:6379/13 --ref main

The graph and its change-log batches are :mod:`bench.blast`'s (batches of 500). Each batch goes through three
handlers, in an order rotated per batch: the in-memory store (baseline), the ref's handler on the ref's Redis store
(``pareis/roles/lineage.py`` and ``pareis/store/lineage_redis*.py`` read with ``git show <ref>:…`` and loaded
under other module names), and this checkout's on its own store; the two Redis stores write under two prefixes of
equal length in the same database. Rates are aspects per wall-clock second of the handler call.

After the build every key of both prefixes is dumped (type and contents, the prefix cut off) and compared: the
stored bytes must be identical. The database is flushed before (only if it holds nothing but this script's and
``bench/blast.py``'s keys) and after.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import blast  # noqa: E402
from pareis.config import DatahubSettings  # noqa: E402
from pareis.roles.lineage import LineageHandler  # noqa: E402
from pareis.store.lineage_memory import MemoryLineageStore  # noqa: E402
from pareis.store.lineage_redis import RedisLineageStore  # noqa: E402

PREFIXES = {"ref": "bench:ab:R:", "this": "bench:ab:T:"}
REF_MODULES = (
    "pareis.store.lineage_redis_encoding",
    "pareis.store.lineage_redis_script",
    "pareis.store.lineage_redis_stream",
    "pareis.store.lineage_redis",
    "pareis.roles.lineage",
)


def load_ref(ref: str) -> dict[str, ModuleType]:
    """The ref's copies of :data:`REF_MODULES` (those it has), imports among them pointed at each other."""
    loaded: dict[str, ModuleType] = {}
    renames = {m: "ref_" + m.replace(".", "_") for m in REF_MODULES}
    for name in REF_MODULES:
        path = name.replace(".", "/") + ".py"
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:{path}"], capture_output=True, text=True)
        if shown.returncode != 0:
            continue
        source = shown.stdout
        for old, new in renames.items():
            source = source.replace(f"from {old} import", f"from {new} import")
        spec = importlib.util.spec_from_loader(renames[name], loader=None)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[renames[name]] = module
        exec(compile(source, f"{ref}:{path}", "exec"), module.__dict__)
        loaded[name] = module
    return loaded


def dump(client: redis.Redis, prefix: str) -> dict[bytes, Any]:
    out: dict[bytes, Any] = {}
    for key in client.scan_iter(match=prefix + "*", count=1000):
        kind = client.type(key)
        if kind == b"hash":
            value: Any = sorted(client.hgetall(key).items())
        elif kind == b"string":
            value = client.get(key)
        else:
            value = (kind, client.dump(key))
        out[key[len(prefix) :]] = (kind, value)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.05)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/9", help="a database for benchmarks only")
    parser.add_argument("--ref", default="main", help="the git ref to compare with")
    parser.add_argument("--no-dump", action="store_true", help="skip the stored-bytes comparison")
    args = parser.parse_args()
    client = redis.Redis.from_url(args.redis, socket_timeout=120)
    for key in client.scan_iter(count=1000):
        if not key.startswith((b"bench:ab:", blast.PREFIX.encode())):
            raise SystemExit(f"{args.redis} holds keys this benchmark did not write (e.g. {key!r})")
    client.flushdb()
    ref = load_ref(args.ref)
    settings = DatahubSettings()
    ref_store = ref["pareis.store.lineage_redis"].RedisLineageStore(client, prefix=PREFIXES["ref"])
    handlers: dict[str, Any] = {
        "memory": LineageHandler(MemoryLineageStore(), settings),
        "ref": ref["pareis.roles.lineage"].LineageHandler(ref_store, settings),
        "this": LineageHandler(RedisLineageStore(client, prefix=PREFIXES["this"]), settings),
    }
    seconds = dict.fromkeys(handlers, 0.0)
    p = blast.plan(args.scale)
    aspects = 0
    load = Path("/proc/loadavg").read_text().split()[:3]
    gc.disable()
    try:
        names = list(handlers)
        for i, batch in enumerate(blast.batches(p)):
            for name in names[i % 3 :] + names[: i % 3]:
                started = time.perf_counter()
                handlers[name](batch)
                seconds[name] += time.perf_counter() - started
            aspects += len(batch)
    finally:
        gc.enable()
    load_end = Path("/proc/loadavg").read_text().split()[:3]
    for name, h in handlers.items():
        assert {str(o) for o in h.outcomes} == {"applied"}, (name, h.outcomes)
    rates = {name: aspects / s for name, s in seconds.items()}
    print(f"scale {args.scale}: {aspects:,} aspects; load {' '.join(load)} → {' '.join(load_end)}")
    for name, rate in rates.items():
        print(
            f"  {name:6} {seconds[name]:7.2f} s {rate:8,.0f} aspects/s  {rate / rates['memory']:.2f}× memory"
            f"  {rate / rates['ref']:.2f}× ref"
        )
    try:
        if not args.no_dump:
            a, b = dump(client, PREFIXES["ref"]), dump(client, PREFIXES["this"])
            same = a == b
            diff = sorted(set(a) ^ set(b))[:3] or [k for k in a if a[k] != b.get(k)][:3]
            print(
                f"  stored bytes: {len(a):,} keys under each prefix, identical: {same}" + ("" if same else f" {diff}")
            )
            if not same:
                raise SystemExit(1)
    finally:
        client.flushdb()


if __name__ == "__main__":
    main()
