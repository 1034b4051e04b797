"""The Redis lineage store's write stream (layout 3, :mod:`pareis.store.lineage_redis`): updates claimed as they
come, their moves made once all are claimed.

An update's writes span several nodes' keys — on Redis Cluster, several slots and servers — so it is applied in
three steps, each a batch of scripts (:mod:`pareis.store.lineage_redis_script`) sent packed to every server at
once:

1. **claim**, in the entity's home, as :meth:`ApplyStream.send` is given updates (chunks of :data:`SEND_CHUNK`,
   streamed: the servers work while the caller translates the next ones): stale and unchanged updates end here,
   and so does a first write whose every move is in the entity's own home (a ``schemaMetadata``: one script);
   any other becomes its record's pending apply, with a sequence number;
2. **the other homes' moves** (:func:`~pareis.store.lineage_redis_encoding.plan` of the record before and the
   update), each once per sequence number: a redo after a crash, or a second writer finishing the same apply,
   skips the homes that have it;
3. **finalize**, in the entity's home: its own moves, and the pending apply becomes the record.

A crash between the steps leaves the apply pending; the next claim of that record (the same update redone from
the change log, or a later one) finishes it first. Every step is idempotent, so a server failing over, a script
lost (``NOSCRIPT``) or a slot moved redoes a step (:meth:`~pareis.store.redis_servers.Servers.exchange`).
Readers may see one update's moves in one home and not yet in another (cluster or not, a lookup is not a
snapshot of the whole index either way); the writer's replacement semantics hold.

Errors as for the store (:func:`~pareis.store.redis_errors.translated`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import redis

from pareis.contracts.lineage import Facts
from pareis.core.graph import Attr
from pareis.store.lineage import LineageUpdate, Outcome
from pareis.store.lineage_redis_encoding import (
    HomeWrites,
    decode_body,
    encode_body,
    escaped,
    plan,
    record_id,
    spelled,
    unescaped,
)
from pareis.store.lineage_redis_script import CLAIM, DELTA, FINALIZE
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import Servers, sha_of, slot_of

SEND_CHUNK = 50
"""Updates per socket write of the claims."""
_CLAIM, _DELTA, _FINALIZE = sha_of(CLAIM), sha_of(DELTA), sha_of(FINALIZE)
SCRIPTS = {_CLAIM: CLAIM, _DELTA: DELTA, _FINALIZE: FINALIZE}
_OUTCOMES = {0: Outcome.STALE, 1: Outcome.APPLIED, 2: Outcome.UNCHANGED}
_REDO = (redis.exceptions.NoScriptError, redis.exceptions.AskError, redis.exceptions.TryAgainError)


class _Update:
    """One update on its way: its record's keys, body and first-write plan."""

    def __init__(self, update: LineageUpdate, keys: Callable[[str, str], str], cluster: bool) -> None:
        self.update = update
        entity = update.entity
        self.tag = spelled(entity)
        self.slot = slot_of(self.tag) if cluster else 0
        self.record = keys(entity, "r:" + update.aspect)
        self.pending = keys(entity, "p:" + update.aspect)
        facts = update.facts
        self.body = "" if facts is None else encode_body(facts)
        self.attrs = "" if facts is None else _attrs_blob(facts)
        self.first = plan(entity, None, facts)

    def claim(self, keys: Callable[[str, str], str]) -> tuple[Any, ...]:
        u = self.update
        version = "" if u.stamp.version is None else str(u.stamp.version)
        deleted = "1" if u.facts is None else "0"
        head = (_CLAIM, 0, version, u.stamp.time_ms, deleted, self.body, self.attrs)
        own = self.first.get(u.entity)
        if set(self.first) <= {u.entity}:  # planned whole in the entity's home: one script if it is a first write
            data = [keys(u.entity, s) for s in own.suffixes()] if own is not None else []
            ops = own.ops(3) if own is not None else []
            return ("EVALSHA", _CLAIM, 2 + len(data), self.record, self.pending, *data, *head[2:], "f", *ops)
        return ("EVALSHA", _CLAIM, 2, self.record, self.pending, *head[2:], "")


