"""Blast radii kept across views of one lineage generation (:class:`~pareis.core.blast_cache.BlastCache`, the scores
role's gate): the answers are those of radii walked afresh, byte for byte, on the demo recording; a new generation, or
a changed definition of the assertion, is walked again."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pareis.answers.gate import gates
from pareis.answers.incidents import incident_list
from pareis.answers.render import dump
from pareis.core import analysis
from pareis.core.blast import blast_radius
from pareis.core.blast_cache import BlastCache
from pareis.core.graph import Memo, Rel
from pareis.store.lineage import Facts, LineageUpdate, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.recorded import mlflow, recorded_sources

MODELS = [mlflow("mlModel", f"{g}_{v}") for g in ("churn", "ltv") for v in range(1, 5)]


def _json(answers: dict[str, object]) -> dict[str, str]:
    return {m: dump(a.to_json()) for m, a in answers.items()}  # type: ignore[attr-defined]


def test_radii_kept_across_views_of_one_generation_answer_as_radii_walked_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = recorded_sources()
    times = sorted(
        {s.first_failure_ms for s in incident_list(base)}
        | {s.healed_ms + 1 for s in incident_list(base) if s.healed_ms}
    )
    walks = [0]

    def counted(*args: object, **kwargs: object) -> object:
        walks[0] += 1
        return blast_radius(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(analysis, "blast_radius", counted)
    fresh = {t: _json(gates(base, models=MODELS, at_ms=t)) for t in times}
    walked_fresh = walks[0]
    cached = replace(base, blasts=BlastCache())
    for round_ in range(2):
        walks[0] = 0
        for t in times:
            view = Memo(cached.lineage, generation=7)
            assert _json(gates(cached, models=MODELS, at_ms=t, view=view)) == fresh[t], (round_, t)
        if round_ == 1:
            assert walks[0] == 0 < walked_fresh, "the second round takes the radii kept in the first"
    assert cached.blasts is not None and len(cached.blasts) > 0


A = "urn:li:assertion:a"
B = "urn:li:assertion:b"
DS = "urn:li:dataset:(urn:li:dataPlatform:postgres,t,PROD)"
OTHER = "urn:li:dataset:(urn:li:dataPlatform:postgres,u,PROD)"


def _store() -> MemoryLineageStore:
    store = MemoryLineageStore()
    store.apply([LineageUpdate(A, "assertionInfo", Stamp(1, 1), Facts.of([(Rel.ASSERTS, A, DS)]))])
    store.apply([LineageUpdate(B, "assertionInfo", Stamp(1, 1), Facts.of([(Rel.ASSERTS, B, DS)]))])
    return store


def test_a_new_generation_or_a_changed_definition_is_walked_again() -> None:
    store = _store()
    cache = BlastCache()
    first = Memo(store, generation=1)
    radii = {a: blast_radius(first, assertions=[a]) for a in (A, B)}
    cache.keep(first, radii)
    assert cache.known(Memo(store, generation=1), [A, B]) == radii
    assert cache.known(Memo(store), [A, B]) == {}, "a view of unknown generation is not served"
    # assertionInfo is no exposure aspect: its change leaves the generation, the definition read tells
    store.apply([LineageUpdate(A, "assertionInfo", Stamp(2, 2), Facts.of([(Rel.ASSERTS, A, OTHER)]))])
    assert cache.known(Memo(store, generation=1), [A, B]) == {B: radii[B]}
    assert cache.known(Memo(store, generation=2), [A, B]) == {}
    assert len(cache) == 0, "a new generation starts afresh"
    cache.keep(Memo(store, generation=1), radii)  # a view older than the cache's generation resets it: kept anew
    assert cache.known(Memo(store, generation=2), [B]) == {}


def test_the_oldest_kept_are_dropped_past_the_limit() -> None:
    store = _store()
    cache = BlastCache(limit=1)
    view = Memo(store, generation=1)
    cache.keep(view, {A: blast_radius(view, assertions=[A])})
    cache.keep(view, {B: blast_radius(view, assertions=[B])})
    assert set(cache.known(view, [A, B])) == {B}
