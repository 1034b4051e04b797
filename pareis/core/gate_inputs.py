"""What the retrain gate's checks read (DESIGN §2.4): one evaluated model version's features, source columns,
upstream datasets and assertions with their latest runs, dataset changes, the incidents reaching it and the
reliability scores — gathered by :mod:`pareis.answers.gate`, judged by :mod:`pareis.core.gate`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pareis.core.contamination import ModelVersion, Verdict
from pareis.core.runs import AssertionRun


@dataclass(frozen=True)
class FeatureState:
    """A feature the evaluated version lists.

    ``known``: the index has its definition (``mlFeatureProperties``) and it is not removed; ``removed``: it is
    removed (``status.removed``). ``sources``: its declared sources; ``unknown_sources``: those the index knows
    nothing about; ``removed_sources``: those that are removed.
    """

    urn: str
    known: bool
    sources: tuple[str, ...] = ()
    unknown_sources: tuple[str, ...] = ()
    removed: bool = False
    removed_sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceColumn:
    """A column a feature links to directly (a schemaField source, or a dataset source's same-name column).

    ``schema_known``: its dataset's schema is indexed; ``present``: the column is in that schema;
    ``asserted_by``: the assertions naming it (or its sibling twin).
    """

    urn: str
    schema_known: bool
    present: bool
    asserted_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpstreamAssertion:
    """An assertion on the version's upstream with its latest runs at or before ``at``.

    ``datasets``: the datasets it checks; ``columns``: the upstream columns it names (empty: dataset-level).
    ``latest``: the latest run of any kind; ``latest_counting``: the latest SUCCESS or FAILURE run.
    """

    urn: str
    datasets: tuple[str, ...]
    columns: tuple[str, ...] = ()
    latest: AssertionRun | None = None
    latest_counting: AssertionRun | None = None


@dataclass(frozen=True)
class IncidentReach:
    """An incident (of the run history up to ``at``) that reaches the evaluated version.

    ``healed_ms`` is None when the incident is still active at ``at``. ``in_blast``: the version itself is in its
    blast radius (otherwise another version of its group is, which the incidents role blocks all the same while
    the incident is active). ``verdict``: the version's §2.3 verdict in it; ``safe_rollback``: its group's.
    """

    urn: str
    dataset: str
    first_failure_ms: int
    healed_ms: int | None
    in_blast: bool
    verdict: Verdict
    safe_rollback: ModelVersion | None = None

    @property
    def active(self) -> bool:
        return self.healed_ms is None


@dataclass(frozen=True)
class GateInputs:
    """Everything the ten checks read, gathered for one evaluated version at ``at_ms``.

    ``upstream_datasets``: the datasets of the upstream columns and the table-precision upstream datasets.
    ``deprecated``: the upstream datasets and listed features that are deprecated. ``modified_ms``: per upstream
    dataset, the latest ``operation`` time at or before ``at`` (absent when none is known). ``scores``: the
    reliability score (0–100) of each upstream dataset.
    """

    model: str
    evaluated: str
    is_group: bool
    at_ms: int
    features: tuple[FeatureState, ...] = ()
    source_columns: tuple[SourceColumn, ...] = ()
    upstream_datasets: tuple[str, ...] = ()
    deprecated: tuple[str, ...] = ()
    assertions: tuple[UpstreamAssertion, ...] = ()
    modified_ms: Mapping[str, int] = field(default_factory=dict)
    incidents: tuple[IncidentReach, ...] = ()
    scores: Mapping[str, float] = field(default_factory=dict)
