"""What a failure poisons (DESIGN §2.2): the blast radius of an assertion, explicit columns or a whole dataset.

The answer's JSON is ``pareis blast --json``'s contract (keys and lists sorted)::

    {"assertion": URN | null,
     "blast": {failing_columns, origin_columns, columns, datasets, features,
               models: [{urn, group, poisoned_features, total_features, ratio, severity, precision}],
               severity, failed_rows, table_precision_features}}

``failed_rows`` is the count of the assertion's latest FAILURE run in the run history (null for columns and
datasets, or when the assertion never failed or its count is unknown). ``table_precision_features``: the affected
features linked only at table precision (their models are HIGH whatever their ratio).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pareis.answers.sources import CannotEvaluate, Sources

if TYPE_CHECKING:
    from pareis.core.graph import LineageView
    from pareis.core.impact import BlastRadius
    from pareis.store.runs import RunHistory


@dataclass(frozen=True)
class BlastAnswer:
    """The blast radius of ``assertion`` (or of the columns / dataset it was asked for)."""

    assertion: str | None
    radius: BlastRadius

    def to_json(self) -> dict[str, Any]:
        return {"assertion": self.assertion, "blast": self.radius.to_json()}


def blast(
    sources: Sources, *, assertion: str | None = None, columns: Sequence[str] = (), dataset: str | None = None
) -> BlastAnswer:
    """The blast radius of exactly one of: a failing ``assertion``, failing ``columns``, a whole ``dataset``.

    Raises :class:`CannotEvaluate` for an unknown assertion, column or dataset (named as unknown), or when not
    exactly one subject is given.
    """
    from pareis.core.blast import UnknownAssertion, blast_radius

    if sum((assertion is not None, bool(columns), dataset is not None)) != 1:
        raise CannotEvaluate("give --assertion URN, --column URN or --dataset URN (one of them)")
    try:
        if assertion is not None:
            radius = blast_radius(sources.lineage, assertions=[assertion])
            radius = replace(radius, failed_rows=latest_failed_rows(sources.runs, assertion))
        elif dataset is not None:
            if not known_dataset(sources.lineage, sources.runs, dataset):
                raise CannotEvaluate(f"unknown dataset {dataset} (not in the index)")
            radius = blast_radius(sources.lineage, datasets=[dataset])
        else:
            radius = blast_radius(sources.lineage, columns=[known_column(sources.lineage, c) for c in columns])
    except UnknownAssertion as exc:
        raise CannotEvaluate(f"unknown assertion {assertion} (no assertionInfo in the index)") from exc
    return BlastAnswer(assertion, radius)


def known_dataset(view: LineageView, runs: RunHistory, dataset: str) -> bool:
    """Whether the index or the run history knows ``dataset``: a schema, lineage either way, siblings, a feature
    or run reading it, an assertion on it, an attribute, or a recorded run. A soft-deleted dataset is unknown."""
    from pareis.core.graph import Memo, Query, Rel

    memo = view if isinstance(view, Memo) else Memo(view)
    if memo.removed([dataset]):
        return False
    questions = [
        Query(Rel.HAS_COLUMN, [dataset]),
        Query(Rel.DATASET, [dataset]),
        Query(Rel.DATASET, [dataset], True),
        Query(Rel.DATASET_COLUMN, [dataset]),
        Query(Rel.SIBLING, [dataset]),
        Query(Rel.SIBLING, [dataset], True),
        Query(Rel.READS, [dataset]),
        Query(Rel.WRITES, [dataset], True),
        Query(Rel.FEATURE_DATASET, [dataset]),
        Query(Rel.ASSERTS, [dataset], True),
    ]
    if any(answer[dataset] for answer in memo.lookup(questions)) or memo.attributes([dataset])[dataset]:
        return True
    return bool(runs.assertions_of(dataset))


def known_column(view: LineageView, column: str) -> str:
    """The canonical URN of ``column`` if the index knows it (in its dataset's schema, in column lineage, as a
    feature source or an assertion's field); CannotEvaluate otherwise."""
    from pareis.core.fieldpath import canonical_column, parent_of
    from pareis.core.graph import Query, Rel

    try:
        urn = canonical_column(column)
    except ValueError as exc:
        raise CannotEvaluate(f"{column!r} is not a schemaField URN") from exc
    parent = parent_of(urn)
    answers = view.lookup(
        [
            Query(Rel.HAS_COLUMN, [parent]),
            Query(Rel.COLUMN, [urn]),
            Query(Rel.COLUMN, [urn], True),
            Query(Rel.FEATURE_SOURCE, [urn]),
            Query(Rel.ASSERTS_COLUMN, [urn], True),
        ]
    )
    schema = answers[0][parent]
    if urn in schema or any(a[urn] for a in answers[1:]):
        return urn
    raise CannotEvaluate(f"unknown column {column} (not in the index)")


def latest_failed_rows(runs: RunHistory, assertion: str) -> int | None:
    """The failing-row count of ``assertion``'s latest FAILURE run; None when it never failed or the count is
    unknown."""
    from pareis.core.runs import ResultType

    failures = [r for r in runs.runs(assertion) if r.result is ResultType.FAILURE]
    return failures[-1].failed_rows if failures else None
