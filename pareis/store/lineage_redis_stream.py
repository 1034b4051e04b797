"""The Redis lineage store's write stream (layout 3, :mod:`pareis.store.lineage_redis`): updates claimed as they
come, their moves made while the next ones are claimed.

An update's writes span several nodes' keys — on Redis Cluster, several slots and servers — so it is applied in
three steps, each a script (:mod:`pareis.store.lineage_redis_script`) in one node's slot:

1. **claim**, in the entity's home: stale and unchanged updates end here, and so does a first write whose every
   move is in the entity's own home (a ``schemaMetadata``: one script); any other becomes its record's pending apply,
   with a sequence number;
2. **the other homes' moves** (:func:`~pareis.store.lineage_redis_encoding.plan` of the record before and the
   update), each once per sequence number: a redo after a crash, or a second writer finishing the same apply,
   skips the homes that have it;
3. **finalize**, in the entity's home, once every other home acknowledged its moves: the entity's own moves, and
   the pending apply becomes the record.

The steps are pipelined over chunks of :data:`SEND_CHUNK` updates on one connection per server
(:class:`~pareis.store.redis_servers.Stream`): :meth:`ApplyStream.send` claims a chunk, then reads the previous
chunk's claims and sends its moves, and sends the finalizes of the chunk before that, whose moves were acknowledged
meanwhile — the servers work while the caller translates. :meth:`ApplyStream.finish` drains the pipeline (the only
wait), then claims again the updates that found another apply of their record pending (finished first, above).

A crash between the steps leaves the apply pending; the next claim of that record (the same update redone from the
change log, or a later one) finishes it first. Every step is idempotent, so a reply saying a script was lost
(``NOSCRIPT``) or a slot moved redoes that command (:meth:`~pareis.store.redis_servers.Servers.exchange`). Readers
may see one update's moves in one home and not yet in another (cluster or not, a lookup is not a snapshot of the
whole index either way); the writer's replacement semantics hold.

Errors as for the store (:func:`~pareis.store.redis_errors.translated`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import redis

from pareis.contracts.lineage import Facts
from pareis.core.graph import Attr
from pareis.store.lineage import LineageUpdate, Outcome
from pareis.store.lineage_redis_encoding import (
    HomeWrites,
    Table,
    decode_body,
    encode_table,
    escaped,
    plan,
    record_id,
    spelled,
    unescaped,
)
from pareis.store.lineage_redis_script import CLAIM, DELTA, FINALIZE
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import Servers, Stream, sha_of, slot_of

SEND_CHUNK = 50
"""Updates per claim batch."""
_CLAIM, _DELTA, _FINALIZE = sha_of(CLAIM), sha_of(DELTA), sha_of(FINALIZE)
SCRIPTS = {_CLAIM: CLAIM, _DELTA: DELTA, _FINALIZE: FINALIZE}
_OUTCOMES = {0: Outcome.STALE, 1: Outcome.APPLIED, 2: Outcome.UNCHANGED, 5: Outcome.REPEATED}
_REDO = (
    redis.exceptions.NoScriptError,
    redis.exceptions.AskError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ClusterDownError,
)
"""Error replies after which a command is sent again (by :meth:`Servers.exchange`, which fixes the cause first)."""
Commands = list[tuple[Any, ...]]


class _Update:
    """One update on its way: its record's keys, body and first-write plan."""

    def __init__(self, at: int, update: LineageUpdate, keys: Callable[[str, str], str], cluster: bool) -> None:
        self.at = at
        self.update = update
        entity = update.entity
        self.tag = spelled(entity)
        self.slot = slot_of(self.tag) if cluster else 0
        self.record = keys(self.tag, "r:" + update.aspect)
        self.pending = keys(self.tag, "p:" + update.aspect)
        facts = update.facts
        if facts is None:
            self.body, self.attrs, self.first = "", "", plan(entity, None, None)
        else:
            table = Table(facts)
            self.body, self.attrs, self.first = (
                encode_table(table),
                _attrs_blob(facts),
                plan(entity, None, facts, table),
            )

    def claim(self, keys: Callable[[str, str], str]) -> tuple[Any, ...]:
        u = self.update
        version = "" if u.stamp.version is None else str(u.stamp.version)
        argv = (version, u.stamp.time_ms, "1" if u.facts is None else "0", self.body, self.attrs)
        if set(self.first) <= {u.entity}:  # planned whole in the entity's home: one script if it is a first write
            own = self.first.get(u.entity)
            data = [keys(self.tag, s) for s in own.suffixes()] if own is not None else []
            ops = own.ops(3) if own is not None else []
            return ("EVALSHA", _CLAIM, 2 + len(data), self.record, self.pending, *data, *argv, "f", *ops)
        return ("EVALSHA", _CLAIM, 2, self.record, self.pending, *argv, "")


