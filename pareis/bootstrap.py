"""What the analysis commands read (moving to :mod:`pareis.compose.sources`); the rest of the composition root is
:mod:`pareis.compose`."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pareis.store.lineage import LineageStore
    from pareis.store.runs import RunHistory


@dataclass(frozen=True)
class AnalysisSource:
    """What the analysis commands (``blast``, ``analyze``) read: a lineage index and a run history, and how to let
    go of them (``close``)."""

    lineage: LineageStore
    runs: RunHistory
    close: Callable[[], None]


def analysis_source(*, metadata: Sequence[str | os.PathLike[str]] = (), redis_url: str | None = None) -> AnalysisSource:
    """``metadata``: an in-memory index and run history loaded from DataHub file-format files, as the lineage and
    assertions roles would build them (:mod:`pareis.lineage_loader`); ``redis_url``: the live ones the roles keep
    in Redis (default prefixes). Exactly one must be given (ValueError otherwise).

    Raises :class:`~pareis.datahub.metadata_file.MetadataFileError` for an unreadable file. A Redis source
    connects lazily: its errors surface on the first read, as Retriable or Fatal.
    """
    if bool(metadata) == (redis_url is not None):
        raise ValueError("give either metadata files or a Redis URL")
    if redis_url is not None:
        from pareis.compose.ports import redis_client
        from pareis.store.lineage_redis import RedisLineageStore
        from pareis.store.runs_redis import RedisRunHistory

        client = redis_client(redis_url)
        return AnalysisSource(RedisLineageStore(client), RedisRunHistory(client), client.close)
    from pareis.lineage_loader import load_files
    from pareis.store.lineage_memory import MemoryLineageStore
    from pareis.store.runs_memory import MemoryRunHistory

    store, history = MemoryLineageStore(), MemoryRunHistory()
    for run in load_files(store, [os.fspath(path) for path in metadata]).runs:
        history.record(run)
    return AnalysisSource(store, history, lambda: None)
