"""Mission Control over the recorded demo: a demo session advanced step by step, whose in-memory stores the web app
reads, guarded by one lock so a test can write (run the next step) while the server reads."""

from __future__ import annotations

import threading
from pathlib import Path

from pareis.answers.sources import Sources
from pareis.config import load_settings
from pareis.demo.session import DemoSession, Step, steps_of

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted((ROOT / "deploy" / "demo" / "recorded").glob("[0-9][0-9]-*.json"))
INCIDENT_STEP = "09-d5-tests-fail"  # the not_null test on raw.transactions.unit_price fails: the incident opens
REPAIR_STEP = "10-d6-repair-tests-pass"  # the tests pass again: the incident resolves
GROUPS = (
    "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)",
    "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,ltv,PROD)",
)
CONTAMINATED = (
    "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_3,PROD)",
    "urn:li:mlModel:(urn:li:dataPlatform:mlflow,ltv_3,PROD)",
)


class DemoState:
    """The recorded demo's roles over in-memory stores, run up to (and including) a named step."""

    def __init__(self, through: str) -> None:
        self.session = DemoSession(load_settings())
        self.steps = steps_of(RECORDED)
        self.lock = threading.RLock()
        self.done: list[Step] = []
        self.advance(through)

    @property
    def sources(self) -> Sources:
        return self.session.sources

    def clock(self) -> int:
        """The demo's "now": the last step run."""
        return self.done[-1].at_ms if self.done else 0

    def advance(self, through: str) -> None:
        """Run every step after the last one run, through ``through``, holding the lock."""
        names = [s.name for s in self.steps]
        stop = names.index(through)
        with self.lock:
            for step in self.steps[len(self.done) : stop + 1]:
                self.session.run(step)
                self.done.append(step)


# -- Long dbt-style names: what makes pages too wide when nothing wraps -------------------------------------------

LONG_RAW = (
    "raw_ingestion_landing_zone.salesforce_marketing_cloud_export.email_campaign_engagement_events_unfiltered_snapshot"
)
LONG_STG = "analytics_production.dbt_marketing_attribution_staging.stg_multi_touch_attribution_sessions_by_channel_v2"
LONG_COLUMN = "customer_lifetime_value_prediction_input_feature_normalised_by_cohort_and_acquisition_region"
LONG_GROUP = (
    "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,customer_lifetime_value_propensity_gradient_boosted_ensemble,PROD)"
)
LONG_T0 = 1_760_000_000_000
HOUR_MS = 3_600_000


def long_names() -> tuple[Sources, int]:
    """A lineage index and run history whose every name is long (a raw table, a dbt staging model, a column, a
    feature, a model group of three versions), with an ACTIVE incident on the raw table's column: the sources (with
    an empty incident store, so pages follow changes) and the time to evaluate at."""
    from pareis.core.runs import AssertionRun, ResultType
    from pareis.store.incidents_memory import MemoryIncidentStore
    from pareis.store.lineage_memory import MemoryLineageStore
    from pareis.store.runs_memory import MemoryRunHistory
    from tests.support.graphs import ASSERTION, Graph, c, ds, feat, model

    g = Graph(MemoryLineageStore())
    g.schema(LONG_RAW, LONG_COLUMN, "id").schema(LONG_STG, LONG_COLUMN, "id")
    g.lineage(LONG_STG, [LONG_RAW], ([c(LONG_RAW, LONG_COLUMN)], [c(LONG_STG, LONG_COLUMN)]))
    g.feature(LONG_COLUMN, c(LONG_STG, LONG_COLUMN))
    for v in (1, 2, 3):
        name = f"customer_lifetime_value_propensity_gradient_boosted_ensemble_version_{v}"
        g.put(
            model(name),
            "mlModelProperties",
            {
                "mlFeatures": [feat(LONG_COLUMN)],
                "groups": [LONG_GROUP],
                "created": {"time": LONG_T0 + v * 10 * HOUR_MS},
            },
        )
    g.assertion(LONG_RAW, c(LONG_RAW, LONG_COLUMN))
    runs = MemoryRunHistory()
    runs.record(AssertionRun(ASSERTION, LONG_T0 + 15 * HOUR_MS, ResultType.SUCCESS, ds(LONG_RAW)))
    runs.record(AssertionRun(ASSERTION, LONG_T0 + 35 * HOUR_MS, ResultType.FAILURE, ds(LONG_RAW), failed_rows=1234))
    return Sources(g.store, runs, MemoryIncidentStore(), origin="long names (in memory)"), LONG_T0 + 36 * HOUR_MS
