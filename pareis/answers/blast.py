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
    """The blast radius of ``assertion`` (or of the columns / dataset it was asked for); ``missing``, what the index
    lacks to answer more (a dataset known without a schema or lineage), in the JSON only when there is any."""

    assertion: str | None
    radius: BlastRadius
    missing: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"assertion": self.assertion, "blast": self.radius.to_json()}
        if self.missing:
            out["missing"] = list(self.missing)
        return out


DATASET_ASPECTS = (
    "datasetProperties",
    "schemaMetadata",
    "upstreamLineage",
    "siblings",
    "datasetProfile",
    "status",
    "deprecation",
    "ownership",
)
"""The aspects of a dataset whose record says the metadata holds it, whatever facts they contributed."""


def blast(
    sources: Sources, *, assertion: str | None = None, columns: Sequence[str] = (), dataset: str | None = None
) -> BlastAnswer:
    """The blast radius of exactly one of: a failing ``assertion``, failing ``columns``, a whole ``dataset``.

    Raises :class:`CannotEvaluate` for an unknown assertion, column or dataset (named as unknown; a removed
    dataset and its columns are unknown alike, and say so), or when not exactly one subject is given.
    """
    from pareis.core.blast import UnknownAssertion, blast_radius
    from pareis.core.graph import Memo

    if sum((assertion is not None, bool(columns), dataset is not None)) != 1:
        raise CannotEvaluate("give --assertion URN, --column URN or --dataset URN (one of them)")
    view = Memo(sources.lineage)
    missing: tuple[str, ...] = ()
    try:
        if assertion is not None:
            radius = blast_radius(view, assertions=[assertion])
            radius = replace(radius, failed_rows=latest_failed_rows(sources.runs, assertion))
        elif dataset is not None:
            require_dataset(view, sources.runs, dataset)
            radius = blast_radius(view, datasets=[dataset])
            if not linked(view, dataset):
                missing = (f"{dataset} has no schema and no lineage in the index: nothing is known downstream of it",)
        else:
            radius = blast_radius(view, columns=[known_column(view, c) for c in columns])
    except UnknownAssertion as exc:
        raise CannotEvaluate(f"unknown assertion {assertion} (no assertionInfo in the index)") from exc
    return BlastAnswer(assertion, radius, missing)


def require_dataset(view: LineageView, runs: RunHistory, dataset: str) -> None:
    """CannotEvaluate unless ``dataset`` is known (:func:`known_dataset`); a removed one is unknown, and said so."""
    from pareis.core.graph import memoised

    if memoised(view).removed([dataset]):
        raise CannotEvaluate(f"unknown dataset {dataset}: it is removed (status.removed)")
    if not dataset.startswith("urn:li:dataset:") or not known_dataset(view, runs, dataset):
        raise CannotEvaluate(f"unknown dataset {dataset} (not in the index)")


def known_dataset(view: LineageView, runs: RunHistory, dataset: str) -> bool:
    """Whether the index or the run history knows ``dataset``: a schema, lineage either way, siblings, a feature
    or run reading it, an assertion on it, an attribute, a recorded run, or any record of it (it was ingested,
    without lineage). A soft-deleted dataset is unknown."""
    from pareis.core.graph import memoised

    memo = memoised(view)
    if memo.removed([dataset]):
        return False
    if linked(memo, dataset) or memo.attributes([dataset])[dataset] or runs.assertions_of(dataset):
        return True
    return memo.recorded(dataset, DATASET_ASPECTS)


def linked(view: LineageView, dataset: str) -> bool:
    """Whether the index holds a schema, lineage, a sibling, a reader, a feature or an assertion of ``dataset``."""
    from pareis.core.graph import Query, Rel

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
    return any(answer[dataset] for answer in view.lookup(questions))


def known_column(view: LineageView, column: str) -> str:
    """The canonical URN of ``column`` if the index knows it (in its dataset's schema, in column lineage, as a
    feature source or an assertion's field); CannotEvaluate otherwise — and for a column of a removed dataset,
    which is out of the graph with it (DESIGN §2.1)."""
    from pareis.core.fieldpath import canonical_column, parent_of
    from pareis.core.graph import Query, Rel, memoised

    try:
        urn = canonical_column(column)
    except ValueError as exc:
        raise CannotEvaluate(f"{column!r} is not a schemaField URN") from exc
    parent = parent_of(urn)
    memo = memoised(view)
    if memo.removed([parent]):
        raise CannotEvaluate(f"unknown column {column}: its dataset {parent} is removed (status.removed)")
    answers = memo.lookup(
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
    """The failing-row count of ``assertion``'s latest failing run (a warning is not one); None when it never
    failed or the count is unknown."""
    failures = [r for r in runs.runs(assertion) if r.fails]
    return failures[-1].failed_rows if failures else None
