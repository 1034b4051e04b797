"""Runs DataHub's connectors (the recipes in deploy/demo/recipes/) in process, each to a file sink.

Contract: :func:`run_recipe` loads ``recipes/<name>.yml`` with DataHub's own loader (``${VAR}`` expanded from
the environment plus ``env``), runs the pipeline, raises :class:`IngestionFailed` when the source or sink
reported a failure, and returns the file sink's output as parsed JSON (a list of MCP/MCE objects).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RECIPES = Path(__file__).resolve().parent / "recipes"


class IngestionFailed(RuntimeError):
    """A connector run reported failures."""


def run_recipe(name: str, out: Path, run_id: str, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Run recipe ``name`` with ``DEMO_OUT=out``, ``DEMO_RUN_ID=run_id`` and ``env``; return what it wrote."""
    from datahub.configuration.config_loader import load_config_file
    from datahub.ingestion.run.pipeline import Pipeline

    for noisy in ("datahub", "mlflow", "alembic", "sqlglot"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    overrides = {**env, "DEMO_OUT": str(out), "DEMO_RUN_ID": run_id}
    saved = {k: os.environ.get(k) for k in overrides}
    os.environ.update(overrides)
    try:
        config = load_config_file(RECIPES / f"{name}.yml")
        pipeline = Pipeline.create(config, report_to=None, no_progress=True)
        pipeline.run()
        try:
            pipeline.raise_from_status()
        except Exception as exc:
            raise IngestionFailed(f"{name}: {exc}") from exc
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    records = json.loads(out.read_text())
    if not isinstance(records, list):
        raise IngestionFailed(f"{name}: {out} is not a JSON array")
    return records
