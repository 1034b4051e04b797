"""Assertion runs: one ``assertionRunEvent`` as a value (DESIGN §2.2 item 6, §2.3; reference §7.2).

A run is identified by (assertion, timestamp_ms): DataHub's timeseries store keys its points by the timestamp,
so a re-sent event with the same timestamp is the same run. Only SUCCESS and FAILURE runs say anything about
the data (:attr:`ResultType.counts`); ERROR and INIT runs are kept in the history but never count (DataHub's dbt
source writes a dbt runtime error as ERROR, reference §15).

A FAILURE whose ``result.severity`` is LOW (dbt's ``warn``) is a *warning* (:attr:`AssertionRun.warning`) unless
the setting ``incidents.open_on_low_severity`` is on: it counts like any FAILURE in pass rates and freshness, but
opens no incident and keeps none open (:attr:`AssertionRun.fails`). Which runs are warnings is decided once, where
an event becomes a run (:func:`run_from_event`), and travels with the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeGuard


class InvalidRun(ValueError):
    """An assertion run event, or its stored form, that is not a valid run; the message says which field."""


class ResultType(StrEnum):
    """``AssertionResult.type``."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    ERROR = "ERROR"
    INIT = "INIT"

    @property
    def counts(self) -> bool:
        """True for SUCCESS and FAILURE: the only results that say whether the data is good."""
        return self in (ResultType.SUCCESS, ResultType.FAILURE)


SEVERITIES = ("LOW", "MEDIUM", "HIGH")
"""``AssertionResultSeverity``: how bad a FAILURE is (null allowed; MEDIUM is DataHub's documented default)."""


