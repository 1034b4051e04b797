"""The exposure index in Redis (:mod:`pareis.store.exposure` states the rules).

Keys (``P`` = prefix, default ``pareis:exposure:``; ``{x}`` is the Redis Cluster hash tag every key shares, so
that the scripts below stay on one slot)::

    P{x}gen          STRING  the lineage generation (INCR by the lineage role)
    P{x}seq          STRING  the last version number handed out
    P{x}cur          STRING  "<version> <generation> <computed_at_ms>" of the current version
    P{x}prev         STRING  the version before it (kept readable for readers in flight)
    P{x}d:<version>  HASH    dataset URN → its entry (:func:`pareis.core.exposure_index.encode`)
    P{x}i:<version>  HASH    incident URN → its entry (:meth:`~pareis.core.exposure_index.IncidentColumns.encode`)

A publish writes ``d:`` and ``i:`` of a new version in pipelined chunks, then one script makes it current (unless
the current version is of a newer generation: then the new keys are dropped), keeps the old one as ``prev`` and
unlinks the one before (the script is given the version ``prev`` held when it was sent, and redone if that changed
meanwhile: every key it touches is named). A read is two round trips: the heads, then one ``HMGET`` per hash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pareis.core.exposure_index import DatasetExposure, IncidentColumns, decode, encode
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
    redis.call('UNLINK', KEYS[3], KEYS[4])
    return 0
  end
  if prev and prev ~= v then
    redis.call('UNLINK', KEYS[5], KEYS[6])
  end
  redis.call('SET', KEYS[2], v)
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[5])
return 1
"""
"""KEYS: cur, prev, the new version's d: and i:, the prev version's d: and i: (as ``prev`` held ``ARGV[4]`` when
sent); ARGV: version, generation, cur and prev as read before, computed_at_ms. -1: cur or prev moved meanwhile
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
    ) -> ExposureVersion | None:
        with translated():
            version = int(self._redis.incr(self._seq))
            for key, items in (
                (f"{self._prefix}d:{version}", [(d, encode(e)) for d, e in sorted(entries.items())]),
                (f"{self._prefix}i:{version}", [(i.urn, i.encode()) for i in incidents]),
            ):
                pipe = self._redis.pipeline(transaction=False)
                for start in range(0, len(items), CHUNK):
                    pipe.hset(key, mapping=dict(items[start : start + CHUNK]))
                    if len(pipe) >= 8:
                        pipe.execute()
                pipe.execute()
            while True:
                cur, prev = (reply_text(v) if v is not None else "" for v in self._redis.mget([self._cur, self._prev]))
                new = [f"{self._prefix}{kind}:{version}" for kind in ("d", "i")]
                old = [f"{self._prefix}{kind}:{prev or version}" for kind in ("d", "i")]
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

    def read(self, datasets: Iterable[str], incidents: Iterable[str] = ()) -> ExposureRead:
        names = sorted(set(datasets))
        urns = sorted(set(incidents))
        with translated():
            raw_cur, raw_gen = self._redis.mget([self._cur, self._gen])
            head = _head(raw_cur)
            generation = int(raw_gen) if raw_gen is not None else 0
            if head is None:
                return ExposureRead(None, generation)
            pipe = self._redis.pipeline(transaction=False)
            for start in range(0, len(names), CHUNK):
                pipe.hmget(f"{self._prefix}d:{head.version}", names[start : start + CHUNK])
            if urns:
                pipe.hmget(f"{self._prefix}i:{head.version}", urns)
            replies = pipe.execute() if names or urns else []
        texts = [t for reply in replies[: len(replies) - (1 if urns else 0)] for t in reply]
        found = replies[-1] if urns else []
        try:
            entries = {d: decode(d, t) for d, t in zip(names, texts, strict=True) if t is not None}
            kept = {u: IncidentColumns.decode(u, t) for u, t in zip(urns, found, strict=True) if t is not None}
        except ValueError as exc:
            raise Fatal(f"corrupt exposure index entry: {exc}") from exc
        return ExposureRead(head, generation, entries, kept)

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
