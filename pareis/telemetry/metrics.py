"""Prometheus metrics of the consumer runtime, per role and partition, in one registry per process.

Names (all prefixed ``pareis_``): ``messages_consumed_total``, ``messages_filtered_total``,
``messages_handled_total``, ``messages_dead_lettered_total`` {role, topic, partition}; ``records_produced_total``
{role, topic}; ``errors_total`` {role, error_class}; ``batch_duration_seconds`` and ``commit_duration_seconds``
histograms {role}; ``consumer_lag`` {role, topic, partition} (high watermark − committed position, the metric the
HPA scales on); ``assigned_partitions``, ``paused`` and ``backoffs_total`` {role}.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

PartitionKey = tuple[str, int]

_BATCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class RuntimeMetrics:
    """Every runtime metric of a process. Pass ``registry`` to isolate (tests); default: a fresh one."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        per_partition = ["role", "topic", "partition"]
        r = self.registry
        self.consumed = Counter("pareis_messages_consumed", "Messages consumed.", per_partition, registry=r)
        self.filtered = Counter(
            "pareis_messages_filtered", "Messages skipped by the decoder's filter.", per_partition, registry=r
        )
        self.handled = Counter("pareis_messages_handled", "Messages handled.", per_partition, registry=r)
        self.dead_lettered = Counter(
            "pareis_messages_dead_lettered", "Messages sent to the dead-letter topic.", per_partition, registry=r
        )
        self.produced = Counter(
            "pareis_records_produced", "Records produced (outputs and dead letters).", ["role", "topic"], registry=r
        )
        self.errors = Counter("pareis_errors", "Errors by class.", ["role", "error_class"], registry=r)
        self.batch_seconds = Histogram(
            "pareis_batch_duration_seconds",
            "Decode + handle + produce time of one batch.",
            ["role"],
            buckets=_BATCH_BUCKETS,
            registry=r,
        )
        self.commit_seconds = Histogram(
            "pareis_commit_duration_seconds",
            "Time to make a batch durable (flush + offset commit, or transaction commit).",
            ["role"],
            buckets=_BATCH_BUCKETS,
            registry=r,
        )
        self.lag = Gauge("pareis_consumer_lag", "High watermark minus position.", per_partition, registry=r)
        self.assigned = Gauge("pareis_assigned_partitions", "Partitions assigned.", ["role"], registry=r)
        self.paused = Gauge("pareis_paused", "1 while the role is backing off.", ["role"], registry=r)
        self.backoffs = Counter("pareis_backoffs", "Back-offs after a retriable error.", ["role"], registry=r)

    def count(self, role: str, counts: Mapping[PartitionKey, int], which: Counter) -> None:
        for (topic, partition), n in counts.items():
            which.labels(role, topic, str(partition)).inc(n)

    def count_errors(self, role: str, errors: Mapping[str, int]) -> None:
        for name, n in errors.items():
            self.errors.labels(role, name).inc(n)

    def count_produced(self, role: str, topics: Iterable[str]) -> None:
        counts: dict[str, int] = {}
        for topic in topics:
            counts[topic] = counts.get(topic, 0) + 1
        for topic, n in counts.items():
            self.produced.labels(role, topic).inc(n)

    def set_lag(self, role: str, lags: Mapping[PartitionKey, int]) -> None:
        for (topic, partition), lag in lags.items():
            self.lag.labels(role, topic, str(partition)).set(lag)

    def drop_partitions(self, role: str, partitions: Iterable[PartitionKey]) -> None:
        """Forget the lag of partitions no longer owned, so no stale series feeds the autoscaler."""
        for topic, partition in partitions:
            try:
                self.lag.remove(role, topic, str(partition))
            except KeyError:
                continue
