"""A realistic incident for the writer tests (shared by the writer, owner and serial-form test modules), driven
through the real state machine: Open → Update → Resolve.

``orders.amount`` goes NULL: the not-null assertion fails (Open), then the accepted-range assertion on
``orders.discount`` fails too (Update: a second assertion, a grown blast radius), then both pass again (Resolve).
The blast radius reaches two churn model versions through features and a fraud model at table precision; the
churn group has a version trained before the window, one inside it and one after the heal.
"""

from __future__ import annotations

from dataclasses import dataclass

from pareis.config import DatahubSettings
from pareis.core.analysis import AnalysisInputs
from pareis.core.contamination import ModelVersion
from pareis.core.impact import BlastRadius, ModelImpact
from pareis.core.intents import Intent, Open, Resolve, Update
from pareis.core.lifecycle import IncidentState, Signal, step
from pareis.core.runs import AssertionRun, ResultType

DATASET = "urn:li:dataset:(urn:li:dataPlatform:snowflake,shop.public.orders,PROD)"
NOT_NULL = "urn:li:assertion:2e9117138dcc9facda66f1efd55a8cd7"
RANGE = "urn:li:assertion:5b0c7d3e2f1a4b6c8d9e0f1a2b3c4d5e"
CHURN = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"
CHURN_V1 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_1,PROD)"
CHURN_V2 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_2,PROD)"
CHURN_V3 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_3,PROD)"
FRAUD = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_7,PROD)"
AMOUNT = "urn:li:mlFeature:(orders,amount)"
AVG_AMOUNT = "urn:li:mlFeature:(orders,avg_amount_30d)"
DISCOUNT = "urn:li:mlFeature:(orders,discount_rate)"

DAY = 86_400_000
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
SETTINGS = DatahubSettings(actor="urn:li:corpuser:pareis", pipeline_name="pareis")


def _column(name: str) -> str:
    return f"urn:li:schemaField:({DATASET},{name})"


BLAST = {
    NOT_NULL: BlastRadius(
        failing_columns=(_column("amount"),),
        origin_columns=(_column("amount"),),
        columns=(_column("amount"),),
        datasets=(DATASET,),
        features=(AMOUNT, AVG_AMOUNT),
        models=(
            ModelImpact(CHURN_V2, CHURN, (AMOUNT, AVG_AMOUNT), 4, "column"),
            ModelImpact(CHURN_V3, CHURN, (AMOUNT,), 4, "column"),
            ModelImpact(FRAUD, None, (), 0, "table"),
        ),
    ),
    RANGE: BlastRadius(
        failing_columns=(_column("discount"),),
        origin_columns=(_column("discount"),),
        columns=(_column("discount"),),
        datasets=(DATASET,),
        features=(DISCOUNT,),
        models=(ModelImpact(CHURN_V3, CHURN, (DISCOUNT,), 4, "column"),),
    ),
}
VERSIONS = {
    CHURN: (
        ModelVersion(CHURN_V1, CHURN, "1", T0 - 10 * DAY),
        ModelVersion(CHURN_V2, CHURN, "2", T0 + DAY // 2),
        ModelVersion(CHURN_V3, CHURN, "3", T0 + 5 * DAY),
    ),
    FRAUD: (ModelVersion(FRAUD, None, "7", None),),
}


def _run(assertion: str, at: int, result: ResultType, rows: int | None = None) -> AssertionRun:
    return AssertionRun(assertion, at, result, DATASET, run_id=f"run-{at}", failed_rows=rows)


RUNS = (
    _run(NOT_NULL, T0 - DAY, ResultType.SUCCESS),
    _run(RANGE, T0 - DAY, ResultType.SUCCESS),
    _run(NOT_NULL, T0, ResultType.FAILURE, 120),
    _run(RANGE, T0 + DAY, ResultType.FAILURE, 7),
    _run(NOT_NULL, T0 + 2 * DAY, ResultType.SUCCESS),
    _run(RANGE, T0 + 3 * DAY, ResultType.SUCCESS),
)


@dataclass(frozen=True)
class Story:
    open: Open
    update: Update
    resolve: Resolve


def story() -> Story:
    """The three intents of the incident, each from the state machine given the runs seen so far."""
    state = IncidentState(DATASET)
    intents: list[Intent] = []
    for index, run in enumerate(RUNS):
        inputs = AnalysisInputs(runs=RUNS[: index + 1], blast=BLAST, versions=VERSIONS)
        state, out = step(state, Signal(DATASET, run), inputs, now_ms=run.timestamp_ms + 1000)
        intents.extend(out)
    opened, updated, resolved = intents
    assert isinstance(opened, Open) and isinstance(updated, Update) and isinstance(resolved, Resolve)
    return Story(opened, updated, resolved)
