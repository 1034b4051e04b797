"""The epoch of the state Pareis keeps in Redis: a token stamped with it when it is first made, so that a Redis
that lost its data — flushed, restarted without persistence, a cluster primary back empty — is detected and never
trusted (DESIGN §5), and the acknowledgement of writes by replicas before a role commits what depends on them.

Keys: ``pareis:epoch`` on a standalone server; on Redis Cluster one per slot, ``pareis:epoch:{<tag>}`` with a hash
tag of each of the 16,384 slots (:func:`slot_tags`), so that every primary holds the epoch of the slots it serves
(losing one primary's data is seen; a slot moved by a resharding takes its key along). Value ``<token> <ms>``, or
``lost <token> <ms>`` once a loss was seen: every later start refuses until the state is rebuilt.

* :meth:`Epoch.open` (a role's start, a reader's first read): the key of one slot per primary read. All equal: that
  is the epoch. None anywhere: a *fresh* Redis when it holds no ``pareis:`` key — a role stamps a new epoch on every
  slot. One value on some primaries and none yet on the others, and no ``pareis:`` key: another process's stamp under
  way (roles start together) — a role finishes it with the same value, a reader takes it as fresh. Any other case is
  a loss (:class:`IndexLost`): keys without an epoch (data lost and partly written again, or written by a Pareis from
  before epochs), a ``lost`` mark, or primaries that disagree.
* :meth:`Epoch.check` (every batch of every role, before every commit, readiness, every read): the same keys equal
  the epoch opened; anything else marks the loss (on every slot without a key) and raises :class:`IndexLost`.
* :meth:`Epoch.acknowledged` (before a commit): a write and ``WAIT <replicas> <timeout>`` on every primary, then
  :meth:`check`, in one round trip per primary.
* :meth:`Epoch.rebuilt` (``pareis bootstrap``): a new epoch over a lost or fresh one; an intact one is kept (running
  roles would otherwise take a catch-up load for a loss).

A Redis emptied while every Pareis process is down, and then found empty, is fresh: nothing is left that says
otherwise. That is why Pareis runs Redis with persistence (``redis.require_persistence``) and replicas.
"""

from __future__ import annotations

import functools
import secrets
import time
from collections.abc import Callable

import redis
from redis.cluster import RedisCluster

from pareis.errors import Fatal, Retriable
from pareis.store.redis_errors import text, translated
from pareis.store.redis_servers import SLOTS, AnyRedis, Servers, slot_of

KEY = "pareis:epoch"
SYNC_KEY = "pareis:sync"
DATA = "pareis:*"
"""Pareis's own keys (the stores' default prefixes): what makes a Redis without an epoch not fresh."""
LOST = "lost"
REBUILD = (
    "stop every role, empty the Redis (FLUSHALL on each primary) and rebuild it: `pareis bootstrap --datahub <GMS URL> "
    "--redis <URL>`, or the lineage and assertions roles replaying the change log from the earliest offsets"
)


class IndexLost(Fatal):
    """The Redis lost data since Pareis's state was made in it (or holds data no epoch vouches for): answers from
    it would come from a partial index. One line naming the loss and the rebuild."""


@functools.cache
def slot_tags() -> tuple[str, ...]:
    """A hash tag per cluster slot (``slot_tags()[s]`` hashes to slot ``s``): the shortest base-36 numbers that do."""
    found: dict[int, str] = {}
    n = 0
    while len(found) < SLOTS:
        tag = _base36(n)
        found.setdefault(slot_of(tag), tag)
        n += 1
    return tuple(found[s] for s in range(SLOTS))


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = digits[n % 36]
    while n >= 36:
        n //= 36
        out = digits[n % 36] + out
    return out


