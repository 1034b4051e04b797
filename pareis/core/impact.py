"""What a blast radius is: the affected columns, datasets, features and models (DESIGN §2.2).

These are the values :func:`pareis.core.blast.blast_radius` returns and the incident engine consumes. Their
``to_json`` forms are the CLI's JSON contract: keys sorted by the caller's encoder, lists sorted here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

Precision = Literal["column", "table"]


class Severity(StrEnum):
    """Model and incident severity; ordered NONE < LOW < MEDIUM < HIGH."""

    NONE = "NONE"
    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @property
    def priority(self) -> int:
        """DataHub incident priority: HIGH → 1, MEDIUM → 2, LOW and NONE → 3."""
        return {Severity.HIGH: 1, Severity.MEDIUM: 2}.get(self, 3)


_RANK = {Severity.NONE: 0, Severity.LOW: 1, Severity.MEDIUM: 2, Severity.HIGH: 3}


def severity_of(ratio: float | None, precision: Precision) -> Severity:
    """LOW below 0.25, MEDIUM in [0.25, 0.5), HIGH from 0.5, at table precision, or without a ratio."""
    if precision == "table" or ratio is None or ratio >= 0.5:
        return Severity.HIGH
    if ratio >= 0.25:
        return Severity.MEDIUM
    return Severity.LOW


def ratio_text(ratio: float | None) -> str:
    """A ratio as the surfaces print it: two decimals, ``—`` when the model lists no features."""
    return "—" if ratio is None else f"{ratio:.2f}"


@dataclass(frozen=True)
class ModelImpact:
    """One affected model version and how much of its input is poisoned."""

    urn: str
    group: str | None
    poisoned_features: tuple[str, ...]
    total_features: int
    precision: Precision

    @property
    def ratio(self) -> float | None:
        """poisoned / total features, at either precision; None when the model lists no features (DESIGN §2.2)."""
        if self.total_features == 0:
            return None
        return len(self.poisoned_features) / self.total_features

    @property
    def severity(self) -> Severity:
        return severity_of(self.ratio, self.precision)

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "group": self.group,
            "poisoned_features": sorted(self.poisoned_features),
            "total_features": self.total_features,
            "ratio": None if self.ratio is None else round(self.ratio, 6),
            "severity": self.severity.value,
            "precision": self.precision,
        }


@dataclass(frozen=True)
class BlastRadius:
    """The answer to "what does this failure poison?" for one set of failing columns."""

    failing_columns: tuple[str, ...]
    origin_columns: tuple[str, ...]
    columns: tuple[str, ...]
    datasets: tuple[str, ...]
    features: tuple[str, ...]
    models: tuple[ModelImpact, ...] = field(default_factory=tuple)
    failed_rows: int | None = None
    table_features: tuple[str, ...] = ()
    """The affected features linked only at table precision (a dataset source whose schema lacks their name, or a
    dataset failing as a whole): those whose models get HIGH whatever their ratio."""
    incomplete: tuple[str, ...] = ()
    """Datasets of the radius whose lineage is only partly indexed (an entry of their lineage aspect was
    malformed and dead-lettered): the radius may be larger than it shows."""

    @property
    def severity(self) -> Severity:
        """The highest of its models' severities (NONE without a model)."""
        worst = Severity.NONE
        for m in self.models:  # a loop, not max(key=...): read several times per incident
            found = m.severity
            if found is Severity.HIGH:
                return found
            if found.rank > worst.rank:
                worst = found
        return worst

    def to_json(self) -> dict[str, Any]:
        return {
            "failing_columns": sorted(self.failing_columns),
            "origin_columns": sorted(self.origin_columns),
            "columns": sorted(self.columns),
            "datasets": sorted(self.datasets),
            "features": sorted(self.features),
            "models": [m.to_json() for m in sorted(self.models, key=lambda m: m.urn)],
            "severity": self.severity.value,
            "failed_rows": self.failed_rows,
            "table_precision_features": sorted(self.table_features),
            **({"lineage_incomplete": sorted(self.incomplete)} if self.incomplete else {}),
        }
