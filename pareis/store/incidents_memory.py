"""The incident store in process memory (tests, ``pareis demo``, ``run all`` without Redis)."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from pareis.core.lifecycle import IncidentState, Status
from pareis.store.incidents import decode, encode


class MemoryIncidentStore:
    """An in-process incident store; keeps the encoded JSON so it round-trips exactly as Redis does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}

    def get(self, dataset: str) -> IncidentState:
        with self._lock:
            text = self._states.get(dataset)
        return IncidentState(dataset) if text is None else decode(dataset, text)

    def put(self, state: IncidentState) -> None:
        text = encode(state)
        with self._lock:
            self._states[state.dataset] = text

    def put_many(self, states: Iterable[IncidentState]) -> None:
        for state in states:
            self.put(state)

    def get_many(self, datasets: Iterable[str]) -> dict[str, IncidentState]:
        names = sorted(set(datasets))
        with self._lock:
            texts = [self._states.get(d) for d in names]
        return {d: IncidentState(d) if t is None else decode(d, t) for d, t in zip(names, texts, strict=True)}

    def active(self) -> list[IncidentState]:
        with self._lock:
            stored = sorted(self._states.items())
        states = (decode(dataset, text) for dataset, text in stored)
        return [state for state in states if state.status is Status.ACTIVE]
