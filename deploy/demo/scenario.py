"""The real demo scenario: a warehouse, dbt, MLflow and DataHub's connectors, recorded step by step.

Run: ``make demo-record`` (installs what it needs, starts Postgres, runs this). By hand, with the stack up::

    .venv/bin/python deploy/demo/scenario.py [--out deploy/demo/recorded] [--dbt .venv-demo/bin/dbt]

Story (simulated time; day 0 is 2025-10-01, every night: 01:00 load, 01:30 ``dbt run``, 04:00 retrains on
training nights, 06:00 ``dbt test``):

- day 0: a year of history (1M+ rows) is loaded; ``dbt build`` passes.
- days 1-4: daily loads, passing tests; churn and LTV versions 1 (day 1) and 2 (day 3) train on clean data.
- day 5, 01:00: a backfill of :data:`BAD_RANGE` reloads those dates with ``unit_price`` NULL (the bad load);
  ``dbt run`` rebuilds the feature tables from it (staging drops unpriced lines silently).
- day 5, 04:00: the nightly retrain (versions 3) trains on the poisoned features — inside the blind window.
- day 5, 06:00: ``dbt test`` fails (``not_null`` on the source's ``unit_price``).
- day 6: the range is reloaded correctly; ``dbt run``; 06:00 the tests pass again (the incident heals).
- day 7: versions 4 train on repaired data.

After each step the connectors that saw something run with the file sink, their output is put on the
scenario's clock (:mod:`clock`) and written to ``<out>/NN-<step>.json``; ``<out>/manifest.yaml`` and
``<out>/README.md`` list the steps, simulated times, the models' AUCs, and what ``pareis analyze`` says about
the recording (the script fails if that isn't the story above).

Idempotent: it drops and recreates database ``retail``, wipes its scratch directory (``deploy/demo/.work``:
dbt target, MLflow sqlite registry and artifacts, connector outputs) and replaces the step files in ``<out>``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import yaml  # noqa: E402
from clock import ScenarioClock, iso, now_ms, sim_ms  # noqa: E402
from ingest import run_recipe  # noqa: E402
from ml import train  # noqa: E402
from warehouse import generate, load  # noqa: E402

T0 = dt.datetime(2025, 10, 1, tzinfo=dt.UTC)
BAD_RANGE = (dt.date(2025, 5, 15), dt.date(2025, 8, 15))
"""Invoice dates [start, end) the bad backfill reloads without prices."""
RAW_PG = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)"
RAW_DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.raw.transactions,PROD)"


def at(day: int, hour: int, minute: int = 0) -> int:
    """Simulated epoch ms of ``day`` (0 = 2025-10-01) at ``hour:minute`` UTC."""
    return sim_ms(T0 + dt.timedelta(days=day, hours=hour, minutes=minute))


@dataclass
class Step:
    """One recorded step: its file, its actions, and the metadata the connectors emitted during it."""

    number: int
    name: str
    summary: str
    records: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, str]] = field(default_factory=list)
    connectors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def file(self) -> str:
        return f"{self.number:02d}-{self.name}.json"


@dataclass
class Scenario:
    """Runs the story; see the module doc."""

    out: Path
    work: Path
    dbt: Path
    wh: load.Warehouse = field(default_factory=load.Warehouse)
    clock: ScenarioClock = field(default_factory=ScenarioClock)
    steps: list[Step] = field(default_factory=list)
    versions: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    pending_results: list[Path] = field(default_factory=list)
    frame: Any = None
    registry: train.Registry | None = None

    # ---- plumbing -------------------------------------------------------------------------------------------

    @property
    def step(self) -> Step:
        return self.steps[-1]

    @contextmanager
    def recording(self, name: str, summary: str) -> Iterator[Step]:
        step = Step(len(self.steps) + 1, name, summary)
        self.steps.append(step)
        began = time.monotonic()
        print(f"== {step.file}: {summary}", flush=True)
        yield step
        step.seconds = round(time.monotonic() - began, 1)
        print(f"   {len(step.records)} proposals, {step.seconds}s", flush=True)

    def act(self, when: int, what: str, fn: Callable[[], Any]) -> Any:
        with self.clock.action(f"{self.step.file}: {what}", when):
            began = time.monotonic()
            result = fn()
        self.step.actions.append({"at": iso(when), "what": what})
        print(f"   {iso(when)}  {what}  ({time.monotonic() - began:.1f}s)", flush=True)
        return result

    def dbt_cmd(self, *args: str, expect_ok: bool = True) -> dict[str, Any]:
        env = {
            **os.environ,
            "DBT_TARGET_PATH": str(self.work / "dbt-target"),
            "DBT_LOG_PATH": str(self.work / "dbt-logs"),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "DBT_PROFILES_DIR": str(HERE / "dbt"),
            "DEMO_PG_HOST": self.wh.host,
            "DEMO_PG_PORT": str(self.wh.port),
            "DEMO_PG_USER": self.wh.user,
            "DEMO_PG_PASSWORD": self.wh.password,
        }
        cmd = [str(self.dbt), *args, "--project-dir", str(HERE / "dbt"), "--no-use-colors"]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        target = self.work / "dbt-target"
        if proc.returncode != 0 and (expect_ok or not (target / "run_results.json").exists()):
            raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}{proc.stderr}")
        results = json.loads((target / "run_results.json").read_text())
        if args[0] != "docs":
            kept = self.work / "run-results" / f"{len(list((self.work / 'run-results').glob('*.json'))):03d}.json"
            shutil.copy(target / "run_results.json", kept)
            self.pending_results.append(kept)
        if args[0] in ("run", "build", "docs"):
            # Only these manifests carry compiled model SQL, which the dbt source's column lineage parses.
            shutil.copy(target / "manifest.json", self.work / "manifest.json")
        if args[0] == "docs":
            shutil.copy(target / "catalog.json", self.work / "catalog.json")
        statuses: dict[str, int] = {}
        for r in results["results"]:
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        return {"statuses": statuses, "results": results["results"]}

    def ingest(self, when: int, connector: str, env: dict[str, str] | None = None) -> None:
        run_id = f"demo-{self.step.number:02d}-{self.step.name}-{connector}"
        out = self.work / "connectors" / f"{run_id}.json"
        base = {
            "DEMO_PG_HOST": self.wh.host,
            "DEMO_PG_PORT": str(self.wh.port),
            "DEMO_PG_USER": self.wh.user,
            "DEMO_PG_PASSWORD": self.wh.password,
            "DEMO_MLFLOW_URI": self.mlflow_uri,
        }

        def run() -> list[dict[str, Any]]:
            return run_recipe(connector, out, run_id, {**base, **(env or {})})

        records = self.act(when, f"DataHub {connector} source → {out.name}", run)
        self.step.records.extend(self.clock.rewrite(records))
        self.step.connectors.append(connector)

    def ingest_dbt(self, when: int) -> None:
        """The dbt source over the latest compiled manifest, the catalog and the results since the last run."""
        artifacts = self.work / "dbt-artifacts" / f"{self.step.number:02d}"
        (artifacts / "run_results").mkdir(parents=True)
        shutil.copy(self.work / "manifest.json", artifacts / "manifest.json")
        shutil.copy(self.work / "catalog.json", artifacts / "catalog.json")
        for path in self.pending_results:
            shutil.copy(path, artifacts / "run_results" / path.name)
        self.pending_results = []
        self.ingest(when, "dbt", {"DEMO_DBT_ARTIFACTS": str(artifacts)})

    @property
    def mlflow_uri(self) -> str:
        return f"sqlite:///{self.work / 'mlflow' / 'mlflow.db'}"

    # ---- actions --------------------------------------------------------------------------------------------

    def load_day(self, day: int) -> None:
        """The nightly load at ``day`` 01:00: the previous day's transactions."""
        date = generate.HISTORY_END + dt.timedelta(days=day - 1)
        rows = generate.between(self.frame, date, date + dt.timedelta(days=1))
        self.act(
            at(day, 1),
            f"load {date} ({len(rows):,} rows)",
            lambda: load.load(self.wh, rows, start=date, end=date + dt.timedelta(days=1)),
        )

    def backfill(self, day: int, *, broken: bool) -> None:
        start, end = BAD_RANGE
        rows = generate.between(self.frame, start, end)
        what = "with unit_price NULL (bad load)" if broken else "with prices (repair)"
        self.act(
            at(day, 0, 45),
            f"backfill {start}..{end} {what} ({len(rows):,} rows)",
            lambda: load.load(self.wh, rows, start=start, end=end, replace=True, unit_price_null=broken),
        )
        self.facts["bad_load_rows" if broken else "repair_rows"] = len(rows)

    def dbt_run(self, day: int) -> None:
        self.act(at(day, 1, 30), "dbt run", lambda: self.dbt_cmd("run"))

    def dbt_test(self, day: int, *, expect_pass: bool) -> dict[str, Any]:
        outcome: dict[str, Any] = self.act(at(day, 6), "dbt test", lambda: self.dbt_cmd("test", expect_ok=expect_pass))
        failed = [r for r in outcome["results"] if r["status"] in ("fail", "error")]
        print(f"   tests: {outcome['statuses']}", flush=True)
        if expect_pass and failed:
            raise RuntimeError(f"day {day}: tests failed unexpectedly: {[r['unique_id'] for r in failed]}")
        if not expect_pass and not failed:
            raise RuntimeError(f"day {day}: the tests should have failed")
        for r in failed:
            self.facts.setdefault("failed_tests", {})[r["unique_id"]] = r.get("failures")
        return outcome

    def train_models(self, day: int, data: str) -> None:
        """Versions of both models at ``day`` 04:00 / 04:15, then the features and the MLflow source."""
        assert self.registry is not None
        holdout_path = self.work / "holdout.csv"
        with self.wh.connect() as conn:
            frame = train.training_frame(conn)
        holdout = train.freeze_holdout(frame, holdout_path)
        registry = self.registry
        for minute, spec in zip((0, 15), train.MODELS, strict=True):
            when = at(day, 4, minute)

            def fit(spec: train.ModelSpec = spec, when: int = when) -> train.TrainedVersion:
                return registry.train(spec, frame, holdout, started_ms=when)

            trained: train.TrainedVersion = self.act(when, f"train {spec.name} ({data} data)", fit)
            print(f"   {spec.name} v{trained.version}: val_auc {trained.val_auc}, holdout_auc {trained.holdout_auc}")
            self.versions.append({**asdict(trained), "data": data, "step": self.step.file})
        self.act(at(day, 4, 29), "publish features (mlFeature, sources = feature-table columns)", self.publish_features)
        self.ingest(at(day, 4, 30), "mlflow")

    def publish_features(self) -> None:
        from datahub.metadata.schema_classes import SystemMetadataClass

        records = []
        for mcp in train.feature_proposals():
            mcp.systemMetadata = SystemMetadataClass(
                lastObserved=now_ms(), runId=f"demo-{self.step.number:02d}-{self.step.name}-features"
            )
            records.append(mcp.to_obj(simplified_structure=True))
        self.step.records.extend(self.clock.rewrite(records))
        self.step.connectors.append("features")

    # ---- the story ------------------------------------------------------------------------------------------

    def reset(self) -> None:
        if self.work.exists():
            shutil.rmtree(self.work)
        for sub in ("connectors", "run-results", "dbt-artifacts", "mlflow/artifacts"):
            (self.work / sub).mkdir(parents=True)
        self.out.mkdir(parents=True, exist_ok=True)
        for old in self.out.glob("[0-9][0-9]-*.json"):
            old.unlink()
        load.reset(self.wh)

    def run(self) -> None:
        began = time.monotonic()
        self.reset()
        self.registry = train.Registry(self.mlflow_uri, self.work / "mlflow" / "artifacts")
        self.frame = generate.generate()
        history = generate.between(self.frame, generate.HISTORY_START, generate.HISTORY_END)
        self.facts["history_rows"] = len(history)

        with self.recording("history-load", "a year of transactions loaded into raw.transactions"):
            self.act(
                at(0, 1),
                f"load {generate.HISTORY_START}..{generate.HISTORY_END} ({len(history):,} rows)",
                lambda: load.load(self.wh, history, start=generate.HISTORY_START, end=generate.HISTORY_END),
            )
            self.ingest(at(0, 1, 20), "postgres")

        with self.recording("dbt-build", "dbt build: staging, marts, feature tables; every test passes"):
            build = self.act(at(0, 1, 30), "dbt build", lambda: self.dbt_cmd("build"))
            print(f"   build: {build['statuses']}", flush=True)
            self.act(at(0, 1, 50), "dbt docs generate (catalog)", lambda: self.dbt_cmd("docs", "generate"))
            self.ingest_dbt(at(0, 2))
            self.ingest(at(0, 2, 10), "postgres")

        for day in (1, 2, 3, 4):
            training = day in (1, 3)
            label = f"d{day}-train-clean" if training else f"d{day}-tests-pass"
            summary = "nightly load and dbt run" + (", clean retrain (churn, ltv)" if training else "")
            with self.recording(label, summary + ", tests pass"):
                self.load_day(day)
                self.dbt_run(day)
                if training:
                    self.train_models(day, "clean")
                self.dbt_test(day, expect_pass=True)
                self.ingest_dbt(at(day, 6, 30))

        with self.recording("d5-bad-load", f"a backfill NULLs unit_price for {BAD_RANGE[0]}..{BAD_RANGE[1]}"):
            self.backfill(5, broken=True)
            self.load_day(5)
            self.ingest(at(5, 1, 15), "postgres")
            self.dbt_run(5)
            self.ingest_dbt(at(5, 2))
        with self.recording("d5-retrain-poisoned", "the nightly retrain runs on the poisoned features"):
            self.train_models(5, "poisoned")
        with self.recording("d5-tests-fail", "dbt test: not_null on raw.transactions.unit_price fails"):
            self.dbt_test(5, expect_pass=False)
            self.ingest_dbt(at(5, 6, 30))
        with self.recording("d6-repair-tests-pass", "the range is reloaded with prices; the tests pass again"):
            self.backfill(6, broken=False)
            self.load_day(6)
            self.ingest(at(6, 1, 15), "postgres")
            self.dbt_run(6)
            self.dbt_test(6, expect_pass=True)
            self.ingest_dbt(at(6, 6, 30))
        with self.recording("d7-retrain-clean", "nightly load, retrain on repaired data, tests pass"):
            self.load_day(7)
            self.dbt_run(7)
            self.train_models(7, "clean")
            self.dbt_test(7, expect_pass=True)
            self.ingest_dbt(at(7, 6, 30))

        self.clock.close()
        self.facts["record_seconds"] = round(time.monotonic() - began, 1)
        self.write()
        analysis = self.analyze()
        self.facts["analyze_seconds"] = analysis.pop("_seconds")
        self.write(analysis)
        print(f"done in {self.facts['record_seconds']}s (+{self.facts['analyze_seconds']}s analyze): {self.out}")

    # ---- output ---------------------------------------------------------------------------------------------

    def write(self, analysis: dict[str, Any] | None = None) -> None:
        for step in self.steps:
            lines = [json.dumps(r, separators=(",", ":"), sort_keys=True) for r in step.records]
            (self.out / step.file).write_text("[\n" + ",\n".join(lines) + "\n]\n")
        manifest = self.manifest(analysis)
        (self.out / "manifest.yaml").write_text(
            "# Written by deploy/demo/scenario.py (`make demo-record`); see README.md beside it.\n"
            + yaml.safe_dump(manifest, sort_keys=False, width=120, allow_unicode=True)
        )
        (self.out / "README.md").write_text(readme(manifest))

    def manifest(self, analysis: dict[str, Any] | None) -> dict[str, Any]:
        steps = []
        for step in self.steps:
            observed = [r.get("systemMetadata", {}).get("lastObserved") for r in step.records]
            observed = [o for o in observed if isinstance(o, int)]
            steps.append(
                {
                    "file": step.file,
                    "step": step.name,
                    "summary": step.summary,
                    "simulated_start": step.actions[0]["at"],
                    "first_observed_ms": min(observed),
                    "last_observed_ms": max(observed),
                    "proposals": len(step.records),
                    "connectors": list(dict.fromkeys(step.connectors)),
                    "actions": step.actions,
                    "seconds": step.seconds,
                }
            )
        versions = [
            {
                "model": v["model"],
                "version": v["version"],
                "urn": f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{v['model']}_{v['version']},PROD)",
                "trained_at": iso(v["started_ms"]),
                "trained_at_ms": v["started_ms"],
                "data": v["data"],
                "feature_cutoff": v["feature_cutoff"],
                "train_rows": v["train_rows"],
                "val_auc": v["val_auc"],
                "holdout_auc": v["holdout_auc"],
                "mlflow_run_id": v["run_id"],
                "step": v["step"],
            }
            for v in self.versions
        ]
        return {
            "scenario": "retail warehouse → dbt → MLflow, recorded with DataHub's postgres, dbt and mlflow sources",
            "day_0": T0.strftime("%Y-%m-%d"),
            "seed": generate.DEFAULT_SEED,
            "warehouse": {
                "database": load.DATABASE,
                "table": "raw.transactions",
                "history": f"{generate.HISTORY_START}..{generate.HISTORY_END}",
                "history_rows": self.facts.get("history_rows"),
            },
            "bad_load": {
                "invoice_dates": f"{BAD_RANGE[0]}..{BAD_RANGE[1]}",
                "rows": self.facts.get("bad_load_rows"),
                "failed_tests": self.facts.get("failed_tests"),
            },
            "hold_out": "customer_id % 5 == 0, frozen from the clean data of day 1 (holdout_auc); "
            "val_auc is a slice of each day's own data",
            "steps": steps,
            "model_versions": versions,
            "pareis_analyze": analysis,
            "timings_seconds": {
                "record": self.facts.get("record_seconds"),
                "analyze": self.facts.get("analyze_seconds"),
            },
        }

    def analyze(self) -> dict[str, Any]:
        """``pareis analyze`` on the recording, checked against the story; a summary for the manifest."""
        began = time.monotonic()
        files = [self.out / s.file for s in self.steps]
        cmd = [str(REPO / ".venv" / "bin" / "pareis"), "analyze", "--dataset", RAW_DBT, "--json"]
        for f in files:
            cmd += ["--metadata", str(f)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"pareis analyze failed ({proc.returncode}): {proc.stdout}{proc.stderr}")
        answer = json.loads(proc.stdout)
        summary = summarize(answer)
        problems = check_story(summary, self.versions)
        summary["_seconds"] = round(time.monotonic() - began, 1)
        if problems:
            (self.out / "analyze.failed.txt").write_text(proc.stdout)
            raise RuntimeError("pareis analyze does not tell the story:\n- " + "\n- ".join(problems))
        return summary


