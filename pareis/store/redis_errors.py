"""Translation of redis-py errors into Pareis's error classes, for every Redis adapter (pareis.errors).

Connection errors, timeouts, a read-only (failing-over) replica, a cluster failing over or resharding (its slot map
changing) or unreachable → :class:`~pareis.errors.Retriable`; refused credentials, a cluster URL naming a standalone
server and any other server error (a key of the wrong type, a disabled command) → :class:`~pareis.errors.Fatal`:
they are configuration, and every later call would fail the same way. A reply that should be text and is not
(:func:`text`) is Fatal too: the key holds something no Pareis wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.exceptions import RedisClusterException

from pareis.errors import Fatal, Retriable


def from_redis(error: redis.RedisError | RedisClusterException) -> Retriable | Fatal:
    """The Pareis error for a redis-py error."""
    if isinstance(error, redis.AuthenticationError):
        return Fatal(f"redis refused the credentials: {error}")
    if isinstance(error, RedisClusterException):
        if "cluster mode is not enabled" in str(error).lower():
            return Fatal(f"redis is not a cluster ({error}): name a standalone server with a redis:// URL")
        return Retriable(f"redis cluster unavailable: {error}")
    if isinstance(error, _UNAVAILABLE):
        return Retriable(f"redis unavailable: {error}")
    return Fatal(f"redis error: {error}")


_UNAVAILABLE = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.ReadOnlyError,
    # a cluster failing over or resharding: the slot map is being fixed
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
    redis.exceptions.AskError,
)


@contextmanager
def translated() -> Iterator[None]:
    """Run a block of Redis calls, re-raising redis-py errors as :func:`from_redis` says (chained)."""
    try:
        yield
    except (redis.RedisError, RedisClusterException) as error:
        raise from_redis(error) from error


def text(value: object) -> str:
    """A reply read as text: ``bytes`` decoded as UTF-8, ``str`` as it is (a client that decodes replies).
    Raises :class:`~pareis.errors.Fatal` for anything else, or for bytes that are not UTF-8."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Fatal(f"unexpected reply from redis (not UTF-8): {value[:80]!r}") from exc
    raise Fatal(f"unexpected reply from redis: {value!r}")
