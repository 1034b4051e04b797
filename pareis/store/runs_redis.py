"""The run history in Redis: two sorted sets per assertion, scored by timestamp, holding the runs' JSON.

Keys (``{…}`` is a Redis Cluster hash tag, so both sets of an assertion live on one slot and one script can
update them together)::

    <prefix>{<assertion>}:all       every run            ZSET  member = run JSON (sorted keys, UTF-8), score = ts
    <prefix>{<assertion>}:counting  SUCCESS and FAILURE  ZSET  same members
    <prefix>dataset:<dataset>       assertions run on it SET
    <prefix>operation:<dataset>     its data's change times  ZSET  member = score = time (ms)
    <prefix>failed                  datasets with a FAILURE  SET

Members are the runs themselves, so every query is one ``ZRANGEBYSCORE`` with no second lookup. Timestamps
are exact as scores up to 2**53 ms. Recording is a Lua script (check the timestamp, add to both sets; a duplicate
answers with the stored member) so a duplicate with different content can never reach the ``counting`` set. A
batch of runs is recorded in one packed round trip per server (:meth:`RedisRunHistory.record_many`): the dataset
sets and the ``failed`` set first, one ``SADD`` each, then one script call per run; every command is idempotent, so
the exchange may be redone after a failover.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

import orjson

from pareis.core.runs import AssertionRun, InvalidRun, ResultType
from pareis.errors import Fatal
from pareis.store.redis_errors import text as reply_text
from pareis.store.redis_errors import translated
from pareis.store.redis_servers import AnyRedis, Servers, key_slot, sha_of
from pareis.store.runs import check_range, ordered

DEFAULT_PREFIX = "pareis:runs:"

_RECORD = """
local found = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1], 'LIMIT', 0, 1)
if #found > 0 then return found[1] end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] == '1' then redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2]) end
return 1
"""
_RECORD_SHA = sha_of(_RECORD)


class RedisRunHistory:
    """:class:`~pareis.store.runs.RunHistory` on a Redis client the caller builds and owns."""

    def __init__(self, client: AnyRedis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._redis = client
        self._servers = Servers(client, {_RECORD_SHA: _RECORD})
        self._prefix = prefix

    def _many(self, commands: Sequence[tuple[object, ...]]) -> list[Any]:
        """The replies to single-key ``commands`` (key second), one packed round trip per server."""
        slots = [key_slot(str(c[1])) for c in commands] if self._servers.cluster else None
        return self._servers.exchange(commands, slots)

    def record(self, run: AssertionRun) -> bool:
        return self.record_many([run])[0] is None

    def record_many(self, runs: Sequence[AssertionRun]) -> list[AssertionRun | None]:
        if not runs:
            return []
        by_dataset: dict[str, set[str]] = {}
        failed: set[str] = set()
        for run in runs:
            by_dataset.setdefault(run.dataset, set()).add(run.assertion)
            if run.result is ResultType.FAILURE:
                failed.add(run.dataset)
        # The indexes first and unconditionally: a retry after a crash between them and the runs still adds them.
        commands: list[tuple[object, ...]] = [
            ("SADD", self._dataset_key(d), *sorted(a)) for d, a in sorted(by_dataset.items())
        ]
        if failed:
            commands.append(("SADD", self._prefix + "failed", *sorted(failed)))
        first = len(commands)
        for run in runs:
            member = orjson.dumps(run.to_json(), option=orjson.OPT_SORT_KEYS)
            keys = (self._key(run.assertion, "all"), self._key(run.assertion, "counting"))
            commands.append(("EVALSHA", _RECORD_SHA, 2, *keys, run.timestamp_ms, member, int(run.counts)))
        # Each command's first key decides its server (the script's two keys share their hash tag).
        slots = [key_slot(str(c[3 if c[0] == "EVALSHA" else 1])) for c in commands] if self._servers.cluster else None
        with translated():
            replies = self._servers.exchange(commands, slots)
        return [
            None if reply == 1 else self._decode(self._key(run.assertion, "all"), reply)
            for run, reply in zip(runs, replies[first:], strict=True)
        ]

    def get(self, assertion: str, timestamp_ms: int) -> AssertionRun | None:
        found = self.runs(assertion, timestamp_ms, timestamp_ms)
        return found[0] if found else None

    def latest(self, assertion: str, at_ms: int, *, counting: bool = False) -> AssertionRun | None:
        key = self._key(assertion, "counting" if counting else "all")
        with translated():
            found = self._redis.zrevrangebyscore(key, at_ms, "-inf", start=0, num=1)
        return self._decode(key, found[0]) if found else None

    def runs(self, assertion: str, start_ms: int | None = None, end_ms: int | None = None) -> list[AssertionRun]:
        check_range(start_ms, end_ms)
        key = self._key(assertion, "all")
        with translated():
            found = self._redis.zrangebyscore(key, _bound(start_ms, "-inf"), _bound(end_ms, "+inf"))
        return [self._decode(key, member) for member in found]

    def datasets(self) -> list[str]:
        """A ``SCAN`` over the dataset sets: linear in the index's key count, for whole-index read-side questions."""
        head = self._dataset_key("")
        with translated():
            keys = self._redis.scan_iter(match=_glob_escape(head) + "*", count=1000)
            return sorted({reply_text(k)[len(head) :] for k in keys})

    def failed_datasets(self) -> list[str]:
        with translated():
            members = self._redis.smembers(self._prefix + "failed")
        return sorted(reply_text(m) for m in members)

    def assertions_of(self, dataset: str) -> list[str]:
        with translated():
            members = self._redis.smembers(self._dataset_key(dataset))
        return sorted(reply_text(m) for m in members)

    def timeline(self, assertions: Iterable[str], floor_ms: int | None) -> list[AssertionRun]:
        return self.timelines([(set(assertions), floor_ms)])[0]

    def timelines(self, queries: Sequence[tuple[Collection[str], int | None]]) -> list[list[AssertionRun]]:
        commands: list[tuple[object, ...]] = []
        keys: list[str] = []
        ends: list[int] = []
        for assertions, floor_ms in queries:
            for assertion in sorted(set(assertions)):
                keys.append(self._key(assertion, "all"))
                commands.append(("ZRANGEBYSCORE", keys[-1], _bound(floor_ms, "-inf"), "+inf"))
                if floor_ms is not None:
                    keys.append(self._key(assertion, "counting"))
                    commands.append(("ZREVRANGEBYSCORE", keys[-1], f"({floor_ms}", "-inf", "LIMIT", 0, 1))
            ends.append(len(commands))
        with translated():
            replies = self._many(commands)
        out: list[list[AssertionRun]] = []
        start = 0
        for end in ends:
            found = zip(keys[start:end], replies[start:end], strict=True)
            out.append(ordered(self._decode(key, m) for key, members in found for m in members))
            start = end
        return out

    def latest_of(
        self, assertions: Iterable[str], at_ms: int
    ) -> dict[str, tuple[AssertionRun | None, AssertionRun | None]]:
        names = sorted(set(assertions))
        if not names:
            return {}
        commands = [
            ("ZREVRANGEBYSCORE", self._key(name, kind), at_ms, "-inf", "LIMIT", 0, 1)
            for name in names
            for kind in ("all", "counting")
        ]
        with translated():
            replies = self._many(commands)
        out: dict[str, tuple[AssertionRun | None, AssertionRun | None]] = {}
        for i, name in enumerate(names):
            got = [
                self._decode(self._key(name, kind), found[0]) if found else None
                for kind, found in zip(("all", "counting"), replies[2 * i : 2 * i + 2], strict=True)
            ]
            out[name] = (got[0], got[1])
        return out

    def assertions_by_dataset(self, datasets: Iterable[str]) -> dict[str, list[str]]:
        names = sorted(set(datasets))
        if not names:
            return {}
        with translated():
            replies = self._many([("SMEMBERS", self._dataset_key(name)) for name in names])
        return {d: sorted(reply_text(m) for m in members) for d, members in zip(names, replies, strict=True)}

    def last_operations(self, datasets: Iterable[str], at_ms: int) -> dict[str, int]:
        names = sorted(set(datasets))
        if not names:
            return {}
        with translated():
            replies = self._many(
                [("ZREVRANGEBYSCORE", self._operation_key(name), at_ms, "-inf", "LIMIT", 0, 1) for name in names]
            )
        return {d: self._operation_time(d, found[0]) for d, found in zip(names, replies, strict=True) if found}

    def _operation_time(self, dataset: str, member: object) -> int:
        text = reply_text(member) if isinstance(member, bytes | str) else repr(member)
        if not text.lstrip("-").isdigit():
            raise Fatal(f"corrupt operation time in redis key {self._operation_key(dataset)}: {text!r}")
        return int(text)

    def record_operation(self, dataset: str, time_ms: int) -> bool:
        return self.record_operations([(dataset, time_ms)])[0]

    def record_operations(self, changes: Sequence[tuple[str, int]]) -> list[bool]:
        with translated():
            replies = self._many([("ZADD", self._operation_key(d), t, str(t)) for d, t in changes])
        return [bool(added) for added in replies]

    def last_operation(self, dataset: str, at_ms: int) -> int | None:
        key = self._operation_key(dataset)
        with translated():
            found = self._redis.zrevrangebyscore(key, at_ms, "-inf", start=0, num=1)
        return self._operation_time(dataset, found[0]) if found else None

    def _operation_key(self, dataset: str) -> str:
        return f"{self._prefix}operation:{dataset}"

    def _key(self, assertion: str, kind: str) -> str:
        return f"{self._prefix}{{{assertion}}}:{kind}"

    def _dataset_key(self, dataset: str) -> str:
        return f"{self._prefix}dataset:{dataset}"

    @staticmethod
    def _decode(key: str, member: object) -> AssertionRun:
        if not isinstance(member, bytes | str):
            raise Fatal(f"unexpected reply from redis key {key}: {member!r}")
        try:
            return AssertionRun.from_json(orjson.loads(member))
        except (ValueError, InvalidRun) as error:
            raise Fatal(f"corrupt run in redis key {key}: {error}") from error


def _glob_escape(text: str) -> str:
    """``text`` as a literal in a Redis ``MATCH`` pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _bound(value: int | None, open_end: str) -> int | str:
    return open_end if value is None else value
