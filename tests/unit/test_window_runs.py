"""Assertion runs as values: reading ``assertionRunEvent`` (reference §7.2, §7.3) and the failed-row count."""

from __future__ import annotations

from typing import Any

import pytest

from pareis.core.runs import AssertionRun, InvalidRun, ResultType, failed_rows_of, run_from_event

A = "urn:li:assertion:2e9117138dcc9facda66f1efd55a8cd7"
DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.public.orders,PROD)"


def event(**result: Any) -> dict[str, Any]:
    return {
        "timestampMillis": 1_700_000_000_000,
        "runId": "invocation-1",
        "asserteeUrn": DBT,
        "assertionUrn": A,
        "status": "COMPLETE",
        "partitionSpec": {"partition": "FULL_TABLE_SNAPSHOT", "type": "FULL_TABLE"},
        "result": result,
    }


def test_a_dbt_failure_carries_its_count_in_native_results() -> None:
    run = run_from_event(event(type="FAILURE", nativeResults={"failures": "17", "message": "Got 17 results"}))
    assert run == AssertionRun(A, 1_700_000_000_000, ResultType.FAILURE, DBT, "invocation-1", 17)


def test_unexpected_count_wins_over_native_results() -> None:
    assert failed_rows_of({"unexpectedCount": 3, "nativeResults": {"failures": "17"}}) == 3
    assert failed_rows_of({"unexpectedCount": 0}) == 0


@pytest.mark.parametrize(
    "native",
    [{}, {"failures": "None"}, {"failures": ""}, {"failures": "1.5"}, {"message": "x"}, {"failures": "--5"},
     {"failures": "²"}, {"failures": "٣"}, {"failures": "-5"}, {"failures": -5}],
)  # fmt: skip
def test_an_unreadable_or_missing_count_is_unknown(native: dict[str, str]) -> None:
    assert failed_rows_of({"type": "FAILURE", "nativeResults": native}) is None
    assert failed_rows_of({"type": "FAILURE"}) is None


def test_every_result_type_is_read_and_only_success_and_failure_count() -> None:
    counted = {t: run_from_event(event(type=t.value)).counts for t in ResultType}
    assert counted == {
        ResultType.SUCCESS: True,
        ResultType.FAILURE: True,
        ResultType.ERROR: False,
        ResultType.INIT: False,
    }


def test_a_run_without_result_is_init() -> None:
    raw = event()
    del raw["result"]
    assert run_from_event(raw).result is ResultType.INIT


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"assertionUrn": None}, "without assertionUrn"),
        ({"asserteeUrn": None}, "without assertionUrn or asserteeUrn"),
        ({"timestampMillis": "1700000000000"}, "timestampMillis must be an int"),
        ({"timestampMillis": True}, "timestampMillis must be an int"),
        ({"result": {"type": "WARN"}}, "unknown assertion result type 'WARN'"),
        ({"result": "FAILURE"}, "result must be an object"),
    ],
)
def test_bad_events_raise_invalid_run_naming_the_field(change: dict[str, Any], message: str) -> None:
    raw = {**event(type="SUCCESS"), **change}
    with pytest.raises(InvalidRun, match=message):
        run_from_event(raw)


def test_invalid_run_is_a_value_error_and_rejects_non_objects() -> None:
    with pytest.raises(ValueError, match="must be an object"):
        run_from_event([])  # type: ignore[arg-type]


def test_json_round_trip_and_its_errors() -> None:
    run = AssertionRun(A, -5, ResultType.ERROR, DBT, "", None)
    assert AssertionRun.from_json(run.to_json()) == run
    assert list(run.to_json()) == sorted(run.to_json())
    with pytest.raises(InvalidRun, match="stored run"):
        AssertionRun.from_json({"assertion": A})
    with pytest.raises(InvalidRun, match="failed_rows must be an int"):
        AssertionRun.from_json({**run.to_json(), "failed_rows": "3"})


def test_operation_time_is_last_updated_else_the_event_time() -> None:
    from pareis.core.runs import operation_time

    assert operation_time({"timestampMillis": 2_000, "lastUpdatedTimestamp": 1_500}) == 1_500
    assert operation_time({"timestampMillis": 2_000}) == 2_000
    assert operation_time({"timestampMillis": 2_000, "lastUpdatedTimestamp": 0}) == 2_000  # 0: AuditStamp default
    assert operation_time({"operationType": "INSERT"}) is None
    with pytest.raises(InvalidRun):
        operation_time([])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("severity", "setting", "warning"),
    [
        ("LOW", False, True),
        ("LOW", True, False),
        ("MEDIUM", False, False),
        ("HIGH", False, False),
        (None, False, False),
    ],
)
def test_only_a_low_severity_failure_is_a_warning_unless_configured(
    severity: str | None, setting: bool, warning: bool
) -> None:
    result = {"type": "FAILURE", **({"severity": severity} if severity else {})}
    run = run_from_event(event(**result), open_on_low_severity=setting)
    assert (run.severity, run.warning, run.fails) == (severity, warning, not warning)
    assert run_from_event(event(type="SUCCESS", severity="LOW")).warning is False


def test_severity_and_warning_are_checked() -> None:
    with pytest.raises(InvalidRun, match="unknown result severity 'CRITICAL'"):
        run_from_event(event(type="FAILURE", severity="CRITICAL"))
    with pytest.raises(InvalidRun, match="only a FAILURE of severity LOW is a warning"):
        AssertionRun(A, 1, ResultType.FAILURE, DBT, severity="HIGH", warning=True)
    run = run_from_event(event(type="FAILURE", severity="LOW"))
    assert list(run.to_json()) == sorted(run.to_json())
    with pytest.raises(InvalidRun, match="only a FAILURE of severity LOW is a warning"):
        AssertionRun.from_json({**run.to_json(), "warning": "yes"})
