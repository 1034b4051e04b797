"""Reliability components without data are unknown, never 0 (issue 31 item 7, DESIGN §2.5), on real metadata.

* ``dbt_test_events_golden`` (jaffle_shop): the ``orders`` class (dbt node and postgres table, siblings) has 11 tests
  passing and one erroring at the golden's run (T0, 2022-06-18) and feeds no model. Eight days later no run is
  within the 7-day pass window: the pass rate is unknown (not 0); so is coverage (no column feeds a model: a share
  of nothing, not full coverage); incidents 100 (runs, none failing), freshness 0 (older than 7 days):
  (100 × 0.25 + 0 × 0.15) / 0.40 = 62.5. One day after T0 pass rate, incidents and freshness are full (11 of 11
  counting runs passed, the latest 24 h old): 100.
* The excel golden plus a model on two of its sheet's columns (``excel_model_on_spreadsheet_columns``): no test has
  ever run, so pass rate and incidents are unknown; coverage 0 of 2 and freshness 0 are known: the score is 0.
"""

from __future__ import annotations

from pareis.answers.reliability import protect
from pareis.compose.sources import open_sources
from tests.support.goldens import golden, overlay

DAY = 86_400_000
T0 = 1655565137668  # the golden's latest run
ORDERS = "urn:li:dataset:(urn:li:dataPlatform:dbt,calm-pagoda-323403.jaffle_shop.orders,PROD)"
SHEET = (
    "urn:li:dataset:(urn:li:dataPlatform:excel,tests/integration/excel/data/[business_report.xlsx]Business Report,PROD)"
)


def components(score: object) -> dict[str, float | None]:
    return {c.name: c.value for c in score.components}  # type: ignore[attr-defined]


def test_no_run_in_the_window_makes_the_pass_rate_unknown_not_zero() -> None:
    sources = open_sources(metadata=[golden("dbt__dbt_test_events_golden")])
    stale = next(s for s in protect(sources, at_ms=T0 + 8 * DAY, dataset=ORDERS).datasets if s.urn == ORDERS)
    assert components(stale) == {"coverage": None, "pass_rate": None, "incidents": 100.0, "freshness": 0.0}
    assert stale.score == 62.5
    assert stale.to_json()["components"][1] == {
        "name": "pass_rate",
        "value": None,
        "weight": 0.3,
        "detail": "no assertion run in the last 7 days",
    }
    fresh = next(s for s in protect(sources, at_ms=T0 + DAY, dataset=ORDERS).datasets if s.urn == ORDERS)
    assert components(fresh) == {"coverage": None, "pass_rate": 100.0, "incidents": 100.0, "freshness": 100.0}
    assert fresh.score == 100.0


def test_a_dataset_never_tested_has_no_pass_rate_and_no_incident_history() -> None:
    sources = open_sources(
        metadata=[golden("excel__excel_file_test_golden"), overlay("excel_model_on_spreadsheet_columns")]
    )
    answer = protect(sources, at_ms=1_780_272_000_000)
    (sheet,) = answer.datasets
    assert sheet.urn == SHEET
    assert components(sheet) == {"coverage": 0.0, "pass_rate": None, "incidents": None, "freshness": 0.0}
    assert sheet.score == 0.0
