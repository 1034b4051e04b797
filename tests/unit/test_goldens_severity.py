"""Today's DataHub, assertion results (issue 31 item 7, DESIGN §2.3): a FAILURE of severity LOW (dbt's ``warn``) is
a warning; dbt runtime errors arrive as ERROR.

On ``dbt_test_events_golden`` (jaffle_shop), the dbt node of ``orders`` has 11 assertions that pass at the golden's
run (``not_null_orders_amount`` at T0) and one that errors (a dbt runtime error: "Database Error in test …"). The
overlays add runs of ``not_null_orders_amount``, at T2 = T0 + 1 day and later:

* ``dbt_events_not_null_amount_warns``: T2 FAILURE LOW, 17 failures (dbt ``warn`` under ``test_warnings_are_errors``);
* ``dbt_events_not_null_amount_fails``: T2 FAILURE without severity, 17 failures;
* ``dbt_events_not_null_amount_warns_then_passes``: T3 = T2 + 1 h FAILURE LOW, 5 failures; T4 = T2 + 2 h SUCCESS.

Answers, by DESIGN: the warning alone opens no incident (with ``incidents.open_on_low_severity`` it opens one from
T2, blind window (T0, T2]) and counts in the pass rate (11 of 12 counting runs passed in the 7 days to T2; the ERROR
run does not count). After a real failure at T2, the warning at T3 neither heals it nor is a failure of it: one
incident [T2, T4), its latest failure the T2 one (17 rows); with the setting on, the T3 run is its latest failure
(5 rows). The runtime errors are ERROR runs: no incident, not counted.
"""

from __future__ import annotations

from pathlib import Path

from pareis.core.reliability import pass_rate
from pareis.core.runs import AssertionRun, ResultType
from pareis.core.window import incidents
from pareis.lineage_loader import load_files
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.goldens import golden, overlay

NOT_NULL_AMOUNT = "urn:li:assertion:bbd78a070092f54313153abec49f6f31"
DBT_ORDERS = "urn:li:dataset:(urn:li:dataPlatform:dbt,calm-pagoda-323403.jaffle_shop.orders,PROD)"
T0 = 1655565133585
T2 = T0 + 86_400_000
T3 = T2 + 3_600_000
T4 = T2 + 7_200_000


def runs(*overlays: str, open_on_low_severity: bool = False) -> list[AssertionRun]:
    """The runs asserting the dbt node of ``orders``, from the golden and the overlays."""
    files: list[Path] = [golden("dbt__dbt_test_events_golden"), *(overlay(name) for name in overlays)]
    loaded = load_files(MemoryLineageStore(), files, open_on_low_severity=open_on_low_severity)
    return [r for r in loaded.runs if r.dataset == DBT_ORDERS]


def test_a_low_severity_failure_is_a_warning_that_opens_no_incident() -> None:
    got = runs("dbt_events_not_null_amount_warns")
    (warned,) = [r for r in got if r.timestamp_ms == T2]
    assert (warned.result, warned.severity, warned.warning, warned.fails) == (ResultType.FAILURE, "LOW", True, False)
    assert incidents(got) == ()
    rate = pass_rate(got, T2)
    assert (rate.value, rate.detail) == (91.7, "11/12 runs passed in 7 days")


def test_with_the_setting_a_low_severity_failure_opens_an_incident() -> None:
    (window,) = incidents(runs("dbt_events_not_null_amount_warns", open_on_low_severity=True))
    assert window.to_json() == {
        "assertions": [NOT_NULL_AMOUNT],
        "failed_rows": 17,
        "first_failure_ms": T2,
        "healed_ms": None,
        "last_success_ms": T0,
    }


def test_a_warning_after_a_failure_neither_heals_it_nor_is_its_latest_failure() -> None:
    overlays = ("dbt_events_not_null_amount_fails", "dbt_events_not_null_amount_warns_then_passes")
    (window,) = incidents(runs(*overlays))
    assert (window.first_failure_ms, window.healed_ms, window.failed_rows) == (T2, T4, 17)
    assert [r.timestamp_ms for r in window.runs] == [T2, T4]
    (window,) = incidents(runs(*overlays, open_on_low_severity=True))
    assert (window.first_failure_ms, window.healed_ms, window.failed_rows) == (T2, T4, 5)
    assert [r.timestamp_ms for r in window.runs] == [T2, T3, T4]


def test_a_failure_of_high_or_no_severity_fails_as_before() -> None:
    (window,) = incidents(runs("dbt_events_not_null_amount_fails"))
    assert (window.first_failure_ms, window.last_success_ms, window.failed_rows) == (T2, T0, 17)


def test_dbt_runtime_errors_arrive_as_error_runs_that_say_nothing_about_the_data() -> None:
    errors = [r for r in runs() if r.result is ResultType.ERROR]
    assert [(r.assertion, r.counts, r.fails) for r in errors] == [
        ("urn:li:assertion:1c217b7587a0cad47a07a09bfe154055", False, False)
    ]
    assert incidents(runs()) == ()


def test_the_run_keeps_its_severity_and_warning_through_its_json() -> None:
    (warned,) = [r for r in runs("dbt_events_not_null_amount_warns") if r.timestamp_ms == T2]
    assert warned.to_json()["severity"] == "LOW" and warned.to_json()["warning"] is True
    assert AssertionRun.from_json(warned.to_json()) == warned
    (plain,) = [r for r in runs() if r.assertion == NOT_NULL_AMOUNT]
    assert "severity" not in plain.to_json() and "warning" not in plain.to_json(), "unchanged JSON without them"


def test_in_the_demo_a_warning_opens_no_incident_and_a_failure_does(tmp_path: Path) -> None:
    """The running service's path: the timeline through every role (``pareis demo``), default settings."""
    from pareis.config import Settings
    from pareis.demo.session import DemoSession, steps_of

    for name, opened in (("dbt_events_not_null_amount_warns", False), ("dbt_events_not_null_amount_fails", True)):
        session = DemoSession(Settings())
        for step in steps_of([golden("dbt__dbt_test_events_golden"), overlay(name)]):
            session.run(step)
        written = {str(m.aspectName) for m in session.writer.proposals}
        assert ("incidentInfo" in written) is opened, name
