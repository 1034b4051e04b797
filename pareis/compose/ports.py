"""Every role's ports as one value, built in one of two ways: in process memory, or on Redis.

A role's pipeline (:mod:`pareis.compose.roles`) takes a :class:`Ports` and uses the ports it needs: given ones (the
demo, tests), or :meth:`Ports.on_redis` built by a role's own process (one Redis client per role, as the pods run
them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar
from urllib.parse import urlsplit

import redis
from redis.cluster import RedisCluster

from pareis.compose.datahub import datahub_writer
from pareis.config import Settings, redact_url
from pareis.contracts.records import Message, OutRecord
from pareis.datahub.writes.writer import DatahubWriter, MemoryWriter
from pareis.kafka.role import Check, Decoder, Handler, Pipeline
from pareis.store.exposure import ExposureIndex, MemoryExposureIndex
from pareis.store.exposure_redis import RedisExposureIndex
from pareis.store.gates import GateLedger, MemoryGateLedger
from pareis.store.gates_redis import RedisGateLedger
from pareis.store.incidents import IncidentStore
from pareis.store.incidents_memory import MemoryIncidentStore
from pareis.store.incidents_redis import RedisIncidentStore
from pareis.store.journal import MemoryStepJournal, StepJournal
from pareis.store.journal_redis import RedisStepJournal
from pareis.store.ledger import EffectLedger, MemoryLedger
from pareis.store.ledger_redis import RedisLedger
from pareis.store.lineage import LineageStore
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from pareis.store.reaches import MemoryReachStore, ReachStore
from pareis.store.reaches_redis import RedisReachStore
from pareis.store.redis_epoch import Epoch
from pareis.store.redis_errors import translated
from pareis.store.redis_policy import require_sound
from pareis.store.runs import RunHistory
from pareis.store.runs_memory import MemoryRunHistory
from pareis.store.runs_redis import RedisRunHistory
from pareis.store.scores import MemoryScoreLedger, ScoreLedger
from pareis.store.scores_redis import RedisScoreLedger
from pareis.store.watch import MemoryWatchStore, WatchStore
from pareis.store.watch_redis import RedisWatchStore
from pareis.tickets.factory import ticketers_from_settings
from pareis.tickets.port import Ticketer

T = TypeVar("T")


def _nothing() -> None:
    return None


@dataclass
class Ports:
    """The ports of every role.

    ``datahub`` takes Pareis's DataHub writes: the writer of the configured path on Redis (see
    :mod:`pareis.compose.datahub`), a :class:`~pareis.datahub.writes.writer.MemoryWriter` in memory, on either path.
    ``checks`` are the readiness probes of what the ports connect to; ``start`` is the start-up check of it (a
    role refuses to start on an evicting Redis, or one that lost its data); ``close`` lets go of it. ``verify``
    raises when the state the stores hold can no longer be trusted (a Redis that lost data:
    :class:`~pareis.store.redis_epoch.IndexLost`): asked before every batch (:meth:`guarded`); ``sync`` makes the
    stores' writes durable as ``redis.replicas`` asks, and verifies: asked before every commit.
    """

    lineage: LineageStore
    runs: RunHistory
    incidents: IncidentStore
    journal: StepJournal
    ledger: EffectLedger
    datahub: DatahubWriter
    ticketers: list[Ticketer] = field(default_factory=list)
    checks: Mapping[str, Check] = field(default_factory=dict)
    close: Callable[[], None] = _nothing
    start: Callable[[], None] = _nothing
    scores: ScoreLedger = field(default_factory=MemoryScoreLedger)
    """The reliability scores last written to DataHub (:mod:`pareis.roles.scores`)."""
    gates: GateLedger = field(default_factory=MemoryGateLedger)
    """The retrain gate's decisions last published on ``pareis.gate.v1`` (:mod:`pareis.roles.gates`)."""
    watch: WatchStore = field(default_factory=MemoryWatchStore)
    """What the active incidents watch in the lineage graph (:mod:`pareis.store.watch`): written by the incidents
    role, read by the lineage role (DESIGN §3, live re-evaluation)."""
    exposure: ExposureIndex = field(default_factory=MemoryExposureIndex)
    """What lies downstream of every column (:mod:`pareis.store.exposure`): its generation advanced by the lineage
    role, its snapshot kept by the lineage role's maintainer (:mod:`pareis.roles.exposure`), read by protect and the
    gate."""
    verify: Callable[[], None] = _nothing
    sync: Callable[[], None] = _nothing
    reaches: ReachStore = field(default_factory=MemoryReachStore)
    """Which incidents reached each model group (:mod:`pareis.store.reaches`): written and read by the incidents
    role (the recommendation over every incident, DESIGN §2.3), read by the read side."""

    def pipeline(
        self,
        decode: Decoder[T],
        handle: Handler[T],
        *,
        start: Callable[[], None] | None = None,
        close: Callable[[], None] | None = None,
        committed: Callable[[Mapping[tuple[str, int], int]], None] | None = None,
    ) -> Pipeline[T]:
        """A role's :class:`~pareis.kafka.role.Pipeline` over these ports: their readiness checks, start-up check
        and close (or ``start``/``close`` of the role's own, which call them), :attr:`verify` before each batch
        (:meth:`guarded`) and :attr:`sync` before each commit."""
        extra = {} if committed is None else {"committed": committed}
        return Pipeline(
            decode,
            self.guarded(handle),
            checks=self.checks,
            close=close or self.close,
            start=start or self.start,
            before_commit=self.sync,
            **extra,
        )

    def guarded(self, handle: Handler[T]) -> Handler[T]:
        """``handle``, :attr:`verify` asked before each batch it is given (``handle`` itself when there is nothing to
        verify: in memory)."""
        if self.verify is _nothing:
            return handle
        return Verified(handle, self.verify)

    @classmethod
    def in_memory(cls, ticketers: Sequence[Ticketer] = ()) -> Ports:
        """Fresh in-memory stores, a :class:`~pareis.datahub.writes.writer.MemoryWriter`, and ``ticketers`` (the demo,
        tests; run every role at once over them with :func:`pareis.compose.roles.embedded_runner`)."""
        return cls(
            MemoryLineageStore(),
            MemoryRunHistory(),
            MemoryIncidentStore(),
            MemoryStepJournal(),
            MemoryLedger(),
            MemoryWriter(),
            list(ticketers),
        )

    @classmethod
    def on_redis(cls, settings: Settings) -> Ports:
        """The stores on one Redis client at ``settings.redis_url`` (default key prefixes), the ticket tools
        configured in ``settings.tickets`` and the DataHub writer of ``settings.datahub.write_path``.

        Nothing connects until the first read, write or probe. Readiness pings Redis; the stores translate its
        errors (Retriable: unreachable, failing over; Fatal: credentials, server errors). A half-configured
        ticket tool or a REST path with no GMS URL is Fatal here, at start-up.
        """
        client = redis_client(settings.redis_url)
        tuning = settings.runtime.for_role("incidents")
        writer = datahub_writer(settings)
        where, durable = redact_url(settings.redis_url), settings.redis
        epoch = Epoch(client, where)

        def start() -> None:
            require_sound(client, where, require_persistence=durable.require_persistence)
            epoch.open()

        def close() -> None:
            try:
                closer = getattr(writer, "close", None)
                if closer is not None:
                    closer()
            finally:
                client.close()

        return cls(
            lineage=RedisLineageStore(client),
            runs=RedisRunHistory(client),
            incidents=RedisIncidentStore(client),
            # A transaction spans at most commit_every messages plus one batch; twice that is the journal's horizon.
            journal=RedisStepJournal(client, keep=2 * (tuning.commit_every + tuning.batch_size)),
            ledger=RedisLedger(client),
            datahub=writer,
            ticketers=ticketers_from_settings(settings.tickets),
            checks={"redis": epoch.check},
            close=close,
            start=start,
            scores=RedisScoreLedger(client),
            gates=RedisGateLedger(client),
            watch=RedisWatchStore(client),
            exposure=RedisExposureIndex(client),
            verify=epoch.check,
            sync=lambda: epoch.acknowledged(durable.replicas, durable.replica_timeout_ms),
            reaches=RedisReachStore(client),
        )


CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
"""URL schemes of a Redis Cluster (any node is a seed), and the plain scheme of each node's connections."""


def redis_client(url: str) -> redis.Redis | RedisCluster:
    """A Redis client for Pareis's stores (bytes in and out, bounded timeouts): ``redis.Redis`` for a
    ``redis://``/``rediss://``/``unix://`` URL (connects lazily), ``RedisCluster`` for ``redis+cluster://`` or
    ``rediss+cluster://`` (connects at once, to read the slot map: an unreachable cluster, or a standalone server
    named by a cluster URL, is a translated error here). ValueError for a malformed URL, or a cluster URL naming a
    database (a cluster has database 0 only)."""
    scheme = url.partition("://")[0].lower()
    timeouts = {"socket_timeout": 10, "socket_connect_timeout": 5}
    if scheme not in CLUSTER_SCHEMES:
        return redis.Redis.from_url(url, health_check_interval=30, **timeouts)
    plain = CLUSTER_SCHEMES[scheme] + url[len(scheme) :]
    if urlsplit(plain).path.strip("/") not in ("", "0"):
        raise ValueError(f"a Redis Cluster URL names no database (a cluster has database 0 only): {url}")
    with translated():
        return RedisCluster.from_url(plain, **timeouts)


class Verified(Generic[T]):
    """A handler with a check before each batch (:meth:`Ports.guarded`); ``handler`` is the one wrapped."""

    def __init__(self, handler: Handler[T], verify: Callable[[], None]) -> None:
        self.handler = handler
        self._verify = verify

    def __call__(self, batch: Sequence[Message[T]]) -> Iterable[OutRecord]:
        self._verify()
        return self.handler(batch)
