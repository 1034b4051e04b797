"""The consumer loop of one role instance: poll a batch, process it, make it durable, repeat.

Guarantees:

* offsets are committed only after the batch's outputs (and its handler's effects) are durable
  (:mod:`pareis.kafka.checkpoint`);
* a Retriable from the pipeline pauses every assigned partition, backs off (capped, exponential; a server's
  ``retry_after`` hint is honoured), commits nothing of that batch and redoes the same batch, then resumes; the
  consumer is polled meanwhile, so the group keeps the member and rebalances are served;
* an aborted transaction rewinds every assigned partition to its committed offset and redoes from there; so
  does (after a back-off) an output record of uncommitted input that failed delivery (at-least-once), so that
  nothing is committed past an input whose outputs were not delivered;
* on revocation, finished work is committed (or, if the commit fails, the transaction aborted) and buffered
  messages of revoked partitions are dropped, so no handler runs for a partition no longer owned;
* on loss (the session expired: the process paused, or stalled), nothing is committed: the open transaction is
  aborted (the group coordinator refuses the stale generation's offsets anyway) and the role rewinds and rejoins;
  an exactly-once role whose producer wakes up fenced (its transaction aborted by the coordinator after
  ``transaction.timeout.ms``) goes on with a new producer, a bounded number of times;
* every blocking Kafka call the loop makes has a deadline Pareis enforces itself (:mod:`pareis.kafka.watchdog`):
  past it the role is not alive and not ready at once, and the process exits (1) with one log line, so that it
  restarts from its committed offsets;
* before it joins its group, the role creates the topics Pareis owns that it reads or writes, and waits for an
  input topic that does not exist yet (:mod:`pareis.kafka.topics`);
* an output over the producer's limit dead-letters its input (:mod:`pareis.kafka.batch`);
* :meth:`RoleRunner.run` returns after ``stop`` is set, once the in-flight batch is finished or abandoned, work
  done is committed and the consumer has left the group; it raises :class:`~pareis.errors.Fatal` when the role
  cannot go on (nothing more is committed then).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import structlog
from confluent_kafka import Consumer, KafkaError, TopicPartition

from pareis.config import Settings
from pareis.contracts.records import RawMessage
from pareis.errors import Fatal, PareisError, Retriable
from pareis.kafka import clients, topics
from pareis.kafka.at_least_once import AtLeastOnce
from pareis.kafka.batch import BatchProcessor, BatchResult, PartitionKey
from pareis.kafka.checkpoint import Checkpoint, DeliveryFailed
from pareis.kafka.classify import AbortTransaction, ProducerFenced, from_kafka_error
from pareis.kafka.exactly_once import ExactlyOnce
from pareis.kafka.gathering import gather
from pareis.kafka.intake import COMMITTED_TIMEOUT_S, Intake, keys
from pareis.kafka.role import Delivery, Pipeline, Role
from pareis.kafka.watchdog import EXIT_BLOCKED, Watchdog, bounded, exit_process, limit
from pareis.telemetry.health import Call, Health, Heartbeat
from pareis.telemetry.metrics import RuntimeMetrics

_LAG_EVERY_S = 2.0
_POLL_S = 0.25
"""The longest poll while backing off (the loop beats between polls)."""
_PRODUCER_CALLS = frozenset(
    {"init_transactions", "send_offsets_to_transaction", "commit_transaction", "abort_transaction", "flush"}
)
"""The loop's calls on the producer: blocked in one of them (and in no consumer call), the consumer can still be
closed from another thread (:meth:`RoleRunner._blocked`)."""
_LEAVE_S = 3.0
_RENEWALS = 3
"""New producers an exactly-once role starts after a fencing without a commit in between, before it stops."""


def _nothing() -> None:
    pass


def backoff_delay(attempt: int, initial_s: float, max_s: float, hint_s: float | None = None) -> float:
    """``initial * 2^attempt`` capped at ``max``; at least the server's hint (itself capped)."""
    delay = min(initial_s * (2**attempt), max_s)
    return min(max(delay, hint_s or 0.0), max_s)


