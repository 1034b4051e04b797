"""DESIGN §2.3, the blind window: failing status, incidents, last success, healing, failed rows."""

from __future__ import annotations

import random

import pytest

from pareis.core.runs import AssertionRun, ResultType
from pareis.core.window import IncidentWindow, counting_runs, failing_assertions_at, incidents

S, F, E, INIT = ResultType.SUCCESS, ResultType.FAILURE, ResultType.ERROR, ResultType.INIT
DS = "urn:li:dataset:(urn:li:dataPlatform:snowflake,shop.orders,PROD)"
A, B, C = "urn:li:assertion:a", "urn:li:assertion:b", "urn:li:assertion:c"


def run(assertion: str, ts: int, result: ResultType, rows: int | None = None) -> AssertionRun:
    return AssertionRun(assertion, ts, result, DS, run_id=f"r{ts}", failed_rows=rows)


def only(runs: list[AssertionRun]) -> IncidentWindow:
    found = incidents(runs)
    assert len(found) == 1, found
    return found[0]


def test_failing_at_t_means_some_assertion_has_failure_as_latest_run_at_or_before_t() -> None:
    runs = [run(A, 100, S), run(A, 200, F), run(B, 150, F), run(B, 300, S), run(A, 400, S)]
    assert failing_assertions_at(runs, 99) == ()
    assert failing_assertions_at(runs, 149) == ()
    assert failing_assertions_at(runs, 150) == (B,)
    assert failing_assertions_at(runs, 200) == (A, B)
    assert failing_assertions_at(runs, 300) == (A,)
    assert failing_assertions_at(runs, 399) == (A,)
    assert failing_assertions_at(runs, 400) == ()


def test_one_assertion_fails_then_heals() -> None:
    window = only([run(A, 100, S), run(A, 200, F, 7), run(A, 300, F, 9), run(A, 400, S), run(A, 500, S)])
    assert (window.last_success_ms, window.first_failure_ms, window.healed_ms) == (100, 200, 400)
    assert window.assertions == (A,)
    assert not window.is_open
    assert window.failed_rows == 9  # the latest FAILURE run's count, not the sum over runs
    assert [r.timestamp_ms for r in window.runs] == [200, 300, 400]  # the healing run closes the timeline


def test_still_failing_incident_is_open() -> None:
    window = only([run(A, 100, S), run(A, 200, F)])
    assert window.healed_ms is None
    assert window.is_open
    assert window.contains(200) and window.contains(10**12) and not window.contains(199)


def test_never_passed_assertion_has_no_last_success() -> None:
    assert only([run(A, 200, F), run(A, 300, S)]).last_success_ms is None


def test_one_never_passed_assertion_makes_last_success_unknown_for_the_incident() -> None:
    window = only([run(A, 100, S), run(A, 200, F), run(B, 250, F), run(A, 300, S), run(B, 400, S)])
    assert window.assertions == (A, B)
    assert window.last_success_ms is None


def test_two_assertions_failing_at_different_times_are_one_incident() -> None:
    runs = [
        run(A, 100, S),
        run(B, 150, S),
        run(A, 200, F, 5),
        run(B, 300, F, 6),
        run(A, 400, S),  # A heals, B still fails: no heal
        run(B, 500, S),
    ]
    window = only(runs)
    assert (window.first_failure_ms, window.healed_ms) == (200, 500)
    assert window.assertions == (A, B)
    assert window.last_success_ms == 100  # min over A (100) and B (150)
    assert window.failed_rows == 11
    assert [r.assertion for r in window.latest_failures] == [A, B]


def test_last_success_is_each_assertions_latest_success_before_the_first_failure() -> None:
    # B passed at 150 but its later success at 250 is inside the incident: only runs before 200 count.
    window = only([run(A, 100, S), run(B, 150, S), run(A, 200, F), run(B, 250, S), run(B, 260, F), run(A, 300, S)])
    assert window.last_success_ms == 100
    assert window.healed_ms is None  # B still fails
    # Assertions that never fail in the incident do not bound the blind window.
    window = only([run(C, 10, S), run(A, 100, S), run(A, 200, F), run(C, 210, S), run(A, 300, S)])
    assert window.assertions == (A,)
    assert window.last_success_ms == 100


