"""The incident store port: the incident state of each dataset key, read and written as a unit (DESIGN §3).

One consumer owns each dataset key (Kafka partitions by it), so there is no concurrent writer and no
compare-and-set. A dataset never written reads as CLEAR. States are stored as JSON with sorted keys
(:meth:`~pareis.core.lifecycle.IncidentState.to_json`), so what is read back equals what was written.

Implementations: :class:`pareis.store.incidents_memory.MemoryIncidentStore` and
:class:`pareis.store.incidents_redis.RedisIncidentStore`; both pass ``tests/unit/test_incident_store.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from pareis.core.lifecycle import IncidentState
from pareis.errors import Fatal


@runtime_checkable
class IncidentStore(Protocol):
    """Incident state per dataset key. Errors are :class:`~pareis.errors.Retriable` or :class:`~pareis.errors.Fatal`."""

    def get(self, dataset: str) -> IncidentState:
        """The state of ``dataset``; a CLEAR state when none was stored."""
        ...

    def put(self, state: IncidentState) -> None:
        """Replace the state of ``state.dataset``."""
        ...

    def put_many(self, states: Iterable[IncidentState]) -> None:
        """:meth:`put` of each of ``states`` (one per dataset), in one round trip (a batch's new states)."""
        ...

    def active(self) -> list[IncidentState]:
        """Every ACTIVE state, sorted by dataset (for the gate and the dashboard)."""
        ...

    def get_many(self, datasets: Iterable[str]) -> dict[str, IncidentState]:
        """:meth:`get` of each of ``datasets`` in one round trip (the read side's incident list)."""
        ...


def encode(state: IncidentState) -> str:
    return json.dumps(state.to_json(), sort_keys=True, separators=(",", ":"))


def decode(dataset: str, text: bytes | str) -> IncidentState:
    """The stored state of ``dataset``; Fatal when the store holds something else (corruption, not input)."""
    try:
        state = IncidentState.from_json(json.loads(text))
    except ValueError as error:
        raise Fatal(f"corrupt incident state for {dataset}: {error}") from error
    if state.dataset != dataset:
        raise Fatal(f"incident state stored under {dataset} is for {state.dataset}")
    return state