class ApplyStream:
    """One stream of updates into the store's servers under ``keys`` (``(node, suffix) → key``); used once."""

    def __init__(self, servers: Servers, keys: Callable[[str, str], str]) -> None:
        self._servers = servers
        self._keys = keys
        self._updates: list[_Update] = []
        self._stream = servers.open_stream()
        self._done = False

    def send(self, updates: Sequence[LineageUpdate]) -> None:
        """Plan and claim ``updates`` (no wait for replies until :meth:`finish`)."""
        if self._done:
            raise RuntimeError("send on a finished ApplyStream")
        cluster = self._servers.cluster
        for start in range(0, len(updates), SEND_CHUNK):
            chunk = [_Update(u, self._keys, cluster) for u in updates[start : start + SEND_CHUNK]]
            with translated():
                self._stream.send([u.claim(self._keys) for u in chunk], [u.slot for u in chunk])
            self._updates.extend(chunk)

    def finish(self) -> list[Outcome]:
        """The outcome of every update sent, in order."""
        if self._done:
            raise RuntimeError("finish on a finished ApplyStream")
        self._done = True
        if not self._updates:
            return []
        updates = self._updates
        with translated():
            replies = self._stream.replies()
            if any(isinstance(r, _REDO) for r in replies) or any(
                isinstance(r, redis.exceptions.ClusterDownError) for r in replies
            ):
                replies = self._servers.exchange([u.claim(self._keys) for u in updates], [u.slot for u in updates])
            for r in replies:
                if isinstance(r, redis.ResponseError):
                    raise r
            outcomes: list[Outcome | None] = [None] * len(updates)
            todo = list(range(len(updates)))
            while todo:
                todo = self._settle(updates, todo, replies, outcomes)
                if todo:
                    again = [updates[i] for i in todo]
                    got = self._servers.exchange([u.claim(self._keys) for u in again], [u.slot for u in again])
                    replies = [None] * len(updates)
                    for i, r in zip(todo, got, strict=True):
                        replies[i] = r
        return [o if o is not None else Outcome.APPLIED for o in outcomes]

    def _settle(
        self, updates: list[_Update], todo: list[int], replies: list[Any], outcomes: list[Outcome | None]
    ) -> list[int]:
        """Finish the claimed updates of ``todo`` (and the applies found pending in their way); the updates to claim
        again (after another apply of their record was finished)."""
        deltas: list[tuple[Any, ...]] = []
        delta_slots: list[int] = []
        finals: list[tuple[Any, ...]] = []
        final_slots: list[int] = []
        again: list[int] = []
        finished: set[tuple[str, int]] = set()
        for i in todo:
            u, reply = updates[i], replies[i]
            if not isinstance(reply, list):
                outcomes[i] = _OUTCOMES[int(reply)]
                continue
            code, seq = int(reply[0]), int(reply[1])
            if code == 3 and (u.record, seq) in finished:  # the same update twice in the batch: the second is a no-op
                outcomes[i] = Outcome.UNCHANGED
                continue
            if code == 3:
                before = _facts(reply[2])
                writes = u.first if before is None else plan(u.update.entity, before, u.update.facts)
                outcomes[i] = Outcome.APPLIED
            else:  # another apply of this record is pending: finish it, then claim this update again
                again.append(i)
                pending = reply_text(reply[3])
                if (u.record, seq) in finished:
                    continue
                writes = plan(u.update.entity, _facts(reply[2]), _facts(pending, reply_text(reply[4])))
            finished.add((u.record, seq))
            self._moves(u, seq, writes, deltas, delta_slots, finals, final_slots)
        self._servers.exchange(deltas, delta_slots)
        self._servers.exchange(finals, final_slots)
        return again

    def _moves(
        self,
        u: _Update,
        seq: int,
        writes: dict[str, HomeWrites],
        deltas: list[tuple[Any, ...]],
        delta_slots: list[int],
        finals: list[tuple[Any, ...]],
        final_slots: list[int],
    ) -> None:
        entity, keys, cluster = u.update.entity, self._keys, self._servers.cluster
        rid = record_id(entity, u.update.aspect)
        for home, moves in writes.items():
            if home == entity:
                continue
            suffixes = moves.suffixes()
            if not suffixes:
                continue
            data = [keys(home, s) for s in suffixes]
            deltas.append(("EVALSHA", _DELTA, 1 + len(data), keys(home, "m"), *data, rid, seq, *moves.ops(2)))
            delta_slots.append(slot_of(spelled(home)) if cluster else 0)
        own = writes.get(entity)
        data = [keys(entity, s) for s in own.suffixes()] if own is not None else []
        ops = own.ops(3) if own is not None else []
        finals.append(("EVALSHA", _FINALIZE, 2 + len(data), u.record, u.pending, *data, seq, *ops))
        final_slots.append(u.slot)


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