def test_a_new_failure_after_healing_is_a_new_incident_with_its_own_window() -> None:
    first, second = incidents([run(A, 100, F, 3), run(A, 200, S), run(A, 300, F), run(A, 310, F)])
    assert (first.first_failure_ms, first.healed_ms, first.last_success_ms, first.failed_rows) == (100, 200, None, 3)
    assert (second.first_failure_ms, second.healed_ms, second.last_success_ms) == (300, None, 200)
    assert second.failed_rows is None  # no count known in this incident; the first one's does not leak


def test_error_and_init_runs_are_ignored() -> None:
    runs = [run(A, 100, S), run(A, 150, E), run(A, 200, F), run(A, 300, E), run(A, 350, INIT), run(A, 400, S)]
    window = only(runs)
    assert (window.last_success_ms, window.first_failure_ms, window.healed_ms) == (100, 200, 400)
    assert all(r.result.counts for r in window.runs)
    # An ERROR alone never opens an incident, and an INIT never heals one.
    assert incidents([run(A, 1, E), run(A, 2, INIT)]) == ()
    assert only([run(A, 1, F), run(A, 2, INIT)]).is_open


def test_simultaneous_success_and_failure_neither_heal_nor_split() -> None:
    # A fails from 100; at 200 A passes while B fails at the very same ms: the dataset never stops failing.
    window = only([run(A, 50, S), run(B, 60, S), run(A, 100, F), run(A, 200, S), run(B, 200, F), run(B, 300, S)])
    assert (window.first_failure_ms, window.healed_ms) == (100, 300)
    assert window.assertions == (A, B)
    assert window.last_success_ms == 50


def test_equal_timestamps_at_the_window_edges() -> None:
    # C passes exactly when A first fails: that success is not "before" the first failure.
    window = only([run(A, 100, S), run(C, 90, S), run(A, 200, F), run(C, 200, S), run(C, 250, F), run(A, 300, S)])
    assert window.first_failure_ms == 200
    assert window.assertions == (A, C)
    assert window.last_success_ms == 90
    # Healing and failing again at the same ms by two assertions: continuous; a heal then a later failure: two.
    healed = incidents([run(A, 100, F), run(A, 200, S), run(B, 201, F)])
    assert [(w.first_failure_ms, w.healed_ms) for w in healed] == [(100, 200), (201, None)]
    assert not healed[0].contains(200) and healed[0].contains(199)


def test_the_result_does_not_depend_on_input_order_or_identical_duplicates() -> None:
    runs = [run(A, 100, S), run(B, 120, S), run(A, 200, F, 4), run(B, 250, F, 1), run(A, 300, S), run(B, 350, S)]
    expected = incidents(runs)
    shuffled = runs * 2
    random.Random(7).shuffle(shuffled)
    assert incidents(shuffled) == expected


def test_two_different_runs_with_one_identity_are_rejected() -> None:
    with pytest.raises(ValueError, match="two different runs"):
        counting_runs([run(A, 100, F), run(A, 100, S)])
    with pytest.raises(ValueError, match="two different runs"):
        incidents([run(A, 100, E), run(A, 100, F)])


def test_failed_rows_sum_known_counts_and_are_none_when_none_known() -> None:
    assert only([run(A, 1, F, 2), run(B, 2, F)]).failed_rows == 2
    assert only([run(A, 1, F), run(B, 2, F)]).failed_rows is None
    assert only([run(A, 1, F, 0)]).failed_rows == 0  # zero is a known count, not "unknown"
    # The latest FAILURE decides, even when it has no count and an earlier one had.
    assert only([run(A, 1, F, 5), run(A, 2, F)]).failed_rows is None


def test_window_json_is_the_contract() -> None:
    window = only([run(B, 5, S), run(A, 6, S), run(B, 10, F, 2), run(A, 11, F, 3)])
    assert window.to_json() == {
        "assertions": [A, B],
        "failed_rows": 5,
        "first_failure_ms": 10,
        "healed_ms": None,
        "last_success_ms": 5,
    }
