"""Blast radii kept across views of one lineage generation (:class:`~pareis.core.walk_cache.WalkCache`, the scores
role's gate): the answers are those of radii walked afresh, byte for byte, on the demo recording; a new generation, or
a changed definition of the assertion, is walked again."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

import pytest

from pareis.answers import gate_reads, reach
from pareis.answers.gate import gates
from pareis.answers.incidents import incident_list
from pareis.answers.render import dump
from pareis.core import upstream
from pareis.core.blast import blast_radius
from pareis.core.graph import Memo, Rel
from pareis.core.impact import BlastRadius
from pareis.core.upstream import ModelUpstream
from pareis.core.walk_cache import WalkCache
from pareis.store.lineage import Facts, LineageUpdate, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.counting import Walks
from tests.support.recorded import mlflow, recorded_sources

MODELS = [mlflow("mlModel", f"{g}_{v}") for g in ("churn", "ltv") for v in range(1, 5)]


def _json(answers: Mapping[str, object]) -> dict[str, str]:
    return {m: dump(a.to_json()) for m, a in answers.items()}  # type: ignore[attr-defined]


@pytest.mark.parametrize("ratio", [0, 10**9], ids=["pruned", "every-candidate"])
def test_walks_kept_across_views_of_one_generation_answer_as_walks_made_afresh(
    ratio: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate of every version at every incident's start and heal, twice over views of one generation: the same
    answers as without a cache, and the second time no radius and no region is walked."""
    base = recorded_sources()
    listed = incident_list(base)
    times = sorted({s.first_failure_ms for s in listed} | {s.healed_ms + 1 for s in listed if s.healed_ms})
    regions, models = [0], [0]
    walk = upstream._walk  # noqa: SLF001 - what is walked under the cache is what the test counts

    def walked(view: Memo, wanted: list[str], seeds: dict[object, set[str]]) -> object:
        models[0] += len(wanted)
        regions[0] += len(seeds)
        return walk(view, wanted, seeds)

    radii = Walks(monkeypatch, reach)  # where the gate's reads ask for its analyses' walks
    monkeypatch.setattr(upstream, "_walk", walked)
    monkeypatch.setattr(gate_reads, "PRUNE_RATIO", ratio)
    fresh = {t: _json(gates(base, models=MODELS, at_ms=t)) for t in times}
    walked_fresh = radii.count, regions[0], models[0]
    cached = replace(base, walks=WalkCache[ModelUpstream]())
    for round_ in range(2):
        radii.count = regions[0] = models[0] = 0
        for t in times:
            view = Memo(cached.lineage, generation=7)
            assert _json(gates(cached, models=MODELS, at_ms=t, view=view)) == fresh[t], (round_, t)
    assert radii.count == 0 < walked_fresh[0], "the second round takes the radii kept in the first"
    assert regions[0] == 0, "… and the upstream of the regions"
    assert models[0] == 0 < walked_fresh[2], "… and of the models"
    assert walked_fresh[1] > 0 if ratio == 0 else walked_fresh[1] == 0, "pruning walks regions"


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
    cache = WalkCache[ModelUpstream]()
    first = Memo(store, generation=1)
    radii = {a: blast_radius(first, assertions=[a]) for a in (A, B)}
    cache.keep_radii(first, radii)
    assert cache.radii(Memo(store, generation=1), [A, B]) == radii
    assert cache.radii(Memo(store), [A, B]) == {}, "a view of unknown generation is not served"
    # assertionInfo is no exposure aspect: its change leaves the generation, the definition read tells
    store.apply([LineageUpdate(A, "assertionInfo", Stamp(2, 2), Facts.of([(Rel.ASSERTS, A, OTHER)]))])
    assert cache.radii(Memo(store, generation=1), [A, B]) == {B: radii[B]}
    assert cache.radii(Memo(store, generation=2), [A, B]) == {}
    assert len(cache) == 0, "a new generation starts afresh"
    cache.keep_radii(Memo(store, generation=1), radii)  # a view older than the cache's generation resets it: kept anew
    assert cache.radii(Memo(store, generation=2), [B]) == {}


def test_the_oldest_kept_are_dropped_past_the_budget() -> None:
    store = _store()
    cache = WalkCache[ModelUpstream](budget=3)  # a radius of one dataset known at table level weighs 2
    view = Memo(store, generation=1)
    cache.keep_radii(view, {A: blast_radius(view, assertions=[A])})
    cache.keep_radii(view, {B: blast_radius(view, assertions=[B])})
    assert set(cache.radii(view, [A, B])) == {B}


def test_upstream_kept_for_one_generation() -> None:
    store = _store()
    cache = WalkCache[ModelUpstream]()
    view = Memo(store, generation=1)
    cache.keep_upstream(view, {"x": {DS}, "y": {OTHER}}, {"x": {DS, OTHER}})
    assert cache.upstream(Memo(store, generation=1), {"k": [DS], "y": [OTHER]}) == {"k": {DS, OTHER}}
    assert cache.upstream(Memo(store), {"k": [DS]}) == {}, "a view of unknown generation is not served"
    assert cache.upstream(Memo(store, generation=2), {"k": [DS]}) == {}
    assert len(cache) == 0


def test_an_entry_heavier_than_the_budget_is_not_kept() -> None:
    store = _store()
    cache = WalkCache[ModelUpstream](budget=1)
    view = Memo(store, generation=1)
    cache.keep_radii(view, {A: blast_radius(view, assertions=[A])})
    assert len(cache) == 0 and cache.radii(view, [A]) == {}


def test_radii_not_kept_here_are_read_from_the_exposure_index_and_kept_from_then_on() -> None:
    store = _store()
    elsewhere = {A: blast_radius(Memo(store), assertions=[A])}
    asked: list[list[str]] = []

    def kept(view: Memo, assertions: Collection[str]) -> dict[str, BlastRadius]:
        asked.append(sorted(assertions))
        return {a: r for a, r in elsewhere.items() if a in assertions}

    cache = WalkCache[ModelUpstream](kept=kept)
    assert cache.radii(Memo(store, generation=1), [A, B]) == elsewhere
    assert cache.radii(Memo(store, generation=1), [A, B]) == elsewhere
    assert asked == [[A, B], [B]], "A is kept here after the first read; B, kept nowhere, is asked again"
    assert cache.radii(Memo(store), [A, B]) == {} and len(asked) == 2, "a view of unknown generation reads nothing"