class _Moves:
    """The moves of a batch of claimed updates: the other homes' (``deltas``), then the finalizes."""

    def __init__(self) -> None:
        self.deltas: Commands = []
        self.delta_slots: list[int] = []
        self.finals: Commands = []
        self.final_slots: list[int] = []


class ApplyStream:
    """One stream of updates into the store's servers under ``keys`` (``(tag, suffix) → key``, the tag a home's
    :func:`~pareis.store.lineage_redis_encoding.spelled`); used once."""

    def __init__(self, servers: Servers, keys: Callable[[str, str], str]) -> None:
        self._servers = servers
        self._keys = keys
        self._stream: Stream = servers.open_stream()
        self._updates: list[_Update] = []
        self._outcomes: list[Outcome | None] = []
        self._again: list[int] = []
        """Updates that found another apply of their record pending: claimed again once the stream is drained."""
        self._claims: deque[tuple[int, Commands, list[int], list[_Update]]] = deque()
        self._moves: deque[tuple[int | None, Commands, list[int], _Moves]] = deque()
        self._finals: list[tuple[int, Commands, list[int]]] = []
        self._moved_applies: set[tuple[str, int]] = set()
        """(record, sequence) of the applies whose moves were made: one met again is not moved twice."""
        self._done = False

    def send(self, updates: Sequence[LineageUpdate]) -> None:
        """Plan and claim ``updates``; move what the servers claimed meanwhile (no wait but for replies already
        due)."""
        if self._done:
            raise RuntimeError("send on a finished ApplyStream")
        cluster = self._servers.cluster
        with translated(), self._aborting():
            for start in range(0, len(updates), SEND_CHUNK):
                chunk = [
                    _Update(len(self._updates) + i, u, self._keys, cluster)
                    for i, u in enumerate(updates[start : start + SEND_CHUNK])
                ]
                self._updates += chunk
                self._outcomes += [None] * len(chunk)
                claims, slots = [u.claim(self._keys) for u in chunk], [u.slot for u in chunk]
                self._claims.append((self._stream.send(claims, slots), claims, slots, chunk))
            self._advance(keep=1)

    def finish(self) -> list[Outcome]:
        """The outcome of every update sent, in order."""
        if self._done:
            raise RuntimeError("finish on a finished ApplyStream")
        self._done = True
        with translated(), self._aborting():
            while self._claims or self._moves:
                self._advance(keep=0)
            for batch, commands, slots in self._finals:
                self._replies(batch, commands, slots)
            self._stream.close()
            while self._again:  # rare: their record had another apply pending, finished above
                again, self._again = [self._updates[i] for i in self._again], []
                claims, slots = [u.claim(self._keys) for u in again], [u.slot for u in again]
                moves = self._settle(again, self._servers.exchange(claims, slots))
                self._servers.exchange(moves.deltas, moves.delta_slots)
                self._servers.exchange(moves.finals, moves.final_slots)
        return [o if o is not None else Outcome.APPLIED for o in self._outcomes]

    @contextmanager
    def _aborting(self) -> Iterator[None]:
        """On any failure, let go of the stream's connections (their replies unread) and refuse further sends."""
        try:
            yield
        except BaseException:
            self._done = True
            self._stream.abort()
            raise

    def _advance(self, keep: int) -> None:
        """Send the finalizes of the moves sent before (reading their acknowledgements), then the moves of every
        claim batch but the last ``keep`` (reading their claims)."""
        while self._moves:
            batch, deltas, slots, moves = self._moves.popleft()
            if batch is not None:
                self._replies(batch, deltas, slots)
            if moves.finals:
                finals = self._stream.send(moves.finals, moves.final_slots)
                self._finals.append((finals, moves.finals, moves.final_slots))
        while len(self._claims) > keep:
            batch, claims, slots, chunk = self._claims.popleft()
            moves = self._settle(chunk, self._replies(batch, claims, slots))
            sent = self._stream.send(moves.deltas, moves.delta_slots) if moves.deltas else None
            self._moves.append((sent, moves.deltas, moves.delta_slots, moves))

    def _replies(self, batch: int, commands: Commands, slots: list[int]) -> list[Any]:
        """The replies of a batch sent on the stream; commands answered by a lost script or a moved slot are sent
        again (:meth:`Servers.exchange`); any other error reply is raised."""
        replies = self._stream.read(batch)
        redo = [i for i, r in enumerate(replies) if isinstance(r, _REDO)]
        if redo:
            again = self._servers.exchange([commands[i] for i in redo], [slots[i] for i in redo])
            for i, r in zip(redo, again, strict=True):
                replies[i] = r
        for r in replies:
            if isinstance(r, redis.ResponseError):
                raise r
        return replies

    def _settle(self, chunk: Sequence[_Update], replies: list[Any]) -> _Moves:
        """The moves of the claimed updates of ``chunk``, and of the applies found pending in their way; their
        outcomes noted."""
        moves = _Moves()
        for u, reply in zip(chunk, replies, strict=True):
            if not isinstance(reply, list):
                self._outcomes[u.at] = _OUTCOMES[int(reply)]
                continue
            code, seq = int(reply[0]), int(reply[1])
            if code == 3 and (u.record, seq) in self._moved_applies:  # the same update again in the stream: a no-op
                self._outcomes[u.at] = Outcome.REPEATED
                continue
            if code == 3:
                before = _facts(reply[2])
                writes = u.first if before is None else plan(u.update.entity, before, u.update.facts)
                self._outcomes[u.at] = Outcome.APPLIED
            else:  # another apply of this record is pending: finish it, then claim this update again
                self._again.append(u.at)
                if (u.record, seq) in self._moved_applies:
                    continue
                writes = plan(u.update.entity, _facts(reply[2]), _facts(reply[3], reply_text(reply[4])))
            self._moved_applies.add((u.record, seq))
            self._moved(u, seq, writes, moves)
        return moves

    def _moved(self, u: _Update, seq: int, writes: dict[str, HomeWrites], moves: _Moves) -> None:
        entity, keys, cluster = u.update.entity, self._keys, self._servers.cluster
        rid = record_id(entity, u.update.aspect)
        for home, writing in writes.items():
            if home == entity:
                continue
            suffixes = writing.suffixes()
            if not suffixes:
                continue
            tag = writing.tag
            data = [keys(tag, s) for s in suffixes]
            moves.deltas.append(("EVALSHA", _DELTA, 1 + len(data), keys(tag, "m"), *data, rid, seq, *writing.ops(2)))
            moves.delta_slots.append(slot_of(tag) if cluster else 0)
        own = writes.get(entity)
        data = [keys(u.tag, s) for s in own.suffixes()] if own is not None else []
        ops = own.ops(3) if own is not None else []
        moves.finals.append(("EVALSHA", _FINALIZE, 2 + len(data), u.record, u.pending, *data, seq, *ops))
        moves.final_slots.append(u.slot)


def _attrs_blob(facts: Facts) -> str:
    """The attributes of a pending apply, for whoever finishes it: ``name\\x1evalue`` entries ended by ``\\x1f``."""
    return "".join(f"{k}\x1e{escaped(v)}\x1f" for k, v in sorted((str(k), v) for k, v in facts.attrs.items()))


def _facts(record: Any, attrs: str = "") -> Facts | None:
    """The facts of a record as stored (``seq\\nversion\\ntime\\ndeleted\\nbody``; None: no record or a
    tombstone), with the attribute values of ``attrs`` (:func:`_attrs_blob`), or empty values: the plan of a
    withdrawal needs only the names."""
    if record is None or record is False:
        return None
    _, _, _, deleted, body = reply_text(record).split("\n", 4)
    if deleted == "1":
        return None
    edges, names = decode_body(body)
    values = dict(e.split("\x1e", 1) for e in attrs.split("\x1f")[:-1]) if attrs else {}
    return Facts(edges, {Attr(n): unescaped(values.get(n, "")) for n in names})
