"""``--metadata`` reader benchmark: acryl-datahub's reader (the baseline) vs Pareis's, on the same file, in one run.

    .venv/bin/python bench/metadata_file.py --megabytes 20                    # print the table
    .venv/bin/python bench/metadata_file.py --megabytes 200 --write-results   # and replace "## Metadata files"

The file is generated once (seeded) in DataHub file format as the ``file`` sink writes it (a JSON array, 4-space
indent), with a realistic mix: per dataset a ``schemaMetadata`` (20–60 fields), an ``upstreamLineage`` with
fine-grained lineage, ``datasetProperties``, ``status``, ``ownership``, and for one dataset in ten the same as a
legacy MCE (``proposedSnapshot``); a dbt test (``assertionInfo``) with runs (``assertionRunEvent``); features and
models. Each reader runs in its own child process (so peak RSS is its own):

* **acryl** — :func:`pareis.datahub.files.acryl_file.acryl_proposals`: ``read_metadata_file`` (``json.load`` of the
whole
  file, avrogen ``from_obj`` + ``validate`` of every element, ``mcps_from_mce``), then back to Pegasus JSON;
* **pareis read** — :func:`pareis.datahub.files.metadata_file.read_proposals` (orjson whole below 32 MB, else streamed
  element by element);
* **pareis load** — what ``--metadata`` does with it: :func:`pareis.lineage_loader.load_files` into the in-memory
  index (GMS emulation, PATCHes, the sibling hook, the lineage translation), for the whole picture.

Time is wall-clock seconds of the read (imports excluded); peak RSS is the child's ``ru_maxrss``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import cpu_model  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Metadata files"


def _dataset(i: int) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,shop.public.table_{i},PROD)"


def _col(dataset: str, name: str) -> str:
    return f"urn:li:schemaField:({dataset},{name})"


def _mcp(entity_type: str, urn: str, aspect: str, value: Any, t: int) -> dict[str, Any]:
    return {
        "entityType": entity_type,
        "entityUrn": urn,
        "changeType": "UPSERT",
        "aspectName": aspect,
        "aspect": {"json": value},
        "systemMetadata": {"lastObserved": t, "runId": "bench-run", "lastRunId": "no-run-id-provided"},
    }


def _elements(rng: random.Random, i: int) -> list[dict[str, Any]]:
    t = 1_700_000_000_000 + i
    d = _dataset(i)
    names = [f"col_{j}" for j in range(rng.randint(20, 60))]
    fields = [
        {
            "fieldPath": n,
            "nullable": True,
            "type": {"type": {"com.linkedin.schema.StringType": {}}},
            "nativeDataType": "text",
            "recursive": False,
            "isPartOfKey": False,
        }
        for n in names
    ]
    schema = {
        "schemaName": f"table_{i}",
        "platform": "urn:li:dataPlatform:postgres",
        "version": 0,
        "created": {"time": 0, "actor": "urn:li:corpuser:unknown"},
        "lastModified": {"time": 0, "actor": "urn:li:corpuser:unknown"},
        "hash": "",
        "platformSchema": {"com.linkedin.schema.MySqlDDL": {"tableSchema": ""}},
        "fields": fields,
    }
    ups = [_dataset(max(0, i - k)) for k in (1, 2)] if i > 0 else []
    fgl = [
        {
            "upstreamType": "FIELD_SET",
            "upstreams": [_col(u, rng.choice(names)) for u in ups],
            "downstreamType": "FIELD",
            "downstreams": [_col(d, n)],
            "confidenceScore": 1.0,
        }
        for n in names[:10]
        if ups
    ]
    lineage = {
        "upstreams": [
            {"auditStamp": {"time": t, "actor": "urn:li:corpuser:etl"}, "dataset": u, "type": "TRANSFORMED"}
            for u in ups
        ],
        "fineGrainedLineages": fgl,
    }
    props = {
        "customProperties": {"owner_team": "data", "tier": str(i % 3)},
        "name": f"table_{i}",
        "description": "A generated table " + "x" * rng.randint(50, 300),
        "tags": [],
    }
    owners = {
        "owners": [{"owner": "urn:li:corpuser:alice", "type": "DATAOWNER"}],
        "lastModified": {"time": t, "actor": "urn:li:corpuser:alice"},
    }
    out: list[dict[str, Any]]
    if i % 10 == 0:
        schema_avro = json.loads(
            json.dumps(schema).replace("com.linkedin.schema.", "com.linkedin.pegasus2avro.schema.")
        )
        out = [
            {
                "proposedSnapshot": {
                    "com.linkedin.pegasus2avro.metadata.snapshot.DatasetSnapshot": {
                        "urn": d,
                        "aspects": [
                            {"com.linkedin.pegasus2avro.schema.SchemaMetadata": schema_avro},
                            {"com.linkedin.pegasus2avro.dataset.UpstreamLineage": lineage},
                            {"com.linkedin.pegasus2avro.dataset.DatasetProperties": props},
                            {"com.linkedin.pegasus2avro.common.Status": {"removed": False}},
                        ],
                    }
                },
                "systemMetadata": {"lastObserved": t, "runId": "bench-run", "lastRunId": "no-run-id-provided"},
            }
        ]
    else:
        out = [
            _mcp("dataset", d, "schemaMetadata", schema, t),
            _mcp("dataset", d, "upstreamLineage", lineage, t),
            _mcp("dataset", d, "datasetProperties", props, t),
            _mcp("dataset", d, "status", {"removed": False}, t),
        ]
    out.append(_mcp("dataset", d, "ownership", owners, t))
    a = f"urn:li:assertion:bench{i:08d}"
    column = rng.choice(names)
    out.append(
        _mcp(
            "assertion",
            a,
            "assertionInfo",
            {
                "type": "DATASET",
                "datasetAssertion": {
                    "dataset": d,
                    "scope": "DATASET_COLUMN",
                    "fields": [_col(d, column)],
                    "aggregation": "IDENTITY",
                    "operator": "NOT_NULL",
                    "nativeType": f"not_null_table_{i}_{column}",
                },
                "customProperties": {},
            },
            t,
        )
    )
    for k in range(2):
        run = {
            "timestampMillis": t + k,
            "runId": f"r{k}",
            "asserteeUrn": d,
            "assertionUrn": a,
            "status": "COMPLETE",
            "result": {"type": "SUCCESS", "nativeResults": {}},
            "partitionSpec": {"partition": "FULL_TABLE_SNAPSHOT", "type": "FULL_TABLE"},
        }
        out.append(_mcp("assertion", a, "assertionRunEvent", run, t + k))
    if i % 5 == 0:
        f = f"urn:li:mlFeature:(features,{column}_{i})"
        out.append(_mcp("mlFeature", f, "mlFeatureProperties", {"sources": [_col(d, column)]}, t))
        out.append(
            _mcp(
                "mlModel",
                f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,m{i},PROD)",
                "mlModelProperties",
                {"mlFeatures": [f], "created": {"time": t}},
                t,
            )
        )
    return out


def generate(path: Path, megabytes: float, seed: int) -> tuple[int, int]:
    """Write about ``megabytes`` MB of elements to ``path``; (bytes, elements)."""
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    count = 0
    with path.open("w") as f:
        f.write("[\n")
        i = 0
        while f.tell() < target:
            for element in _elements(rng, i):
                if count:
                    f.write(",\n")
                f.write(json.dumps(element, indent=4))
                count += 1
            i += 1
        f.write("\n]\n")
    return path.stat().st_size, count


def child(mode: str, path: Path) -> dict[str, Any]:
    """Run one reader over ``path`` in this process; its figures."""
    if mode == "acryl":
        from pareis.datahub.files.acryl_file import acryl_proposals as reader
    else:
        from pareis.datahub.files.metadata_file import read_proposals as reader
    from pareis.datahub.files.metadata_file import aspect_names

    aspect_names()  # the aspect classes' import is not the read
    if mode == "load":
        from pareis.lineage_loader import load
        from pareis.store.lineage_memory import MemoryLineageStore

        start = time.perf_counter()
        loaded = load(MemoryLineageStore(), reader([path]))
        seconds = time.perf_counter() - start
        proposals = loaded.proposals
    else:
        start = time.perf_counter()
        proposals = sum(1 for _ in reader([path]))
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"mode": mode, "seconds": seconds, "proposals": proposals, "peak_rss": peak}


def run_child(mode: str, path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--file", str(path)], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def table(size: int, elements: int, results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    base = results[0]
    labels = {
        "acryl": "acryl-datahub `read_metadata_file` + back to JSON (baseline)",
        "read": "**Pareis reader** (`read_proposals`)",
        "load": "Pareis `--metadata` load (reader + GMS emulation + index)",
    }
    rows = [
        "| reader | proposals | seconds | MB/s | vs acryl | peak RSS | RSS / file size |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows.append(
            f"| {labels[r['mode']]} | {r['proposals']:,} | {r['seconds']:.1f} | {size / 1e6 / r['seconds']:.1f} | "
            f"{base['seconds'] / r['seconds']:.1f}× | {r['peak_rss'] / 2**20:,.0f} MiB | {r['peak_rss'] / size:.2f} |"
        )
    read = next(r for r in results if r["mode"] == "read")
    speed, rss = base["seconds"] / read["seconds"], read["peak_rss"] / size
    goal = "met" if speed >= 10 and rss <= 2 else "**not met**"
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}" for p in ("acryl-datahub", "orjson"))
    lines = [
        SECTION,
        "",
        "Reading one generated DataHub file-format file with acryl-datahub's reader (the baseline) and with Pareis's, "
        "measured in one run, each reader in its own process. See the docstring of `bench/metadata_file.py`.",
        "",
        *rows,
        "",
        f"- Command: `.venv/bin/python bench/metadata_file.py --megabytes {args.megabytes:g} --seed {args.seed}`",
        f"- File: {size / 1e6:,.1f} MB, {elements:,} elements (JSON array, 4-space indent, as the `file` sink writes)",
        f"- Machine: {cpu_model()}, {os.cpu_count()} cores shared with other work (load average "
        f"{os.getloadavg()[0]:.1f} at start); Python {platform.python_version()}; {versions}",
        f"- Goal (Pareis reader vs acryl, same file): ≥ 10× faster and peak RSS ≤ 2× the file size: {goal} — "
        f"{speed:.1f}× and {rss:.2f}× in this run.",
        "",
    ]
    return "\n".join(lines)


def write_results(text: str) -> None:
    """Replace the section in bench/RESULTS.md (or append it)."""
    current = RESULTS.read_text()
    if SECTION not in current:
        RESULTS.write_text(current.rstrip("\n") + "\n\n" + text)
        return
    head, rest = current.split(SECTION, 1)
    following = rest.find("\n## ")
    tail = rest[following + 1 :] if following >= 0 else ""
    RESULTS.write_text(head + text + ("\n" + tail if tail else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--write-results", action="store_true")
    parser.add_argument("--child", choices=["acryl", "read", "load"])
    parser.add_argument("--file", type=Path)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.file)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "metadata.json"
        size, elements = generate(path, args.megabytes, args.seed)
        results = [run_child(mode, path) for mode in ("acryl", "read", "load")]
    text = table(size, elements, results, args)
    print(text)
    if args.write_results:
        write_results(text)


if __name__ == "__main__":
    main()
