"""The exposure index in Redis (:mod:`pareis.store.exposure` states the rules).

Keys (``P`` = prefix, default ``pareis:exposure:``; ``{x}`` is the Redis Cluster hash tag every key shares, so
that the scripts below stay on one slot)::

    P{x}gen          STRING  the lineage generation (INCR by the lineage role)
    P{x}seq          STRING  the last version number handed out
    P{x}cur          STRING  "<version> <generation> <computed_at_ms>" of the current version
    P{x}prev         STRING  the version before it (kept readable for readers in flight)
    P{x}d:<version>  HASH    dataset URN → its entry (:func:`pareis.core.exposure_index.encode`)
    P{x}i:<version>  HASH    incident URN → its entry (:meth:`~pareis.core.exposure_index.IncidentColumns.encode`)
    P{x}r:<version>  HASH    assertion URN → its radius (:meth:`~pareis.core.radii.AssertionRadius.encode`)

A publish writes ``d:``, ``i:`` and ``r:`` of a new version in pipelined chunks, then one script makes it current
(unless the current version is of a newer generation: then the new keys are dropped), keeps the old one as ``prev`` and
unlinks the one before (the script is given the version ``prev`` held when it was sent, and redone if that changed
meanwhile: every key it touches is named). A read is two round trips: the heads, then one ``HMGET`` per hash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pareis.core.exposure_index import DatasetExposure, IncidentColumns, decode, encode
from pareis.core.radii import AssertionRadius
from pareis.errors import Fatal
from pareis.store.exposure import ExposureRead, ExposureVersion
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import AnyRedis

DEFAULT_PREFIX = "pareis:exposure:"
CHUNK = 2_000

_FLIP = """
local cur = redis.call('GET', KEYS[1])
local prev = redis.call('GET', KEYS[2])
if (cur or '') ~= ARGV[3] or (prev or '') ~= ARGV[4] then return -1 end
if cur then
  local v, g = string.match(cur, '^(%d+) (%d+)')
  if tonumber(g) > tonumber(ARGV[2]) then
    redis.call('UNLINK', KEYS[3], KEYS[4], KEYS[5])
    return 0
  end
  if prev and prev ~= v then
    redis.call('UNLINK', KEYS[6], KEYS[7], KEYS[8])
  end
  redis.call('SET', KEYS[2], v)
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[5])
return 1
"""
"""KEYS: cur, prev, the new version's d:, i: and r:, the prev version's d:, i: and r: (as ``prev`` held ``ARGV[4]``
when sent); ARGV: version, generation, cur and prev as read before, computed_at_ms. -1: cur or prev moved meanwhile
(another publisher): read them again and redo."""

_ADD = """
local cur = redis.call('GET', KEYS[1])
if not cur or string.match(cur, '^(%d+)') ~= ARGV[1] then return 0 end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
return 1
"""


class RedisExposureIndex:
    """:class:`~pareis.store.exposure.ExposureIndex` on a Redis client the caller builds and owns."""

    def __init__(self, client: AnyRedis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._redis = client
        self._prefix = prefix + "{x}"
        self._gen, self._seq, self._cur, self._prev = (self._prefix + k for k in ("gen", "seq", "cur", "prev"))
        self._flip = client.register_script(_FLIP)
        self._add = client.register_script(_ADD)

    def touch(self) -> int:
        with translated():
            return int(self._redis.incr(self._gen))

    def generation(self) -> int:
        with translated():
            raw = self._redis.get(self._gen)
        return int(raw) if raw is not None else 0

    def current(self) -> ExposureVersion | None:
        with translated():
            raw = self._redis.get(self._cur)
        return _head(raw)

    def publish(
        self,
        generation: int,
        computed_at_ms: int,
        entries: Mapping[str, DatasetExposure],
        incidents: Iterable[IncidentColumns] = (),
        radii: Iterable[AssertionRadius] = (),
    ) -> ExposureVersion | None:
        with translated():
            version = int(self._redis.incr(self._seq))
            for key, items in (
                (f"{self._prefix}d:{version}", [(d, encode(e)) for d, e in sorted(entries.items())]),
                (f"{self._prefix}i:{version}", [(i.urn, i.encode()) for i in incidents]),
                (f"{self._prefix}r:{version}", [(r.assertion, r.encode()) for r in radii]),
            ):
                pipe = self._redis.pipeline(transaction=False)
                for start in range(0, len(items), CHUNK):
                    pipe.hset(key, mapping=dict(items[start : start + CHUNK]))
                    if len(pipe) >= 8:
                        pipe.execute()
                pipe.execute()
            while True:
                cur, prev = (reply_text(v) if v is not None else "" for v in self._redis.mget([self._cur, self._prev]))
                new = [f"{self._prefix}{kind}:{version}" for kind in ("d", "i", "r")]
                old = [f"{self._prefix}{kind}:{prev or version}" for kind in ("d", "i", "r")]
                made = self._flip(
                    keys=[self._cur, self._prev, *new, *old], args=[version, generation, cur, prev, computed_at_ms]
                )
                if int(made) >= 0:
                    break
        return ExposureVersion(version, generation, computed_at_ms) if int(made) else None

    def add_incidents(self, version: int, incidents: Iterable[IncidentColumns]) -> bool:
        args: list[str | int] = [version]
        for i in incidents:
            args += [i.urn, i.encode()]
        with translated():
            return bool(int(self._add(keys=[self._cur, f"{self._prefix}i:{version}"], args=args)))

    def read(self, datasets: Iterable[str], incidents: Iterable[str] = (), radii: Iterable[str] = ()) -> ExposureRead:
        asked = {kind: sorted(set(keys)) for kind, keys in (("d", datasets), ("i", incidents), ("r", radii))}
        with translated():
            raw_cur, raw_gen = self._redis.mget([self._cur, self._gen])
            head = _head(raw_cur)
            generation = int(raw_gen) if raw_gen is not None else 0
            if head is None:
                return ExposureRead(None, generation)
            pipe = self._redis.pipeline(transaction=False)
            for kind, keys in asked.items():
                for start in range(0, len(keys), CHUNK):
                    pipe.hmget(f"{self._prefix}{kind}:{head.version}", keys[start : start + CHUNK])
            replies = iter(pipe.execute() if any(asked.values()) else [])
            texts = {
                kind: [t for _ in range(0, len(keys), CHUNK) for t in next(replies)] for kind, keys in asked.items()
            }
        try:
            entries = {d: decode(d, t) for d, t in zip(asked["d"], texts["d"], strict=True) if t is not None}
            found = {
                u: IncidentColumns.decode(u, t) for u, t in zip(asked["i"], texts["i"], strict=True) if t is not None
            }
            kept = {
                a: AssertionRadius.decode(a, t) for a, t in zip(asked["r"], texts["r"], strict=True) if t is not None
            }
        except ValueError as exc:
            raise Fatal(f"corrupt exposure index entry: {exc}") from exc
        return ExposureRead(head, generation, entries, found, kept)

    def incident_urns(self) -> set[str]:
        head = self.current()
        if head is None:
            return set()
        with translated():
            return {reply_text(k) for k in self._redis.hkeys(f"{self._prefix}i:{head.version}")}


def _head(raw: object) -> ExposureVersion | None:
    if raw is None:
        return None
    try:
        version, generation, at = reply_text(raw).split(" ")
        return ExposureVersion(int(version), int(generation), int(at))
    except ValueError as exc:
        raise Fatal(f"corrupt exposure index head: {raw!r}") from exc