def summarize(answer: dict[str, Any]) -> dict[str, Any]:
    """The parts of ``pareis analyze --json`` the manifest keeps."""
    blast = answer["blast"]
    return {
        "command": "pareis analyze --dataset " + RAW_DBT + " --metadata <each step file> --json",
        "incident": answer["incident"],
        "window": {k: (None if v is None else iso(v)) for k, v in answer["window"].items()},
        "window_ms": answer["window"],
        "failing_columns": blast["failing_columns"],
        "origin_columns": blast["origin_columns"],
        "features": blast["features"],
        "severity": blast["severity"],
        "models": [
            {"group": g, "poisoned_features": list(f), "total_features": n, "severity": s}
            for g, f, n, s in sorted(
                {
                    (m["group"], tuple(m["poisoned_features"]), m["total_features"], m["severity"])
                    for m in blast["models"]
                }
            )
        ],
        "contamination": answer["contamination"],
    }


def check_story(summary: dict[str, Any], versions: list[dict[str, Any]]) -> list[str]:
    """What in the analysis contradicts the scenario (empty when it tells the story)."""
    problems = []
    if summary["incident"]["state"] != "RESOLVED":
        problems.append(f"incident state {summary['incident']['state']}, expected RESOLVED")
    expected = {(v["model"], v["version"]): ("CONTAMINATED" if v["data"] == "poisoned" else "CLEAN") for v in versions}
    seen: dict[tuple[str, str], str] = {}
    for group in summary["contamination"]:
        name = group["group"].split(",")[1]
        for v in group["versions"]:
            seen[(name, v["version"])] = v["verdict"]
        clean_before = [
            v for v in versions if v["model"] == name and v["data"] == "clean" and v["started_ms"] < at(5, 0)
        ]
        want = clean_before[-1]["version"] if clean_before else None
        got = (group["safe_rollback"] or {}).get("version")
        if got != want:
            problems.append(f"{name}: safe rollback {got}, expected {want}")
    if seen != expected:
        problems.append(f"verdicts {sorted(seen.items())}, expected {sorted(expected.items())}")
    groups = {m["group"] for m in summary["models"]}
    if len(groups) != 2:
        problems.append(f"blast radius reaches model groups {sorted(groups)}, expected churn and ltv")
    return problems


