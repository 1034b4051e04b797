"""Trains the demo's two models on the dbt feature tables and registers each version in MLflow.

Contract:
- :data:`CHURN` (six features) and :data:`LTV` (five) read ``analytics.customer_features`` joined with
  ``analytics.customer_labels`` (customers whose last order is at most :data:`ACTIVE_DAYS` before the cutoff:
  the base the models score). Labels: ``churned`` (no order in the 90 days after the cutoff) and ``high_value``
  (top-quartile spend in those days).
- Customers with ``customer_id % 5 == 0`` never train: they are the hold-out. :func:`freeze_holdout` snapshots
  their features and labels once, from clean data (the scenario's first training); every version is scored on
  that frozen clean hold-out (``holdout_auc``) as well as on a validation slice of the day's own data
  (``val_auc``, ``customer_id % 10 == 1``) — the number a pipeline would see, computed on whatever the
  warehouse held that day.
- :meth:`Registry.train` is deterministic in its inputs (``random_state`` fixed), logs the run with an explicit
  start time (the scenario's simulated clock, so DataHub's MLflow source reports the simulated training time),
  registers the next version of the model and tags it with its ``features`` and ``feature_namespace``
  (what :mod:`ml.feature_links` reads).
- :func:`feature_proposals` are the ``mlFeature`` entities a feature store would publish: one per feature,
  sourced from its column of the warehouse feature table.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

# HistGradientBoosting's OpenMP threads spin on busy shared cores (16 s instead of 0.2 s for a fit here).
os.environ.setdefault("OMP_NUM_THREADS", "1")

from datahub.emitter.mce_builder import make_dataset_urn, make_ml_feature_urn, make_schema_field_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import MLFeatureDataTypeClass, MLFeaturePropertiesClass
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score

FEATURE_TABLE = "retail.analytics.customer_features"
FEATURE_TABLE_URN = make_dataset_urn("postgres", FEATURE_TABLE)
NAMESPACE = "customer_features"
ACTIVE_DAYS = 120
EXPERIMENT = "retail-customer-models"
HYPERPARAMS = {"max_iter": 200, "learning_rate": 0.05, "max_leaf_nodes": 15, "random_state": 0}

FEATURES = {
    "total_spend": ("Net spend in pounds before the cutoff (sum of line totals).", MLFeatureDataTypeClass.CONTINUOUS),
    "avg_unit_price": ("Mean unit price of the customer's lines.", MLFeatureDataTypeClass.CONTINUOUS),
    "order_count": ("Orders (non-cancelled invoices) before the cutoff.", MLFeatureDataTypeClass.COUNT),
    "recency_days": ("Days from the last order to the cutoff.", MLFeatureDataTypeClass.INTERVAL),
    "cancel_rate": ("Share of the customer's invoices that are cancellations.", MLFeatureDataTypeClass.CONTINUOUS),
    "basket_size": ("Units per order.", MLFeatureDataTypeClass.CONTINUOUS),
}


@dataclass(frozen=True)
class ModelSpec:
    """A registered model: its label column and its features (columns of the feature table)."""

    name: str
    label: str
    features: tuple[str, ...]
    description: str


CHURN = ModelSpec(
    "churn",
    "churned",
    ("total_spend", "avg_unit_price", "order_count", "recency_days", "cancel_rate", "basket_size"),
    "Probability that an active customer places no order in the next 90 days.",
)
LTV = ModelSpec(
    "ltv",
    "high_value",
    ("order_count", "recency_days", "total_spend", "cancel_rate", "basket_size"),
    "Probability that an active customer is in the top spend quartile of the next 90 days.",
)
MODELS = (CHURN, LTV)

QUERY = f"""
SELECT f.customer_id, f.feature_cutoff,
       {", ".join(f"f.{c}::float8 AS {c}" for c in FEATURES)},
       l.churned, l.high_value
