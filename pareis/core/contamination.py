"""Per-version contamination verdicts and the safe rollback (DESIGN §2.3).

A version is CONTAMINATED when it is itself in the blast radius and was trained strictly inside
(``last_success_ms``, ``healed_ms``): no ``healed_ms`` means the incident is still open (no upper bound); no
``last_success_ms`` means the data was never known good, so every version trained before the heal is suspect.
A version outside the blast radius is CLEAN whatever its training time; one inside it whose training time is
unknown is UNKNOWN. The safe rollback of a group is its newest CLEAN version trained at or before
``last_success_ms`` (None when there is none, or no ``last_success_ms``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pareis.core.impact import ModelImpact


class Verdict(StrEnum):
    CONTAMINATED = "CONTAMINATED"
    CLEAN = "CLEAN"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class ModelVersion:
    """One registered model version (an ``mlModel``), as the lineage store knows it.

    ``group``: its model group (None for a model in no group); ``version``: its version label (MLflow's
    ``versionProperties.version``); ``trained_at_ms``: see :func:`trained_at`, None when unknown.
    """

    urn: str
    group: str | None
    version: str | None
    trained_at_ms: int | None

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "trained_at_ms": self.trained_at_ms, "urn": self.urn, "version": self.version}


def trained_at(run_started_ms: int | None, created_ms: int | None, version_ms: int | None = None) -> int | None:
    """A version's training time: its training run's start (``dataProcessInstanceProperties.created``), else
    ``mlModelProperties.created``, else the ``versionProperties`` timestamp; None when none is known.

    A time of 0 or less is unknown (0 is DataHub's AuditStamp default, not 1970): it is skipped like an absent one.
    """
    for candidate in (run_started_ms, created_ms, version_ms):
        if known_time(candidate):
            return candidate
    return None


def known_time(ms: int | None) -> bool:
    """Whether ``ms`` is a real time: present and positive (DESIGN §2.3)."""
    return ms is not None and ms > 0


def verdict(version: ModelVersion, in_blast: bool, last_success_ms: int | None, healed_ms: int | None) -> Verdict:
    """The §2.3 verdict of one version for one incident."""
    if not in_blast:
        return Verdict.CLEAN
    trained = version.trained_at_ms
    if trained is None or not known_time(trained):
        return Verdict.UNKNOWN
    after_good = last_success_ms is None or last_success_ms < trained
    before_heal = healed_ms is None or trained < healed_ms
    return Verdict.CONTAMINATED if after_good and before_heal else Verdict.CLEAN


@dataclass(frozen=True)
class VersionVerdict:
    version: ModelVersion
    in_blast: bool
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {**self.version.to_json(), "in_blast": self.in_blast, "verdict": self.verdict.value}


@dataclass(frozen=True)
class GroupContamination:
    """The verdicts of every known version of one affected group, oldest first, and its safe rollback.

    ``group`` is the model group's URN, or the model's own URN for a model in no group.
    """

    group: str
    versions: tuple[VersionVerdict, ...]
    safe_rollback: ModelVersion | None

    @property
    def contaminated(self) -> tuple[ModelVersion, ...]:
        return tuple(v.version for v in self.versions if v.verdict is Verdict.CONTAMINATED)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "safe_rollback": self.safe_rollback.to_json() if self.safe_rollback else None,
            "versions": [v.to_json() for v in self.versions],
        }


def contamination(
    affected: Iterable[ModelImpact],
    versions: Mapping[str, Sequence[ModelVersion]],
    last_success_ms: int | None,
    healed_ms: int | None,
) -> tuple[GroupContamination, ...]:
    """Verdicts for every version of every group an affected model belongs to, sorted by group.

    ``versions`` maps a group URN (or, for a model in no group, the model URN) to all its known versions. An
    affected model the mapping does not list is evaluated anyway, with an unknown training time.
    """
    in_blast: dict[str, set[str]] = {}
    for model in affected:
        in_blast.setdefault(model.group or model.urn, set()).add(model.urn)
    result = []
    for group in sorted(in_blast):
        known = {v.urn: v for v in versions.get(group, ())}
        for urn in in_blast[group] - known.keys():
            known[urn] = ModelVersion(urn=urn, group=None if urn == group else group, version=None, trained_at_ms=None)
        verdicts = tuple(
            VersionVerdict(
                v, v.urn in in_blast[group], verdict(v, v.urn in in_blast[group], last_success_ms, healed_ms)
            )
            for v in sorted(known.values(), key=age)
        )
        result.append(GroupContamination(group, verdicts, safe_rollback(verdicts, last_success_ms)))
    return tuple(result)


def safe_rollback(verdicts: Iterable[VersionVerdict], last_success_ms: int | None) -> ModelVersion | None:
    """The newest CLEAN version trained at or before ``last_success_ms``; ties go to the higher version label."""
    if last_success_ms is None:
        return None
    candidates = [
        v.version
        for v in verdicts
        if v.verdict is Verdict.CLEAN
        and known_time(v.version.trained_at_ms)
        and (v.version.trained_at_ms or 0) <= last_success_ms
    ]
    return max(candidates, key=age, default=None)


def age(version: ModelVersion) -> tuple[int, int, tuple[int, int | str], str]:
    """Sort key, oldest first: unknown training times last, then by training time, version label, URN."""
    label = version.version or ""
    number: tuple[int, int | str] = (0, int(label)) if label.isdigit() else (1, label)
    known = 0 if version.trained_at_ms is not None else 1
    return (known, version.trained_at_ms or 0, number, version.urn)
