"""Opening the read side's :class:`~pareis.answers.sources.Sources` (DESIGN §6): the composition root's part.

Three origins, exactly one per call: DataHub file-format files (``metadata``: loaded into in-memory stores with the
lineage and assertions roles' own translation, :mod:`pareis.lineage_loader`), the live Redis index the roles keep
(``redis_url``), or a running DataHub (``datahub_url``: its current aspects and assertion runs read through
acryl-datahub's ``DataHubGraph`` and loaded like files). Failures are translated here, once: an unreadable file or
a value the translation rejects is :class:`~pareis.answers.sources.CannotEvaluate`; Redis or GMS down is
:class:`~pareis.answers.sources.SourceUnavailable`. A Redis source connects lazily (a cluster URL reads the slot
map at once): its first read may raise Retriable/Fatal, which :func:`reading` translates for surfaces that read after
opening. Every read of a Redis source checks first (at most once per :data:`CHECK_EVERY_S`) that its Redis did not
lose data (:mod:`pareis.store.redis_epoch`): answers from a partial index would be wrong, so a loss is
CannotEvaluate, one line naming it and the rebuild.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pareis.answers.sources import CannotEvaluate, Sources, SourceUnavailable
from pareis.config import redact_url
from pareis.datahub.files.metadata_file import MetadataFileError
from pareis.errors import Fatal, Poison, Retriable
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.runs_memory import MemoryRunHistory

if TYPE_CHECKING:
    from datahub.ingestion.graph.client import DataHubGraph

    from pareis.store.redis_epoch import Epoch

# Each origin's adapters are imported when it is opened, inside its function: a read command (`pareis gate --redis`,
# `pareis analyze --metadata`) then loads only its own — the Redis client and stores, acryl's DataHubGraph, or the
# file loader and acryl's schema classes — as `pareis --help` loads none (pareis/cli.py).

StoreT = TypeVar("StoreT")

CHECK_EVERY_S = 1.0
"""How often a long-lived reader (Mission Control, the MCP server) checks its Redis's epoch, at most."""


def open_sources(
    *,
    metadata: Sequence[str | os.PathLike[str]] = (),
    redis_url: str | None = None,
    datahub_url: str | None = None,
    token: str | None = None,
    serving_aliases: Sequence[str] | None = None,
    open_on_low_severity: bool | None = None,
) -> Sources:
    """The sources named by exactly one of ``metadata``, ``redis_url``, ``datahub_url`` (CannotEvaluate
    otherwise). The caller closes them. Unless given, two settings are read here, for every read surface:
    ``datahub.serving_aliases`` (the version aliases taken for serving) and ``incidents.open_on_low_severity``
    (whether a LOW-severity FAILURE read from files or GMS fails or warns; runs in Redis were judged by the
    assertions role as it recorded them)."""
    given = sum((bool(metadata), redis_url is not None, datahub_url is not None))
    if given != 1:
        raise CannotEvaluate("give --metadata FILE…, --redis URL or --datahub URL (one of them)")
    if serving_aliases is None or open_on_low_severity is None:
        from pareis.config import load_settings

        settings = load_settings()
        serving_aliases = settings.datahub.serving_aliases if serving_aliases is None else serving_aliases
        open_on_low_severity = (
            settings.incidents.open_on_low_severity if open_on_low_severity is None else open_on_low_severity
        )
    aliases, low = tuple(serving_aliases), open_on_low_severity
    if redis_url is not None:
        return dataclasses.replace(redis_sources(redis_url), serving_aliases=aliases)
    with reading():
        if datahub_url is not None:
            found = _gms_sources(datahub_url, token, low)
        else:
            found = _file_sources([os.fspath(path) for path in metadata], low)
    return dataclasses.replace(found, serving_aliases=aliases)


def redis_sources(url: str) -> Sources:
    """The live index, run history, incident state, effect ledger (ticket refs), exposure and reach indexes in Redis
    at ``url`` (default prefixes), each read checked against the epoch (see the module docstring); lazy."""
    return _redis_sources(url, check=True)[0]


def redis_target(url: str) -> tuple[Sources, Callable[[], None]]:
    """The stores at ``url`` for a rebuild (``pareis bootstrap``): unchecked (they may have lost data: this is how
    they are rebuilt), and what to call once the rebuild is done (a new epoch, when the old one is lost or there is
    none; :meth:`~pareis.store.redis_epoch.Epoch.rebuilt`)."""
    sources, epoch = _redis_sources(url, check=False)

    def rebuilt() -> None:
        epoch.rebuilt()

    return sources, rebuilt


