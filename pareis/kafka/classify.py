"""Kafka errors, classified once: what the runtime does about each, and the pareis.errors type it becomes.

Every librdkafka error the runtime sees (a consume error, a delivery report, a failed commit or transaction call)
goes through :func:`classify`; nothing else in Pareis inspects a ``KafkaError``.
"""

from __future__ import annotations

import enum

from confluent_kafka import KafkaError, KafkaException

from pareis.errors import Abort, Fatal, PareisError, Retriable


class Disposition(enum.Enum):
    """What to do about a Kafka error."""

    RETRY = "retry"
    """Transient (broker down, timeout, coordinator moving): retry the same call or input after a back-off."""
    ABORT = "abort"
    """The open transaction is doomed: abort it, rewind to the committed offsets, redo."""
    REBALANCED = "rebalanced"
    """The group moved on (generation changed): this member's uncommitted work belongs to the new owner."""
    FATAL = "fatal"
    """The client is unusable (fenced, unauthorised, fatal producer error): stop and restart from committed."""


class AbortTransaction(Abort):
    """The open transaction must be aborted and its input redone from the committed offsets."""


class CommitLost(Abort):
    """A commit failed because the group rebalanced; the input will be redelivered to its new owner (an
    at-least-once role keeps the offsets for its next commit, an exactly-once role aborts its transaction)."""


class ProducerFenced(Fatal):
    """The transactional producer was fenced: its epoch is stale because the transaction coordinator aborted its
    transaction (open longer than ``transaction.timeout.ms``: the process was paused) or another producer with the
    same ``transactional.id`` registered — or librdkafka's transaction state machine went fatal
    (``INVALID_TXN_STATE`` reported as fatal: seen when an abort raced an add-partitions failure for an output
    topic deleted meanwhile). This producer can do nothing more; a new one can: registering the same
    ``transactional.id`` fences the old epoch and aborts what it left open (the runner starts one for an
    exactly-once role, a bounded number of times without a commit in between, then stops)."""


_FENCED_CODES = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED})
_FATAL_CODES = frozenset(
    {
        KafkaError._FATAL,
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError._AUTHENTICATION,
        KafkaError.INVALID_TRANSACTION_TIMEOUT,
        KafkaError.FENCED_INSTANCE_ID,
    }
)
_REBALANCED_CODES = frozenset(
    {
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.STALE_MEMBER_EPOCH,
        KafkaError.FENCED_MEMBER_EPOCH,
    }
)
_RETRY_CODES = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError._TIMED_OUT_QUEUE,
        KafkaError._MSG_TIMED_OUT,
        KafkaError._WAIT_COORD,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.CONCURRENT_TRANSACTIONS,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        # An output topic not created yet (auto-creation off): an operator creates it, the role must not
        # crash-loop meanwhile; librdkafka raises these at produce time once it knows the topic is missing.
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    }
)


def classify(err: KafkaError) -> Disposition:
    """What to do about ``err``. Fatal wins over abortable, abortable over retriable; unknown errors are fatal,
    because restarting from committed offsets is always safe and guessing is not."""
    code = err.code()
    if err.fatal() or code in _FATAL_CODES:
        return Disposition.FATAL
    if err.txn_requires_abort():
        return Disposition.ABORT
    if code in _REBALANCED_CODES:
        return Disposition.REBALANCED
    if err.retriable() or code in _RETRY_CODES:
        return Disposition.RETRY
    return Disposition.FATAL


def error_of(exc: BaseException) -> KafkaError | None:
    """The ``KafkaError`` carried by a confluent_kafka exception, or None."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def from_kafka_error(err: KafkaError, doing: str) -> PareisError:
    """The pareis.errors exception for ``err``, raised while ``doing`` (a short phrase for the message)."""
    message = f"kafka {doing}: {err.name()}: {err.str()}"
    verdict = classify(err)
    if err.code() in _FENCED_CODES or (err.fatal() and err.code() == KafkaError.INVALID_TXN_STATE):
        return ProducerFenced(message)
    if verdict is Disposition.ABORT:
        return AbortTransaction(message)
    if verdict is Disposition.REBALANCED:
        return CommitLost(message)
    if verdict is Disposition.RETRY:
        return Retriable(message)
    return Fatal(message)


def from_kafka_exception(exc: BaseException, doing: str) -> PareisError:
    """:func:`from_kafka_error` for a raised confluent_kafka exception; anything else unexpected is fatal."""
    err = error_of(exc)
    if err is None:
        return Fatal(f"kafka {doing}: {type(exc).__name__}: {exc}")
    return from_kafka_error(err, doing)
