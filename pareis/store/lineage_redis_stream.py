"""The Redis lineage store's write stream (:mod:`pareis.store.lineage_redis`, layout 2): updates sent as they come,
replies read once at the end.

:meth:`ApplyStream.send` encodes each update (:func:`~pareis.store.lineage_redis_encoding.encode_update`) and
writes its ``EVALSHA`` to one connection in chunks of :data:`SEND_CHUNK`, without waiting for replies, so the server
applies what was sent while the caller prepares the next updates (the lineage handler translates its batch chunk by
chunk between sends). :meth:`ApplyStream.finish` reads every reply (the one wait of the stream), redoes the updates
refused with ``NOSCRIPT`` (the server lost its script cache: restart, ``SCRIPT FLUSH``) and returns the outcomes in
the order sent. A stream is used once; until :meth:`~ApplyStream.finish` it holds its connection.

Errors as for the store (:func:`~pareis.store.redis_errors.translated`). Any error while sending or reading
disconnects the connection (replies may be left unread: the socket is never handed out again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import redis
from hiredis import pack_command

from pareis.store.lineage import LineageUpdate, Outcome
from pareis.store.lineage_redis_encoding import encode_update
from pareis.store.redis_errors import translated

SEND_CHUNK = 50
"""Updates per socket write of the stream."""
_OUTCOMES = {0: Outcome.STALE, 1: Outcome.APPLIED, 2: Outcome.UNCHANGED}


class ApplyStream:
    """One stream of updates on ``client``'s pool under ``prefix``; ``sha`` gives the apply script's SHA1 (loading it
    when needed), ``forget`` drops it after a ``NOSCRIPT``."""

    def __init__(self, client: redis.Redis, prefix: str, sha: Callable[[], str], forget: Callable[[], None]) -> None:
        self._redis = client
        self._prefix = prefix
        self._sha = sha
        self._forget = forget
        self._conn: Any = None
        self._sent: list[LineageUpdate] = []
        self._done = False

    def send(self, updates: Sequence[LineageUpdate]) -> None:
        """Encode and write ``updates`` (no wait for replies)."""
        if self._done:
            raise RuntimeError("send on a finished ApplyStream")
        if not updates:
            return
        with translated():
            sha = self._sha()
            if self._conn is None:
                self._conn = self._redis.connection_pool.get_connection()
            try:
                self._write(self._conn, sha, updates)
            except BaseException:
                self._drop()
                raise
        self._sent.extend(updates)

    def _write(self, conn: Any, sha: str, updates: Sequence[LineageUpdate]) -> None:
        prefix = self._prefix
        for start in range(0, len(updates), SEND_CHUNK):
            commands = []
            for u in updates[start : start + SEND_CHUNK]:
                version = "" if u.stamp.version is None else str(u.stamp.version)
                if u.facts is None:
                    deleted, facts, plan = "1", "", list[str]()
                else:
                    deleted, (facts, plan) = "0", encode_update(u.facts, prefix)
                commands.append(
                    ("EVALSHA", sha, 0, prefix, u.entity, u.aspect, version, u.stamp.time_ms, deleted, facts, *plan)
                )
            # hiredis's packer (a dependency: redis[hiredis]) called directly, without redis-py's per-argument
            # checks around it: half the cost. Its stub types the command as a 1-tuple.
            conn.send_packed_command([b"".join([pack_command(c) for c in commands])])  # type: ignore[arg-type]

    def finish(self) -> list[Outcome]:
        """The outcome of every update sent, in order; releases the connection."""
        if self._done:
            raise RuntimeError("finish on a finished ApplyStream")
        self._done = True
        if self._conn is None:
            return []
        with translated():
            results = self._replies()
            if any(isinstance(r, redis.exceptions.NoScriptError) for r in results):
                self._forget()
                redo = [i for i, r in enumerate(results) if isinstance(r, redis.ResponseError)]
                again = ApplyStream(self._redis, self._prefix, self._sha, self._forget)
                again.send([self._sent[i] for i in redo])
                for i, r in zip(redo, again._finish_raw(), strict=True):
                    results[i] = r
            for r in results:
                if isinstance(r, redis.ResponseError):
                    raise r
        return [_OUTCOMES[int(r)] for r in results]

    def _finish_raw(self) -> list[Any]:
        self._done = True
        return self._replies() if self._conn is not None else []

    def _replies(self) -> list[Any]:
        conn = self._conn
        results: list[Any] = []
        try:
            for _ in self._sent:
                try:
                    results.append(conn.read_response())
                except redis.ResponseError as error:
                    results.append(error)
        except BaseException:
            self._drop()
            raise
        self._redis.connection_pool.release(conn)
        self._conn = None
        return results

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._done = True
        if conn is not None:
            conn.disconnect()
            self._redis.connection_pool.release(conn)
