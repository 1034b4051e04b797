"""The newest time a set of metadata speaks of: what a snapshot (``--metadata`` files) is judged at by default.

Files are a picture of the past: judged against the wall clock, every assertion run in them is stale and every
reliability score collapses (a run 426 days old is not fresh). So a surface that reads files evaluates them at the
newest time they record — the latest assertion run, dataset change (``operation``) or model training — unless it
is told a time (``--at``).
"""

from __future__ import annotations

from pareis.answers.sources import Sources

END_OF_TIME_MS = 2**62
"""Later than any time the metadata holds: "the latest at or before" this is simply the latest."""


def newest_ms(sources: Sources) -> int | None:
    """The latest assertion run, dataset operation or model training time in ``sources``; None when there is none
    (no runs, no operations, no model with a known training time)."""
    from pareis.core import catalog
    from pareis.core.graph import Memo

    datasets = sources.runs.datasets()
    by_dataset = sources.runs.assertions_by_dataset(datasets)
    assertions = sorted({a for names in by_dataset.values() for a in names})
    latest = sources.runs.latest_of(assertions, END_OF_TIME_MS).values()
    times = [run.timestamp_ms for run, _ in latest if run is not None]
    times += sources.runs.last_operations(datasets, END_OF_TIME_MS).values()
    models = sources.lineage.entities("mlModelProperties")
    if models:
        trained = catalog.model_versions(Memo(sources.lineage), models).values()
        times += [v.trained_at_ms for v in trained if v.trained_at_ms is not None]
    return max(times, default=None)
