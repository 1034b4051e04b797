"""Opening the read side's :class:`~pareis.answers.sources.Sources` (DESIGN §6): the composition root's part.

Three origins, exactly one per call: DataHub file-format files (``metadata``: loaded into in-memory stores with the
lineage and assertions roles' own translation, :mod:`pareis.lineage_loader`), the live Redis index the roles keep
(``redis_url``), or a running DataHub (``datahub_url``: its current aspects and assertion runs read through
acryl-datahub's ``DataHubGraph`` and loaded like files). Failures are translated here, once: an unreadable file or
a value the translation rejects is :class:`~pareis.answers.sources.CannotEvaluate`; Redis or GMS down is
:class:`~pareis.answers.sources.SourceUnavailable`. A Redis source connects lazily: its first read may raise
Retriable/Fatal, which :func:`reading` translates for surfaces that read after opening.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from pareis.answers.sources import CannotEvaluate, Sources, SourceUnavailable
from pareis.datahub.files.metadata_file import MetadataFileError
from pareis.errors import Fatal, Poison, Retriable
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.runs_memory import MemoryRunHistory

if TYPE_CHECKING:
    from datahub.ingestion.graph.client import DataHubGraph

# Each origin's adapters are imported when it is opened, inside its function: a read command (`pareis gate --redis`,
# `pareis analyze --metadata`) then loads only its own — the Redis client and stores, acryl's DataHubGraph, or the
# file loader and acryl's schema classes — as `pareis --help` loads none (pareis/cli.py).


def open_sources(
    *,
    metadata: Sequence[str | os.PathLike[str]] = (),
    redis_url: str | None = None,
    datahub_url: str | None = None,
    token: str | None = None,
) -> Sources:
    """The sources named by exactly one of ``metadata``, ``redis_url``, ``datahub_url`` (CannotEvaluate
    otherwise). The caller closes them."""
    given = sum((bool(metadata), redis_url is not None, datahub_url is not None))
    if given != 1:
        raise CannotEvaluate("give --metadata FILE…, --redis URL or --datahub URL (one of them)")
    if redis_url is not None:
        return redis_sources(redis_url)
    with reading():
        if datahub_url is not None:
            return _gms_sources(datahub_url, token)
        return _file_sources([os.fspath(path) for path in metadata])


def redis_sources(url: str) -> Sources:
    """The live index, run history, incident state, effect ledger (ticket refs) and exposure index in Redis at
    ``url`` (default prefixes); lazy."""
    from pareis.compose.ports import redis_client
    from pareis.store.exposure_redis import RedisExposureIndex
    from pareis.store.incidents_redis import RedisIncidentStore
    from pareis.store.ledger_redis import RedisLedger
    from pareis.store.lineage_redis import RedisLineageStore
    from pareis.store.runs_redis import RedisRunHistory

    try:
        client = redis_client(url)
    except ValueError as exc:
        raise CannotEvaluate(f"bad Redis URL: {exc}") from exc
    return Sources(
        RedisLineageStore(client),
        RedisRunHistory(client),
        RedisIncidentStore(client),
        origin=redacted(url),
        tickets=RedisLedger(client),
        _close=client.close,
        exposure=RedisExposureIndex(client),
    )


@contextmanager
def reading() -> Iterator[None]:
    """Translate what reading sources can raise: bad input → CannotEvaluate, a dependency down →
    SourceUnavailable (Retriable and Fatal are the stores' and GMS's translated errors)."""
    try:
        yield
    except (MetadataFileError, Poison) as exc:
        raise CannotEvaluate(str(exc)) from exc
    except (Retriable, Fatal) as exc:
        raise SourceUnavailable(str(exc)) from exc


def _file_sources(paths: list[str]) -> Sources:
    from pareis.lineage_loader import load_files

    store, history = MemoryLineageStore(), MemoryRunHistory()
    loaded = load_files(store, paths)
    for run in loaded.runs:
        history.record(run)
    for dataset, changed in loaded.operations:
        history.record_operation(dataset, changed)
    return Sources(store, history, None, origin="metadata: " + ", ".join(paths))


def _gms_sources(url: str, token: str | None) -> Sources:
    from pareis.datahub.gms.snapshot import GmsSnapshot
    from pareis.lineage_loader import load_changes

    store, history = MemoryLineageStore(), MemoryRunHistory()
    graph = datahub_graph(url, token)
    try:
        snapshot = GmsSnapshot(graph)
        load_changes(store, snapshot.all_changes())
        for run in snapshot.all_runs():
            history.record(run)
        for dataset, changed in snapshot.all_operations():
            history.record_operation(dataset, changed)
    finally:
        graph.close()
    return Sources(store, history, None, origin=f"datahub: {url}")


def redacted(url: str) -> str:
    """``url`` without its password (URLs name where answers came from; credentials never leave)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def datahub_graph(url: str, token: str | None = None, *, retries: int = 2) -> DataHubGraph:
    """acryl-datahub's ``DataHubGraph`` on GMS at ``url`` (for reads: ``--datahub`` sources, ``pareis bootstrap
    --datahub``), retrying a failed request ``retries`` times with acryl's backoff; the caller closes it. Connects on
    first use."""
    from datahub.ingestion.graph.client import DatahubClientConfig, DataHubGraph

    return DataHubGraph(DatahubClientConfig(server=url, token=token, timeout_sec=30, retry_max_times=retries))
