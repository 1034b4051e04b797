"""Digests of every read answer on the demo recording and the DataHub goldens: the check that a restructuring
changed no answer.

For each input (the demo recording as one set; each golden of ``tests/data/datahub-goldens`` alone) it runs, through
the real command line in this process, ``blast --assertion`` for every assertion, ``analyze --dataset`` for every
dataset with assertion runs, ``analyze``, ``gate``, ``protect`` and ``evidence`` for every model and model group,
and ``protect`` for the whole input, all with ``--json`` and a fixed ``--at``; it prints one SHA-256 per input and
one over all. ``--dump DIR`` also writes each answer to a file, so two trees can be compared with ``diff -r``.

    python -m tests.support.digests [--dump DIR] [--only NAME] [--jobs N]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "deploy" / "demo" / "recorded"
GOLDENS = ROOT / "tests" / "data" / "datahub-goldens"
AT = "2026-06-01T00:00:00Z"
"""A fixed evaluation time: later than every input, so the same for both sides of a comparison."""
LIMIT = 40
"""At most this many entities of a kind per input (the largest goldens name hundreds of assertions)."""


def _records(path: Path) -> Iterator[dict[str, object]]:
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    for f in files:
        data = json.loads(f.read_text())
        if isinstance(data, list):
            yield from (r for r in data if isinstance(r, dict))


def _entities(path: Path) -> dict[str, list[str]]:
    """URNs by kind: assertions, assertee datasets, models and groups."""
    found: dict[str, set[str]] = {"assertion": set(), "assertee": set(), "model": set()}
    for r in _records(path):
        urn = r.get("entityUrn")
        snapshot = r.get("proposedSnapshot")
        if isinstance(snapshot, dict):
            inner = next(iter(snapshot.values()), {})
            urn = inner.get("urn") if isinstance(inner, dict) else None
        if not isinstance(urn, str):
            continue
        if urn.startswith("urn:li:assertion:"):
            found["assertion"].add(urn)
            aspect = r.get("aspect")
            value = aspect.get("json") if isinstance(aspect, dict) else None
            if isinstance(value, dict) and isinstance(value.get("asserteeUrn"), str):
                found["assertee"].add(value["asserteeUrn"])
        elif urn.startswith(("urn:li:mlModel:", "urn:li:mlModelGroup:")):
            found["model"].add(urn)
    return {k: sorted(v)[:LIMIT] for k, v in found.items()}


def _run(argv: list[str]) -> str:
    from pareis.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: object = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exit_:
            code = exit_.code
    return f"exit {code}\n{out.getvalue()}\nstderr: {err.getvalue().strip()}\n"


def _evidence(model: str, source: list[str]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        head = _run(["evidence", "--model", model, *source, "--at", AT, "--format", "json", "--out", tmp])
        packs = sorted(Path(tmp).rglob("*.json"))
        return (head + "".join(p.read_text() for p in packs)).replace(tmp, "<out>")


def answers(path: Path) -> dict[str, str]:
    """Every answer for one input, by a name that says what was asked."""
    source = ["--metadata", str(path)]
    ents = _entities(path)
    out: dict[str, str] = {}
    for a in ents["assertion"]:
        out[f"blast {a}"] = _run(["blast", "--assertion", a, *source, "--json"])
    for d in ents["assertee"]:
        out[f"analyze {d}"] = _run(["analyze", "--dataset", d, *source, "--json"])
    out["protect"] = _run(["protect", *source, "--at", AT, "--json"])
    for m in ents["model"]:
        out[f"analyze {m}"] = _run(["analyze", "--model", m, *source, "--json"])
        out[f"gate {m}"] = _run(["gate", "--model", m, *source, "--at", AT, "--json"])
        out[f"protect {m}"] = _run(["protect", "--model", m, *source, "--at", AT, "--json"])
        out[f"evidence {m}"] = _evidence(m, source)
    return out


def _inputs(only: str | None) -> list[tuple[str, Path]]:
    items = [("demo-recording", RECORDING), *((p.stem, p) for p in sorted(GOLDENS.glob("*.json")))]
    return [(n, p) for n, p in items if only is None or only in n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", type=Path, help="write every answer under this directory")
    parser.add_argument("--only", help="only inputs whose name contains this")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="inputs answered in parallel")
    args = parser.parse_args()
    total = hashlib.sha256()
    inputs = _inputs(args.only)
    with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(answers, [path for _, path in inputs]))
    for (name, _), got in zip(inputs, results, strict=True):
        digest = hashlib.sha256()
        for key in sorted(got):
            digest.update(key.encode() + b"\0" + got[key].encode() + b"\0")
            if args.dump:
                target = args.dump / name / hashlib.sha1(key.encode()).hexdigest()[:12]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(f"{key}\n{got[key]}")
        total.update(digest.digest())
        print(f"{digest.hexdigest()[:16]}  {len(got):4d}  {name}", flush=True)
    print(f"{total.hexdigest()[:16]}  all", file=sys.stdout)


if __name__ == "__main__":
    main()