FROM analytics.customer_features AS f
JOIN analytics.customer_labels AS l USING (customer_id)
WHERE f.recency_days <= {ACTIVE_DAYS}
ORDER BY f.customer_id
"""


def training_frame(conn: object) -> pd.DataFrame:
    """The model base as the warehouse holds it now (``conn``: an open psycopg connection)."""
    cur = conn.execute(QUERY)  # type: ignore[attr-defined]
    columns = [d.name for d in cur.description]
    return pd.DataFrame(cur.fetchall(), columns=columns)


def is_holdout(frame: pd.DataFrame) -> pd.Series:
    return frame["customer_id"] % 5 == 0


def freeze_holdout(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """The frozen clean hold-out: written from ``frame`` the first time, read back ever after."""
    if not path.exists():
        frame[is_holdout(frame)].to_csv(path, index=False)
    return pd.read_csv(path)


@dataclass(frozen=True)
class TrainedVersion:
    """What one training produced and measured."""

    model: str
    version: str
    run_id: str
    started_ms: int
    feature_cutoff: str
    train_rows: int
    val_auc: float
    holdout_auc: float


class Registry:
    """The local MLflow tracking store + model registry (sqlite backend, file artifacts)."""

    def __init__(self, tracking_uri: str, artifact_root: Path) -> None:
        import mlflow
        from mlflow.tracking import MlflowClient

        mlflow.set_tracking_uri(tracking_uri)
        mlflow.set_registry_uri(tracking_uri)
        self.mlflow = mlflow
        self.client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
        experiment = self.client.get_experiment_by_name(EXPERIMENT)
        self.experiment_id = (
            experiment.experiment_id
            if experiment
            else self.client.create_experiment(EXPERIMENT, artifact_location=artifact_root.resolve().as_uri())
        )

    def train(self, spec: ModelSpec, frame: pd.DataFrame, holdout: pd.DataFrame, *, started_ms: int) -> TrainedVersion:
        """Train, score, log and register the next version of ``spec`` on ``frame``; the run starts at
        ``started_ms`` (epoch ms) and lasts as long as it really took."""
        from mlflow.entities import Metric, Param

        began = time.monotonic()
        pool = frame[~is_holdout(frame)]
        val_mask = pool["customer_id"] % 10 == 1
        train, val = pool[~val_mask], pool[val_mask]
        cols = list(spec.features)
        model = HistGradientBoostingClassifier(**HYPERPARAMS)
        model.fit(train[cols].fillna(0.0), train[spec.label])
        val_auc = float(roc_auc_score(val[spec.label], model.predict_proba(val[cols].fillna(0.0))[:, 1]))
        holdout_auc = float(roc_auc_score(holdout[spec.label], model.predict_proba(holdout[cols].fillna(0.0))[:, 1]))
        cutoff = str(frame["feature_cutoff"].iloc[0])

        run = self.client.create_run(
            self.experiment_id,
            start_time=started_ms,
            run_name=f"{spec.name}-{cutoff}",
            tags={"model": spec.name, "features": ",".join(cols), "feature_table": FEATURE_TABLE},
        )
        run_id = run.info.run_id
        with self.mlflow.start_run(run_id=run_id):
            self.mlflow.sklearn.log_model(
                model, artifact_path="model", pip_requirements=["scikit-learn", "pandas", "numpy"]
            )
        elapsed = int((time.monotonic() - began) * 1000)
        params = {
            **{k: str(v) for k, v in HYPERPARAMS.items()},
            "estimator": type(model).__name__,
            "label": spec.label,
            "feature_cutoff": cutoff,
            "active_days": str(ACTIVE_DAYS),
        }
        metrics = {
            "val_auc": val_auc,
            "holdout_auc": holdout_auc,
            "train_rows": float(len(train)),
            "positive_rate": float(np.mean(train[spec.label])),
        }
        self.client.log_batch(
            run_id,
            metrics=[Metric(k, v, started_ms + elapsed, 0) for k, v in metrics.items()],
            params=[Param(k, v) for k, v in params.items()],
        )
        self.client.set_terminated(run_id, "FINISHED", end_time=started_ms + elapsed)
        if not self.client.search_registered_models(f"name = '{spec.name}'"):
            self.client.create_registered_model(spec.name, description=spec.description)
        version = self.client.create_model_version(
            spec.name,
            source=f"{run.info.artifact_uri}/model",
            run_id=run_id,
            tags={"features": ",".join(cols), "feature_namespace": NAMESPACE, "feature_table": FEATURE_TABLE},
            description=f"{spec.description} Features as of {cutoff}.",
        )
        return TrainedVersion(
            model=spec.name,
            version=str(version.version),
            run_id=run_id,
            started_ms=started_ms,
            feature_cutoff=cutoff,
            train_rows=len(train),
            val_auc=round(val_auc, 4),
            holdout_auc=round(holdout_auc, 4),
        )


def feature_proposals() -> list[MetadataChangeProposalWrapper]:
    """The ``mlFeature`` entities of the feature table, each sourced from its warehouse column."""
    return [
        MetadataChangeProposalWrapper(
            entityUrn=make_ml_feature_urn(NAMESPACE, name),
            aspect=MLFeaturePropertiesClass(
                description=description,
                dataType=data_type,
                sources=[make_schema_field_urn(FEATURE_TABLE_URN, name)],
                customProperties={"feature_table": FEATURE_TABLE},
            ),
        )
        for name, (description, data_type) in FEATURES.items()
    ]