def _redis_sources(url: str, *, check: bool) -> tuple[Sources, Epoch]:
    from pareis.compose.ports import redis_client
    from pareis.store.exposure_redis import RedisExposureIndex
    from pareis.store.incidents_redis import RedisIncidentStore
    from pareis.store.ledger_redis import RedisLedger
    from pareis.store.lineage_redis import RedisLineageStore
    from pareis.store.reaches_redis import RedisReachStore
    from pareis.store.redis_epoch import Epoch
    from pareis.store.runs_redis import RedisRunHistory

    try:
        client = redis_client(url)
    except ValueError as exc:
        raise CannotEvaluate(f"bad Redis URL: {exc}") from exc
    except (Retriable, Fatal) as exc:  # a cluster URL reads the slot map at once: unreachable, not a cluster
        raise SourceUnavailable(str(exc)) from exc
    epoch = Epoch(client, redact_url(url))
    checked = _Checked(epoch) if check else None

    def store(built: StoreT) -> StoreT:
        # The proxy answers every method of the store it wraps (each call checked first): it is a StoreT in all
        # but name, which a cast states once here.
        return built if checked is None else cast(StoreT, _CheckedStore(built, checked))

    sources = Sources(
        store(RedisLineageStore(client)),
        store(RedisRunHistory(client)),
        store(RedisIncidentStore(client)),
        origin=redact_url(url),
        tickets=store(RedisLedger(client)),
        _close=client.close,
        exposure=store(RedisExposureIndex(client)),
        reaches=store(RedisReachStore(client)),
    )
    return sources, epoch


class _Checked:
    """The epoch check of one Redis source: its first read opens the epoch (writing nothing), later ones check it,
    at most once per :data:`CHECK_EVERY_S`."""

    def __init__(self, epoch: Epoch) -> None:
        self._epoch = epoch
        self._opened = False
        self._last = float("-inf")

    def __call__(self) -> None:
        now = time.monotonic()
        if now - self._last < CHECK_EVERY_S:
            return
        if self._opened:
            self._epoch.check()
        else:
            self._epoch.open(stamp=False)
            self._opened = True
        self._last = now


class _CheckedStore:
    """A store whose every call is preceded by the source's epoch check."""

    def __init__(self, store: object, check: _Checked) -> None:
        self._store = store
        self._check = check

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if not callable(found):
            return found

        def checked(*args: Any, **kwargs: Any) -> Any:
            self._check()
            return found(*args, **kwargs)

        return checked


@contextmanager
def reading() -> Iterator[None]:
    """Translate what reading sources can raise: bad input → CannotEvaluate, a dependency down →
    SourceUnavailable (Retriable and Fatal are the stores' and GMS's translated errors)."""
    from pareis.store.redis_epoch import IndexLost

    try:
        yield
    except (MetadataFileError, Poison, IndexLost) as exc:
        raise CannotEvaluate(str(exc)) from exc
    except (Retriable, Fatal) as exc:
        raise SourceUnavailable(str(exc)) from exc


def _file_sources(paths: list[str], open_on_low_severity: bool) -> Sources:
    from pareis.lineage_loader import load_files

    store, history = MemoryLineageStore(), MemoryRunHistory()
    loaded = load_files(store, paths, open_on_low_severity=open_on_low_severity)
    for run in loaded.runs:
        history.record(run)
    for dataset, changed in loaded.operations:
        history.record_operation(dataset, changed)
    return Sources(store, history, None, origin="metadata: " + ", ".join(paths))


def _gms_sources(url: str, token: str | None, open_on_low_severity: bool) -> Sources:
    from pareis.datahub.gms.snapshot import GmsSnapshot
    from pareis.lineage_loader import load_changes

    store, history = MemoryLineageStore(), MemoryRunHistory()
    graph = datahub_graph(url, token)
    try:
        snapshot = GmsSnapshot(graph, open_on_low_severity=open_on_low_severity)
        load_changes(store, snapshot.all_changes())
        for run in snapshot.all_runs():
            history.record(run)
        for dataset, changed in snapshot.all_operations():
            history.record_operation(dataset, changed)
    finally:
        graph.close()
    return Sources(store, history, None, origin=f"datahub: {url}")


def datahub_graph(url: str, token: str | None = None, *, retries: int = 2) -> DataHubGraph:
    """acryl-datahub's ``DataHubGraph`` on GMS at ``url`` (for reads: ``--datahub`` sources, ``pareis bootstrap
    --datahub``), retrying a failed request ``retries`` times with acryl's backoff; the caller closes it. Connects on
    first use."""
    from datahub.ingestion.graph.client import DatahubClientConfig, DataHubGraph

    return DataHubGraph(DatahubClientConfig(server=url, token=token, timeout_sec=30, retry_max_times=retries))