def readme(manifest: dict[str, Any]) -> str:
    """The human index of the recording."""
    lines = [
        "# The recorded demo scenario",
        "",
        "Written by `deploy/demo/scenario.py` (`make demo-record`); do not edit by hand. Each `NN-<step>.json` is",
        "DataHub file-format metadata (a JSON array of proposals, one per line) as DataHub's own postgres, dbt and",
        "mlflow sources wrote it with the `file` sink after that step, plus the `mlFeature` entities the training",
        "code publishes. Timestamps are on the scenario's simulated clock (`deploy/demo/clock.py` says why and",
        "how); `manifest.yaml` has the same index for programs.",
        "",
        f"Day 0 is {manifest['day_0']}. Warehouse: `{manifest['warehouse']['database']}."
        f"{manifest['warehouse']['table']}`, {manifest['warehouse']['history_rows']:,} rows of history "
        f"({manifest['warehouse']['history']}), seed {manifest['seed']}. Bad load: invoice dates "
        f"{manifest['bad_load']['invoice_dates']} ({manifest['bad_load']['rows']:,} rows) reloaded without prices.",
        "",
        "| file | simulated start | connectors | proposals | what happened |",
        "|---|---|---|---:|---|",
    ]
    for s in manifest["steps"]:
        lines.append(
            f"| `{s['file']}` | {s['simulated_start']} | {', '.join(s['connectors'])} | {s['proposals']} "
            f"| {s['summary']} |"
        )
    lines += [
        "",
        "## Model versions",
        "",
        f"AUC on the frozen clean hold-out (`holdout_auc`) and on a slice of the day's own data (`val_auc`). "
        f"Hold-out: {manifest['hold_out']}.",
        "",
        "| model | version | trained at | data | holdout AUC | val AUC | train rows |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for v in manifest["model_versions"]:
        lines.append(
            f"| {v['model']} | {v['version']} | {v['trained_at']} | {v['data']} | {v['holdout_auc']:.4f} "
            f"| {v['val_auc']:.4f} | {v['train_rows']} |"
        )
    analysis = manifest.get("pareis_analyze")
    if analysis:
        w = analysis["window"]
        lines += [
            "",
            "## What Pareis says",
            "",
            "```",
            analysis["command"],
            "```",
            "",
            f"- incident `{analysis['incident']['urn']}` on `{analysis['incident']['dataset']}`, "
            f"{analysis['incident']['state']}, failed rows {analysis['incident']['failed_rows']}",
            f"- assertions: {', '.join(f'`{a}`' for a in analysis['incident']['assertions'])}",
            f"- blind window: last success {w['last_success_ms']}, first failure {w['first_failure_ms']}, "
            f"healed {w['healed_ms']}",
            f"- failing columns: {', '.join(f'`{c}`' for c in analysis['failing_columns'])}",
            f"- poisoned features: {', '.join(f'`{f}`' for f in analysis['features'])}",
        ]
        for group in analysis["contamination"]:
            verdicts = ", ".join(f"v{v['version']} {v['verdict']}" for v in group["versions"])
            rollback = group["safe_rollback"]
            lines.append(
                f"- `{group['group']}`: {verdicts}; safe rollback: {('v' + rollback['version']) if rollback else '—'}"
            )
    t = manifest["timings_seconds"]
    lines += ["", f"Recorded in {t['record']} s; `pareis analyze` took {t['analyze']} s.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "recorded")
    parser.add_argument("--work", type=Path, default=HERE / ".work")
    parser.add_argument("--dbt", type=Path, default=REPO / ".venv-demo" / "bin" / "dbt")
    args = parser.parse_args(argv)
    Scenario(out=args.out.resolve(), work=args.work.resolve(), dbt=args.dbt.resolve()).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