class RoleRunner:
    """Runs ``role`` with ``settings`` until ``stop`` is set; ``exit_process(code)`` is what the watchdog calls when
    a Kafka call blocks past its deadline (by default: exit the process at once); ``between``, what the loop calls
    between batches (after each batch or poll, and each poll of a back-off: the process's garbage collection,
    :class:`pareis.compose.heap.Collector`), by default nothing."""

    def __init__(
        self,
        role: Role,
        settings: Settings,
        *,
        metrics: RuntimeMetrics,
        health: Health,
        stop: threading.Event,
        exit_process: Callable[[int], None] = exit_process,
        between: Callable[[], None] | None = None,
    ) -> None:
        self.role = role
        self._between = between or _nothing
        self.settings = settings
        self.metrics = metrics
        self.health = health
        self.stop = stop
        self.log = structlog.get_logger(__name__).bind(role=role.name)
        self.inflight: list[RawMessage] = []
        self.failed = False
        self.rewind_needed = False
        self.delivery_failures = 0
        """Consecutive rewinds (an aborted transaction, a :class:`DeliveryFailed`): the back-off's exponent; reset
        by a commit."""
        self.client_error: BaseException | None = None
        self.renewals = 0
        """Producers started after a fencing since the last commit (see :meth:`_renew_producer`)."""
        self._producer_config: dict[str, Any] = {}
        self._intake: Intake | None = None
        self._checkpoint: Checkpoint | None = None
        self._exit_process = exit_process
        self.heartbeat = Heartbeat(float("inf"))
        """The loop's heartbeat (registered with ``health`` by :meth:`run`): every blocking Kafka call runs inside it
        with its deadline."""

    @property
    def intake(self) -> Intake:
        assert self._intake is not None, "intake used before run()"
        return self._intake

    @property
    def consumer(self) -> Consumer:
        return self.intake.consumer

    @property
    def checkpoint(self) -> Checkpoint:
        assert self._checkpoint is not None, "checkpoint used before run()"
        return self._checkpoint

    # --- lifecycle -------------------------------------------------------------------------------------------
    def run(self) -> None:
        run = self.settings.runtime.for_role(self.role.name)
        role = self.role
        pipeline: Pipeline[Any] = role.build()
        try:
            pipeline.start()
        except BaseException:
            pipeline.close()
            raise
        for name, check in pipeline.checks.items():
            self.health.check(f"{role.name}.{name}", check)
        self.health.gate(f"{role.name}.joined", False)
        self.heartbeat = self.health.loop(role.name, run.max_poll_interval_ms / 1000)
        watchdog = Watchdog(role.name, self.heartbeat, self._blocked).start()
        try:
            self._run(pipeline)
        finally:
            watchdog.stop()

    def _run(self, pipeline: Pipeline[Any]) -> None:
        run = self.settings.runtime.for_role(self.role.name)
        role = self.role
        kafka = self.settings.kafka
        processor = BatchProcessor(
            role.name,
            pipeline,
            kafka.topics.dlq,
            dlq_max_bytes=kafka.dlq_max_bytes,
            max_output_bytes=clients.message_max_bytes(self.settings),
        )
        consumer = clients.new_consumer(
            clients.consumer_config(self.settings, role), self._on_client_error, self._deferring(self._on_commit_result)
        )
        self._intake = Intake(consumer, role.name, self.metrics, self.log)
        self._producer_config = clients.producer_config(self.settings, role)
        producer = clients.new_producer(self._producer_config, self._on_client_error)
        try:  # name an unreachable broker within seconds, give up after connect_timeout_s (exit 1)
            clients.wait_for_brokers(self.consumer, kafka.bootstrap_servers, kafka.connect_timeout_s, stop=self.stop)
            owned = topics.owned(self.settings, {*role.inputs, *role.outputs})
            created = topics.prepare(self.settings, owned, stop=self.stop, beat=self.heartbeat.beat, log=self.log)
            present = topics.wait_for(
                lambda timeout_s: self.consumer.list_topics(timeout=timeout_s),
                role.inputs,
                stop=self.stop,
                beat=self.heartbeat.beat,
                log=self.log,
                created=created,
            )
        except BaseException:
            pipeline.close()
            raise
        if not present:  # stopped while waiting for an input topic
            self._close(pipeline)
            self.log.info("stopped")
            return
        commit_seconds = self.metrics.commit_seconds.labels(role.name)
        common: dict[str, Any] = {
            "commit_every": run.commit_every,
            "commit_interval_s": run.commit_interval_ms / 1000,
            "call_timeout_s": kafka.call_timeout_s,
            "heartbeat": self.heartbeat,
            "stop": self.stop,
            "on_commit": commit_seconds.observe,
            "on_committed": self._committed_hook(pipeline),
            "before_commit": pipeline.before_commit,
        }
        if role.delivery is Delivery.EXACTLY_ONCE:
            eos = ExactlyOnce(self.consumer, producer, **common)
            self._checkpoint = eos
            eos.init()
        else:
            self._checkpoint = AtLeastOnce(self.consumer, producer, **common)
        self.log.info("starting", inputs=role.inputs, group=role.group, delivery=str(role.delivery))
        self.consumer.subscribe(
            list(role.inputs),
            on_assign=self._deferring(self._on_assign),
            on_revoke=self._deferring(self._on_revoke),
            on_lost=self._deferring(self._on_lost),
        )
        try:
            self._loop(processor, self.heartbeat.beat)
        except BaseException as exc:
            self.failed = True
            self.log.error("stopping after a fatal error", error_class=type(exc).__name__, error=str(exc))
            self._close(pipeline)
            raise
        self._shutdown()
        self._close(pipeline)
        self.log.info("stopped")

    def _loop(self, processor: BatchProcessor, beat: Any) -> None:
        run = self.settings.runtime.for_role(self.role.name)
        next_lag = time.monotonic() + _LAG_EVERY_S
        while not self.stop.is_set():
            try:
                self._step(processor, beat, run.batch_size, run.batch_timeout_s, run.batch_quiet_s)
            except ProducerFenced as exc:
                self._renew_producer(exc)
            self._between()
            if time.monotonic() >= next_lag:
                self.intake.report_lag()
                next_lag = time.monotonic() + _LAG_EVERY_S

    def _step(
        self, processor: BatchProcessor, beat: Any, size: int, timeout_s: float, quiet_s: float | None = None
    ) -> None:
        beat()
        self._raise_deferred()
        if self.rewind_needed:
            self._rewind()
        messages = self._consume(size, timeout_s) if quiet_s is None else self._gather(size, timeout_s, quiet_s)
        self._raise_deferred()
        batch = self.intake.admit(messages)
        if batch:
            self._process(processor, batch, beat)
        elif self.checkpoint.due():
            try:
                self._commit()
            except AbortTransaction as exc:  # e.g. an output partition gone since its records were produced
                self._aborted(exc, beat)
            if self.intake.paused:
                self.intake.resume()

    def _consume(self, size: int, timeout_s: float) -> list[Any]:
        with self.heartbeat.calling("consume", limit(timeout_s)):
            return self.consumer.consume(size, timeout_s)

    def _gather(self, size: int, timeout_s: float, quiet_s: float) -> list[Any]:
        """:func:`~pareis.kafka.gathering.gather`; a rebalance or a client error while it gathers closes the batch at
        once (what it holds is then admitted as any batch is: the messages of partitions still owned)."""
        owned: list[frozenset[PartitionKey]] = []

        def steady() -> bool:
            now = frozenset(self.intake.assigned)
            if not owned:  # first asked once the batch's first message came: the assignment it came under
                owned.append(now)
            return self.client_error is None and now == owned[0]

        return gather(self._consume, size, timeout_s, quiet_s, steady=steady)

    def _renew_producer(self, exc: ProducerFenced) -> None:
        """An exactly-once role whose producer was fenced goes on with a new one, as Kafka Streams does after a
        task migration: the fencing says its transaction was aborted (open past ``transaction.timeout.ms``,
        the process paused) or another instance registered its transactional id. Its uncommitted work is
        dropped and redone from the committed offsets. Fenced again ``_RENEWALS`` times without a commit in
        between (two live instances sharing one id), it stops."""
        if self.role.delivery is not Delivery.EXACTLY_ONCE or self.renewals >= _RENEWALS:
            raise exc
        self.renewals += 1
        self.metrics.errors.labels(self.role.name, type(exc).__name__).inc()
        self.log.warning("producer fenced; starting a new one", error=str(exc), renewals=self.renewals)
        if isinstance(self.client_error, ProducerFenced):  # the old producer's own report of the same fencing
            self.client_error = None
        self.inflight = []
        assert isinstance(self.checkpoint, ExactlyOnce)
        self.checkpoint.renew(clients.new_producer(self._producer_config, self._on_client_error))
        self._rewind()
        if self.intake.paused:
            self.intake.resume()

    def _shutdown(self) -> None:
        """Commit what is done, then leave the group (the revocation on close finds nothing left to commit)."""
        try:
            self._commit()
        except AbortTransaction:
            self.log.warning("final transaction aborted; its input will be redone by the next owner")
        self.log.info("committed; leaving the group")

    def _close(self, pipeline: Pipeline[Any]) -> None:
        try:
            if self._checkpoint is not None:
                if self.failed:
                    self.checkpoint.pending.clear()
                self.checkpoint.close()
        except Exception as exc:  # noqa: BLE001 - closing goes on: the consumer must still leave the group
            self.log.warning("closing the producer failed", error=str(exc))
        try:
            if self._intake is not None:
                # Leaving the group takes at most the shutdown budget (a SIGTERM's grace timer ends it first).
                with self.heartbeat.calling("closing the consumer", limit(self.settings.runtime.shutdown_grace_s)):
                    self.consumer.close()
        finally:
            self.health.gate(f"{self.role.name}.joined", False)
            self.health.forget_loop(self.role.name)
            if self._intake is not None:
                self.intake.release_all()
            pipeline.close()

    # --- one batch -------------------------------------------------------------------------------------------
    def _process(self, processor: BatchProcessor, batch: list[RawMessage], beat: Any) -> None:
        self.inflight = batch
        self._attempt(processor, beat)
        self.inflight = []
        if self.intake.paused:
            self.intake.resume()

    def _attempt(self, processor: BatchProcessor, beat: Any) -> None:
        """Process ``self.inflight`` until it is done, abandoned (stopping) or rewound (aborted)."""
        name = self.role.name
        attempt = 0
        while self.inflight:
            started = time.perf_counter()
            try:
                try:
                    result = processor.process(self.inflight)
                except Retriable:
                    self._commit()  # earlier batches are done; this one is not and stays uncommitted
                    raise
                try:
                    self._make_durable(self.inflight, result)
                except (Retriable, AbortTransaction) as exc:
                    if self.role.delivery is Delivery.EXACTLY_ONCE:
                        # Part of this batch may be in the open transaction already, or the transaction failed
                        # (a produce refused in its error state): abort it all (a no-op when the commit already
                        # did) and redo from the committed offsets.
                        self.checkpoint.abort()
                        if not isinstance(exc, AbortTransaction):
                            raise AbortTransaction(str(exc)) from exc
                    raise
            except AbortTransaction as exc:
                self._aborted(exc, beat)
                return
            except Retriable as exc:  # a dependency is down, or (at-least-once) outputs were not delivered
                self.metrics.errors.labels(name, type(exc).__name__).inc()
                if not self._back_off(exc, attempt, beat):
                    return
                attempt += 1
                continue
            self.metrics.batch_seconds.labels(name).observe(time.perf_counter() - started)
            self._count(result)
            return

    def _aborted(self, exc: AbortTransaction, beat: Any) -> None:
        """The uncommitted work was dropped (the transaction aborted, or an output not delivered): rewind to the
        committed offsets and redo from there; after a back-off when an output's destination is unavailable (a
        missing topic, a partition without leader: an exactly-once commit refused, or a failed delivery), rather
        than redo at once."""
        self.metrics.errors.labels(self.role.name, type(exc).__name__).inc()
        again = self.role.delivery is Delivery.EXACTLY_ONCE and self.delivery_failures > 0
        if isinstance(exc, DeliveryFailed) or again:
            self._back_off(exc, self.delivery_failures, beat, holding=False)
        self.delivery_failures += 1
        self._rewind()

    def _make_durable(self, batch: list[RawMessage], result: BatchResult) -> None:
        offsets: dict[PartitionKey, int] = {}
        for message in batch:
            offsets[(message.topic, message.partition)] = message.offset + 1
        self.checkpoint.produce(result.outputs)
        self.checkpoint.advance(offsets, len(batch))
        if self.checkpoint.due():
            self._commit(soon=self.settings.runtime.for_role(self.role.name).commit_async)

    def _commit(self, *, soon: bool = False) -> None:
        """Commit what is done: at once, or (``soon``, on the hot path) without waiting for the broker's reply
        (:meth:`~pareis.kafka.checkpoint.Checkpoint.commit_soon`)."""
        if self.failed:
            return
        if soon:
            self.checkpoint.commit_soon()
        else:
            self.checkpoint.commit()
        self.delivery_failures = 0

    def _committed_hook(self, pipeline: Pipeline[Any]) -> Any:
        def committed(offsets: Any) -> None:
            self.renewals = 0
            try:
                pipeline.committed(offsets)
            except PareisError as exc:  # the next commit's call covers these offsets again
                self.log.warning("post-commit release failed", error=str(exc))

        return committed

    def _count(self, result: BatchResult) -> None:
        name, tally, m = self.role.name, result.tally, self.metrics
        m.count(name, tally.consumed, m.consumed)
        m.count(name, tally.filtered, m.filtered)
        m.count(name, tally.handled, m.handled)
        m.count(name, tally.dead, m.dead_lettered)
        m.count_errors(name, tally.errors)
        m.count_produced(name, (record.topic for record in result.outputs))

    # --- back-pressure -----------------------------------------------------------------------------------------
    def _back_off(self, exc: Retriable | AbortTransaction, attempt: int, beat: Any, *, holding: bool = True) -> bool:
        """Pause, wait while polling, and tell whether to retry (False: stopping, or nothing left to retry).
        ``holding``: the wait is for the in-flight batch, and ends early if a revocation takes all of it away."""
        run = self.settings.runtime.for_role(self.role.name)
        hint = exc.retry_after if isinstance(exc, Retriable) else None
        delay = backoff_delay(attempt, run.backoff_initial_s, run.backoff_max_s, hint)
        self.log.warning("retriable failure; backing off", error=str(exc), attempt=attempt, delay_s=delay)
        self.metrics.backoffs.labels(self.role.name).inc()
        self.intake.pause()
        deadline = time.monotonic() + delay
        while not self.stop.is_set() and (self.inflight or not holding):
            beat()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            timeout_s = min(_POLL_S, remaining)
            with self.heartbeat.calling("poll", limit(timeout_s)):
                message = self.consumer.poll(timeout_s)
            self._raise_deferred()
            self.intake.put_back(message)
            self._between()
        return False

    # --- rebalancing -------------------------------------------------------------------------------------------
    def _deferring(self, callback: Callable[..., None]) -> Callable[..., None]:
        """``callback`` as the consumer calls it (during a poll, from C): whatever it raises is kept, and raised by
        the loop after the poll (:meth:`_raise_deferred`)."""

        def call(*args: Any) -> None:
            try:
                callback(*args)
            except BaseException as exc:  # noqa: BLE001 - raised again by the loop, never lost
                self.client_error = exc

        return call

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.intake.assign(partitions)
        self.health.gate(f"{self.role.name}.joined", True)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = keys(partitions)
        self.inflight = [m for m in self.inflight if (m.topic, m.partition) not in revoked]
        if not self.failed:
            try:
                self._commit()
            except AbortTransaction:
                self.rewind_needed = True
            except ProducerFenced as exc:  # the loop starts a new producer; the revocation goes on
                self.client_error = exc
        self.checkpoint.forget(revoked)
        self.intake.release("revoked", partitions)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        lost = keys(partitions)
        # The group moved on without this member (its session expired: a pause, a stall): whatever it did since
        # its last commit belongs to the new owner. Abort, never commit it (the broker would refuse the stale
        # generation's offsets anyway), and rewind what is still assigned.
        self.log.warning(
            "partitions lost; dropping uncommitted work",
            partitions=sorted(lost),
            uncommitted=self.checkpoint.uncommitted,
        )
        self.inflight = [m for m in self.inflight if (m.topic, m.partition) not in lost]
        try:
            self.checkpoint.abort()
        except ProducerFenced as exc:  # its transaction was aborted already; the loop starts a new producer
            self.checkpoint.pending.clear()
            self.client_error = exc
        self.rewind_needed = True
        self.intake.release("lost", partitions)
        self.health.gate(f"{self.role.name}.joined", False)  # out of the group until the next assignment

    def _rewind(self) -> None:
        """Seek every assigned partition back to its committed offset (after an abort)."""
        self.rewind_needed = False
        with self.heartbeat.calling("reading committed offsets", limit(COMMITTED_TIMEOUT_S)):
            self.intake.rewind()

    # --- the watchdog ------------------------------------------------------------------------------------------
    def _blocked(self, call: Call, late_s: float) -> None:
        """The watchdog's report (from its own thread): the loop is blocked in a Kafka call past its deadline. The
        heartbeat already fails liveness and readiness; one line says why, and the process exits.

        When the blocked call is the producer's and not made inside a poll, the consumer first leaves the group
        (bounded by :data:`_LEAVE_S`; it commits nothing: the role is failed), so that the restarted instance gets
        the partitions at once instead of after this member's session times out."""
        self.failed = True
        self.health.gate(f"{self.role.name}.joined", False)
        self.log.error(
            "kafka call blocked past its deadline; exiting so that the role restarts from its committed offsets",
            call=call.what,
            deadline_s=round(call.limit_s, 1),
            blocked_s=round(call.limit_s + late_s, 1),
        )
        if self._intake is not None and _PRODUCER_CALLS.issuperset(call.within()):
            bounded(self.consumer.close, _LEAVE_S, f"leave-{self.role.name}")
        self._exit_process(EXIT_BLOCKED)

    # --- errors ----------------------------------------------------------------------------------------
    def _on_client_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.client_error = from_kafka_error(err, "client")
        elif not clients.quiet(err):  # a broker connection failure is in librdkafka's own log line already
            self.log.warning("kafka client error", error=err.str(), code=err.name())

    def _on_commit_result(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        if self._checkpoint is not None:
            self._checkpoint.commit_result(err, partitions)

    def _raise_deferred(self) -> None:
        if self.client_error is not None:
            exc, self.client_error = self.client_error, None
            if isinstance(exc, Fatal):
                raise exc
            raise Fatal(f"error in a rebalance callback: {type(exc).__name__}: {exc}") from exc
