"""Reading the exposure index for protect and the gate (DESIGN §2.5, §6): what lies downstream of columns, and the
affected columns of past incidents, from the snapshot the running service keeps (:mod:`pareis.store.exposure`)
instead of walking the lineage per call.

:class:`ExposureReader` is what :func:`pareis.core.protect.survey` calls for the exposure of its columns: one read
of their datasets' entries (the entries are kept for the rest of the computation). When the sources have no index,
or it has published nothing yet, the reader walks (:func:`pareis.core.exposure.exposure`): the same answer, slower.
:attr:`ExposureReader.head` says which snapshot was read and :meth:`ExposureReader.age` how old it is.

:func:`past_incident_columns` lists every incident of the run history (its windows: two batched reads, no analysis)
and takes each one's affected columns from the index when it holds them for exactly that incident's assertions,
else computes its blast radius (:func:`pareis.core.exposure_index.incident_columns`) — the same answer either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pareis.core.exposure_index import IncidentColumns, incident_columns, incident_heads
from pareis.core.graph import Memo
from pareis.store.exposure_reader import ExposureReader

if TYPE_CHECKING:
    from pareis.answers.sources import Sources
    from pareis.core.runs import AssertionRun

__all__ = ["ExposureReader", "past_incident_columns"]


def past_incident_columns(
    sources: Sources, view: Memo, at_ms: int, reader: ExposureReader | None = None
) -> dict[str, frozenset[str]]:
    """Every incident of the run history begun at or before ``at_ms`` → its affected columns (what
    :func:`pareis.answers.reliability.past_incidents` gives, without analysing the incidents)."""
    from pareis.answers.reach import candidates

    found = candidates(view, sources.runs)
    every = set().union(*found.names.values()) if found.names else set()
    by_assertion: dict[str, list[AssertionRun]] = {}
    for r in sources.runs.timeline(every, None) if every else ():
        by_assertion.setdefault(r.assertion, []).append(r)
    timelines = {
        key: sorted((r for a in names for r in by_assertion.get(a, ())), key=lambda r: (r.timestamp_ms, r.assertion))
        for key, names in found.names.items()
    }
    heads = [h for h in incident_heads(timelines) if h.first_failure_ms <= at_ms]
    kept: dict[str, IncidentColumns] = {}
    index = reader.index if reader is not None else None
    if index is not None and heads:
        read = index.read([], [h.urn for h in heads])
        if reader is not None and reader.head is not None and read.version != reader.head:
            kept = {}  # the snapshot moved between the reads: compute rather than mix two versions
        else:
            kept = dict(read.incidents)
    out: dict[str, frozenset[str]] = {}
    for h in heads:
        entry = kept.get(h.urn)
        if entry is not None and entry.assertions == h.assertions and entry.dataset == h.dataset:
            out[h.urn] = entry.columns
        else:
            out[h.urn] = incident_columns(view, h).columns
    return out