@dataclass(frozen=True)
class AssertionRun:
    """One run of one assertion against one dataset (its assertee, as DataHub wrote it)."""

    assertion: str
    timestamp_ms: int
    result: ResultType
    dataset: str
    run_id: str = ""
    failed_rows: int | None = None
    severity: str | None = None
    """``result.severity`` as DataHub wrote it (one of :data:`SEVERITIES`), None when absent."""
    warning: bool = False
    """A FAILURE of severity LOW that opens no incident (see the module docstring)."""

    def __post_init__(self) -> None:
        if not self.assertion:
            raise InvalidRun("assertion run without an assertion urn")
        if not self.dataset:
            raise InvalidRun(f"run of {self.assertion} without an assertee dataset")
        if not _is_int(self.timestamp_ms):
            raise InvalidRun(f"run of {self.assertion}: timestamp_ms must be an int, got {self.timestamp_ms!r}")
        if not isinstance(self.result, ResultType):
            raise InvalidRun(f"run of {self.assertion}: result must be a ResultType, got {self.result!r}")
        if self.failed_rows is not None and not _is_int(self.failed_rows):
            raise InvalidRun(f"run of {self.assertion}: failed_rows must be an int, got {self.failed_rows!r}")
        if self.severity is not None and self.severity not in SEVERITIES:
            raise InvalidRun(f"run of {self.assertion}: unknown severity {self.severity!r}")
        if self.warning is not False and (
            self.warning is not True or self.result is not ResultType.FAILURE or self.severity != "LOW"
        ):
            raise InvalidRun(f"run of {self.assertion}: only a FAILURE of severity LOW is a warning")

    @property
    def key(self) -> tuple[str, int]:
        """The run's identity: (assertion, timestamp_ms)."""
        return (self.assertion, self.timestamp_ms)

    @property
    def counts(self) -> bool:
        return self.result.counts

    @property
    def fails(self) -> bool:
        """A FAILURE that makes its dataset failing (DESIGN §2.3): any FAILURE but a warning."""
        return self.result is ResultType.FAILURE and not self.warning

    def to_json(self) -> dict[str, Any]:
        """Sorted keys; ``severity`` and ``warning`` only when set (a run without them has the same JSON as before
        they existed)."""
        out: dict[str, Any] = {
            "assertion": self.assertion,
            "dataset": self.dataset,
            "failed_rows": self.failed_rows,
            "result": self.result.value,
            "run_id": self.run_id,
        }
        if self.severity is not None:
            out["severity"] = self.severity
        out["timestamp_ms"] = self.timestamp_ms
        if self.warning:
            out["warning"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AssertionRun:
        """Inverse of :meth:`to_json`; :class:`InvalidRun` on a missing or mistyped field."""
        try:
            return cls(
                assertion=data["assertion"],
                timestamp_ms=data["timestamp_ms"],
                result=_result_type(data["result"]),
                dataset=data["dataset"],
                run_id=data.get("run_id") or "",
                failed_rows=data.get("failed_rows"),
                severity=data.get("severity"),
                warning=data.get("warning", False),
            )
        except (KeyError, TypeError) as error:
            raise InvalidRun(f"stored run {data!r}: {error!r}") from error


def run_from_event(event: Mapping[str, Any], *, open_on_low_severity: bool = False) -> AssertionRun:
    """The run an ``assertionRunEvent`` aspect (its JSON, as on the change log) describes.

    A run without ``result`` is an INIT run (the assertion exists but was not evaluated). A FAILURE of severity LOW
    is a warning unless ``open_on_low_severity`` (the setting ``incidents.open_on_low_severity``). Raises
    :class:`InvalidRun` when ``assertionUrn``, ``asserteeUrn`` or an integer ``timestampMillis`` is missing, or
    the result type or severity is not one DataHub defines.
    """
    if not isinstance(event, Mapping):
        raise InvalidRun(f"assertionRunEvent must be an object, got {type(event).__name__}")
    assertion = event.get("assertionUrn")
    dataset = event.get("asserteeUrn")
    timestamp = event.get("timestampMillis")
    if not isinstance(assertion, str) or not isinstance(dataset, str):
        raise InvalidRun("assertionRunEvent without assertionUrn or asserteeUrn")
    if not _is_int(timestamp):
        raise InvalidRun(f"assertionRunEvent of {assertion}: timestampMillis must be an int, got {timestamp!r}")
    result = event.get("result")
    if result is None:
        return AssertionRun(assertion, timestamp, ResultType.INIT, dataset, str(event.get("runId") or ""))
    if not isinstance(result, Mapping):
        raise InvalidRun(f"assertionRunEvent of {assertion}: result must be an object")
    kind = _result_type(result.get("type"))
    severity = result.get("severity")
    if severity is not None and severity not in SEVERITIES:
        raise InvalidRun(f"assertionRunEvent of {assertion}: unknown result severity {severity!r}")
    return AssertionRun(
        assertion=assertion,
        timestamp_ms=timestamp,
        result=kind,
        dataset=dataset,
        run_id=str(event.get("runId") or ""),
        failed_rows=failed_rows_of(result),
        severity=severity,
        warning=kind is ResultType.FAILURE and severity == "LOW" and not open_on_low_severity,
    )


OPERATION_ASPECT = "operation"
"""The timeseries aspect saying a dataset's data changed (``operationType`` INSERT, UPDATE, …; DataHub's circuit
breaker compares it with the assertions' latest runs, and so does the gate, DESIGN §2.4 check 4)."""


def operation_time(event: Mapping[str, Any]) -> int | None:
    """When an ``operation`` aspect says its dataset changed: ``lastUpdatedTimestamp``, else ``timestampMillis``.

    None when neither is a positive integer (nothing usable: the caller ignores the event). Raises
    :class:`InvalidRun` when the aspect is not an object.
    """
    if not isinstance(event, Mapping):
        raise InvalidRun(f"operation must be an object, got {type(event).__name__}")
    for name in ("lastUpdatedTimestamp", "timestampMillis"):
        value = event.get(name)
        if _is_int(value) and value > 0:
            return value
    return None


def failed_rows_of(result: Mapping[str, Any]) -> int | None:
    """The failing-row count of an ``AssertionResult``: ``unexpectedCount``, else ``nativeResults["failures"]``.

    dbt writes the count only as the string ``nativeResults["failures"]`` (reference §7.3). A value that is not
    a whole number of ASCII digits (dbt's ``"None"``, an empty string, ``"--5"``, ``"²"``, a negative count) means
    the count is unknown: None, not an error, because the run's verdict stays valid without it.
    """
    count = result.get("unexpectedCount")
    if _is_int(count) and count >= 0:
        return int(count)
    native = result.get("nativeResults")
    if isinstance(native, Mapping):
        failures = native.get("failures")
        if _is_int(failures) and failures >= 0:
            return int(failures)
        if isinstance(failures, str):
            text = failures.strip()
            if text.isascii() and text.isdigit():  # str.isdigit alone admits "²", which int() refuses
                return int(text)
    return None


def _result_type(value: object) -> ResultType:
    if isinstance(value, str) and value in ResultType.__members__:
        return ResultType(value)
    raise InvalidRun(f"unknown assertion result type {value!r}")


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
