"""The bundled sample timeline (deploy/demo/sample) and the names its builder gives things, for tests that derive
their expectations from the builder rather than from Pareis's outputs."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

from datahub.emitter.mce_builder import (
    make_assertion_urn,
    make_ml_feature_urn,
    make_ml_model_group_urn,
    make_ml_model_urn,
)

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "sample"
TIMELINE = SAMPLE_DIR / "timeline.json"


@cache
def builder() -> ModuleType:
    """deploy/demo/sample/build_sample.py, imported (it is a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("pareis_sample_builder", SAMPLE_DIR / "build_sample.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assertion(test: str) -> str:
    """The URN the builder gives dbt test ``test`` (e.g. ``not_null_unit_price``)."""
    return make_assertion_urn(builder().guid(platform="dbt", name=f"test.retail.{test}"))


def model(group: str, version: int) -> str:
    return make_ml_model_urn("mlflow", f"{group}_{version}", "PROD")


def group(name: str) -> str:
    return make_ml_model_group_urn("mlflow", name, "PROD")


def feature(name: str) -> str:
    return make_ml_feature_urn("customer_features", name)


def stg_warehouse() -> str:
    return str(builder().pg("analytics.stg_transactions"))


def stg_dbt() -> str:
    return str(builder().dbt("analytics.stg_transactions"))
