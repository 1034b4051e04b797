"""The lineage role's watch on a store that streams: the folding done while the server applies the batch gives the
signals the plain check gives, and an incident whose watch set is written while the batch is applied is not missed
(the answer is the index as read after the apply)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from pareis.config import DatahubSettings
from pareis.contracts.records import Message, OutRecord
from pareis.core.watch import WatchIndex
from pareis.datahub.wire.changelog import ChangeLog
from pareis.roles.lineage import CHUNK, LineageHandler, StreamingStore
from pareis.roles.lineage_watch import LineageWatch
from pareis.roles.messages import MAX_SIGNAL_ENTITIES
from pareis.store.lineage import LineageUpdate, Outcome
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.watch import MemoryWatchStore

UP = "urn:li:dataset:(urn:li:dataPlatform:postgres,raw.t{},PROD)"
DOWN = "urn:li:dataset:(urn:li:dataPlatform:dbt,stg.t{},PROD)"
INCIDENT = "urn:li:dataset:(urn:li:dataPlatform:postgres,raw.incident,PROD)"


class _Stream:
    def __init__(self, store: MemoryLineageStore, on_finish: list[Any]) -> None:
        self._store, self._sent, self._on_finish = store, list[LineageUpdate](), on_finish

    def send(self, updates: Sequence[LineageUpdate]) -> None:
        self._sent.extend(updates)

    def finish(self) -> list[Outcome]:
        for hook in self._on_finish:  # what other roles do while the server applies the batch
            hook()
        return self._store.apply(self._sent)


class StreamingMemoryStore(MemoryLineageStore):
    """The in-memory store behind the streaming protocol (applied at ``finish``), with hooks run there."""

    def __init__(self) -> None:
        super().__init__()
        self.on_finish: list[Any] = []

    def stream(self) -> _Stream:
        return _Stream(self, self.on_finish)


class CountingWatchStore(MemoryWatchStore):
    """Counts index reads that returned a fresh index."""

    def __init__(self) -> None:
        super().__init__()
        self.fresh = 0

    def index(self, known: str | None = None) -> WatchIndex | None:
        out = super().index(known)
        self.fresh += out is not None
        return out


def _batch(size: int, *, upstream: int | None = None, at: int = 1_000) -> list[Message[ChangeLog]]:
    """``size`` upstreamLineage changes of distinct datasets; each reads ``UP`` of its own index, or of ``upstream``;
    the i-th stamped ``at + i``."""
    out = []
    for i in range(size):
        source = UP.format(i if upstream is None else upstream)
        aspect = {
            "upstreams": [{"dataset": source, "type": "TRANSFORMED"}],
            "fineGrainedLineages": [
                {
                    "upstreamType": "FIELD_SET",
                    "downstreamType": "FIELD",
                    "upstreams": [f"urn:li:schemaField:({source},amount)"],
                    "downstreams": [f"urn:li:schemaField:({DOWN.format(i)},amount)"],
                }
            ],
        }
        value = ChangeLog(
            entity_type="dataset",
            entity_urn=DOWN.format(i),
            change_type="UPSERT",
            aspect_name="upstreamLineage",
            aspect=orjson.dumps(aspect),
            previous_aspect=None,
            system_metadata={"version": "1", "lastObserved": at + i},
            created={"time": at + i, "actor": "urn:li:corpuser:datahub"},
            headers=None,
            schema_id=0,
        )
        out.append(Message("versioned", 0, i, None, value))
    return out


def _signals(records: Sequence[OutRecord]) -> list[tuple[bytes | None, Any]]:
    return [(r.key, None if r.value is None else orjson.loads(r.value)) for r in records]


def test_the_streamed_check_signals_as_the_plain_one() -> None:
    messages = _batch(2 * CHUNK + 5)
    watched = {
        INCIDENT: [UP.format(3), DOWN.format(CHUNK + 1)],
        UP.format(7): [f"urn:li:schemaField:({UP.format(7)},amount)", DOWN.format(2 * CHUNK + 4)],
    }
    seen = []
    for store in (MemoryLineageStore(), StreamingMemoryStore()):
        assert isinstance(store, StreamingStore) is (type(store) is StreamingMemoryStore)
        watches = MemoryWatchStore()
        watches.put(watched)
        handler = LineageHandler(store, DatahubSettings(), watch=LineageWatch(watches, "signals"))
        seen.append(_signals(list(handler(messages))))
        assert _signals(list(handler(_batch(2 * CHUNK + 5, at=5_000)))) == [], "an equal restatement signals nothing"
    plain, streamed = seen
    assert [key for key, _ in plain] == sorted(k.encode() for k in watched)
    assert streamed == plain


def test_an_incident_whose_watch_set_is_written_while_the_batch_is_applied_is_signalled() -> None:
    """The watch set lands after the check's first read of the index and before the store's outcomes: the fold made
    under the first index is discarded and the signals come from the index as read after the apply."""
    messages = _batch(CHUNK + 3, upstream=1)
    store = StreamingMemoryStore()
    watches = CountingWatchStore()
    watches.put({UP.format(99): [UP.format(99)]})  # an active incident elsewhere: the early fold is made
    store.on_finish.append(lambda: watches.put({INCIDENT: [UP.format(1)]}))
    watch = LineageWatch(watches, "signals")
    out = _signals(list(LineageHandler(store, DatahubSettings(), watch=watch)(messages)))
    assert [key for key, _ in out] == [INCIDENT.encode()]
    assert out[0][1]["entities"] == sorted(DOWN.format(i) for i in range(CHUNK + 3))[:MAX_SIGNAL_ENTITIES]
    assert out[0][1]["logged_ms"] == 1_000 + CHUNK + 2
    assert watches.fresh == 2, "the index was read before the batch and again after the apply"


def test_with_no_active_incident_nothing_is_folded_and_nothing_is_signalled() -> None:
    store = StreamingMemoryStore()
    watches = CountingWatchStore()
    handler = LineageHandler(store, DatahubSettings(), watch=LineageWatch(watches, "signals"))
    assert list(handler(_batch(5))) == []
    assert handler.outcomes == {Outcome.APPLIED: 5}


def test_the_redo_of_an_attempt_that_applied_its_batch_and_stopped_signals_what_the_attempt_did_not_deliver() -> None:
    """A crash (or a lost group membership) after the store applied the batch and before its signals and offsets
    were committed: the redo, in a new process, finds the index holding the updates already. The store reports them
    repeated and the redo signals what the first attempt would have (it was never delivered)."""
    messages = _batch(CHUNK + 3)
    for make in (MemoryLineageStore, StreamingMemoryStore):
        store = make()
        watches = MemoryWatchStore()
        watches.put({INCIDENT: [UP.format(3)]})
        attempt = list(LineageHandler(store, DatahubSettings(), watch=LineageWatch(watches, "signals"))(messages))
        assert [r.key for r in attempt] == [INCIDENT.encode()]
        redo = LineageHandler(store, DatahubSettings(), watch=LineageWatch(watches, "signals"))
        assert _signals(list(redo(messages))) == _signals(attempt)
        assert redo.outcomes == {Outcome.REPEATED: CHUNK + 3}