class Epoch:
    """The epoch of the Redis ``client`` reaches (standalone or cluster), named ``where`` in messages (its URL
    without password)."""

    def __init__(self, client: AnyRedis, where: str, clock: Callable[[], float] = time.time) -> None:
        self._servers = Servers(client)
        self._where = where
        self._clock = clock
        self.token: str | None = None
        """The epoch opened; None before :meth:`open`, or after it found a fresh Redis and did not stamp it."""
        self._anchors: tuple[int, dict[str, int]] | None = None

    # --- reading -------------------------------------------------------------------------------------------------
    def open(self, *, stamp: bool = True) -> str | None:
        """The epoch (see the module docstring); on a fresh Redis a new one when ``stamp`` (a role), else None (a
        reader: it writes nothing). :class:`IndexLost` on a loss."""
        with translated():
            found = self._read()
            values = set(found.values())
            if values == {None}:
                if self._holds_data():
                    raise IndexLost(
                        f"redis at {self._where} holds Pareis keys but no epoch: its data was lost and partly written "
                        f"again, or it was written by a Pareis from before epochs; {REBUILD}"
                    )
                self.token = self._stamp(_new_token(self._clock)) if stamp else None
                return self.token
            begun = self._stamping(found)
            if begun is not None:  # another process's stamp under way: a role finishes it, a reader waits for it
                self.token = self._stamp(begun) if stamp else None
                return self.token
            self._refuse_unless_one(found)
            self.token = _token(next(iter(values)))
            return self.token

    def check(self) -> None:
        """Raise :class:`IndexLost` (after marking the loss) unless every primary still holds the epoch opened (a
        reader that opened a fresh Redis takes the epoch a role stamped since); Retriable when Redis is down."""
        with translated():
            self._verify(self._read())

    def acknowledged(self, replicas: int, timeout_ms: int) -> None:
        """Every write made so far acknowledged by ``replicas`` replicas of every primary (``WAIT``; nothing waited
        for when 0), then :meth:`check`; one round trip per primary. Retriable when fewer acknowledge in time."""
        if replicas <= 0:
            self.check()
            return
        with translated():
            anchors = self._anchor_slots()
            commands: list[tuple[object, ...]] = []
            slots: list[int] = []
            for slot in anchors.values():
                commands.append(("INCR", self._key(SYNC_KEY, slot)))
                commands.append(("WAIT", replicas, timeout_ms))
                commands.append(("GET", self._key(KEY, slot)))
                slots += [slot] * 3
            replies = self._servers.exchange(commands, slots if self._servers.cluster else None)
            for i, node in enumerate(anchors):
                acknowledged = int(replies[3 * i + 1])
                if acknowledged < replicas:
                    raise Retriable(
                        f"redis at {self._where}: {acknowledged} of {replicas} replicas of {node} acknowledged the "
                        f"writes within {timeout_ms} ms"
                    )
            self._verify({node: replies[3 * i + 2] for i, node in enumerate(anchors)})

    # --- writing -------------------------------------------------------------------------------------------------
    def rebuilt(self) -> str:
        """After a rebuild: the epoch when it is intact, else a new one over every slot (a ``lost`` mark
        included)."""
        with translated():
            found = self._read()
            values = set(found.values())
            if len(values) == 1 and None not in values and not text(next(iter(values))).startswith(LOST):
                self.token = _token(next(iter(values)))
                return self.token
            self.token = self._stamp(_new_token(self._clock), overwrite=True)
            return self.token

    # --- helpers -------------------------------------------------------------------------------------------------
    def _verify(self, found: dict[str, object]) -> None:
        if self.token is None:  # a reader of a fresh Redis: a role may have stamped it since
            if set(found.values()) != {None} and self._stamping(found) is None:
                self._refuse_unless_one(found)
                self.token = _token(next(iter(found.values())))
            return
        lost = sorted(node for node, value in found.items() if value is None or _token(value) != self.token)
        if lost:
            self._mark_lost()
            raise IndexLost(
                f"redis at {self._where} lost its data (epoch {self.token} gone from {', '.join(lost)}): Pareis will "
                f"not answer from a partial index; {REBUILD}"
            )

    def _stamping(self, found: dict[str, object]) -> str | None:
        """The epoch value another process is stamping on a fresh Redis, when ``found`` is such a stamp under way:
        one value (no ``lost`` mark) on some primaries, none yet on the others (a stamp sets every slot, one primary's
        after another), and no Pareis key besides the epoch's. A primary that lost its data looks the same, but then
        nothing was written that it could have lost. None: anything else."""
        values = {text(v) for v in found.values() if v is not None}
        if None not in found.values() or len(values) != 1:
            return None
        value = next(iter(values))
        if value.startswith(LOST) or self._holds_data():
            return None
        return value

    def _refuse_unless_one(self, found: dict[str, object]) -> None:
        values = {None if v is None else text(v) for v in found.values()}
        marked = sorted(v for v in values if v is not None and v.startswith(LOST))
        if marked:
            raise IndexLost(f"redis at {self._where} lost its data (marked: {marked[0]}); {REBUILD}")
        if len(values) > 1:
            missing = sorted(node for node, value in found.items() if value is None)
            self._mark_lost()
            raise IndexLost(
                f"redis at {self._where} lost data on {', '.join(missing) or 'some primaries'} (their epoch differs "
                f"from the others'): Pareis will not answer from a partial index; {REBUILD}"
            )

    def _read(self) -> dict[str, object]:
        """The epoch key of one slot per primary (the standalone server's one key), by primary."""
        anchors = self._anchor_slots()
        replies = self._servers.exchange(
            [("GET", self._key(KEY, slot)) for slot in anchors.values()],
            list(anchors.values()) if self._servers.cluster else None,
        )
        return dict(zip(anchors, replies, strict=True))

    def _anchor_slots(self) -> dict[str, int]:
        """Each primary's first slot (``{server: 0}`` standalone), recomputed when the slot map changed."""
        client = self._servers.client
        if not isinstance(client, RedisCluster):
            return {self._servers.nodes()[0][0]: 0}
        cache = client.nodes_manager.slots_cache
        if self._anchors is None or self._anchors[0] != id(cache):
            firsts: dict[str, int] = {}
            for slot in range(SLOTS):
                owners = cache.get(slot)
                if not owners:
                    raise redis.exceptions.SlotNotCoveredError(f"slot {slot} is not served by any node of the cluster")
                firsts.setdefault(owners[0].name, slot)
            self._anchors = (id(cache), firsts)
        return self._anchors[1]

    def _key(self, name: str, slot: int) -> str:
        return f"{name}:{{{slot_tags()[slot]}}}" if self._servers.cluster else name

    def _every_slot(self) -> list[int]:
        return list(range(SLOTS)) if self._servers.cluster else [0]

    def _stamp(self, token: str, *, overwrite: bool = False) -> str:
        """``token`` on every slot (``SET NX`` unless ``overwrite``: concurrent stampers agree on the first one's)."""
        every = self._every_slot()
        first = self._key(KEY, every[0])
        if overwrite:
            self._servers.client.set(first, token)
        else:
            self._servers.client.set(first, token, nx=True)
            token = text(self._servers.client.get(first))
        rest = every[1:]
        if rest:
            self._servers.exchange(
                [("SET", self._key(KEY, s), token, *(() if overwrite else ("NX",))) for s in rest], rest
            )
        return _token(token)

    def _mark_lost(self) -> None:
        """``lost <epoch> <ms>`` on every slot whose key is gone, so that every later start refuses too."""
        mark = f"{LOST} {self.token} {int(self._clock() * 1000)}"
        every = self._every_slot()
        self._servers.exchange(
            [("SET", self._key(KEY, s), mark, "NX") for s in every], every if self._servers.cluster else None
        )

    def _holds_data(self) -> bool:
        """Whether any primary holds a Pareis key (the epoch's own aside)."""
        for client in self._servers.primaries():
            for key in client.scan_iter(match=DATA, count=1000):
                if not text(key).startswith((KEY, SYNC_KEY)):
                    return True
        return False


def _new_token(clock: Callable[[], float]) -> str:
    return f"{secrets.token_hex(8)} {int(clock() * 1000)}"


def _token(value: object) -> str:
    """The token of an epoch value (``<token> <ms>``), or the whole ``lost …`` mark."""
    raw = text(value)
    return raw if raw.startswith(LOST) else raw.split(" ", 1)[0]
