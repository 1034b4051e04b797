"""Every defined assertion's blast radius, computed ahead (pareis.core.radii): on DataHub's own connector output and
the demo recording, each kept radius is the walk's answer and survives its stored form byte for byte; it holds only
for the definition it was computed from; the budget leaves the largest to be walked."""

from __future__ import annotations

import json

import pytest

from pareis.core import radii
from pareis.core.blast import blast_radius
from pareis.core.graph import Memo, Rel
from pareis.core.impact import BlastRadius
from pareis.core.radii import ASSERTION_ASPECT, AssertionRadius, assertion_radii, held
from pareis.store.lineage import Facts, LineageUpdate, Stamp
from pareis.store.lineage_memory import MemoryLineageStore
from tests.support.goldens import every_golden, load
from tests.support.recorded import recorded_sources

pytestmark = pytest.mark.unit

A, B = "urn:li:assertion:a", "urn:li:assertion:b"
DS = "urn:li:dataset:(urn:li:dataPlatform:postgres,t,PROD)"
OTHER = "urn:li:dataset:(urn:li:dataPlatform:postgres,u,PROD)"


def _kept_are_walked_answers(store: MemoryLineageStore) -> int:
    """Check every kept radius of ``store`` against a walk of its own over a fresh view; how many were kept."""
    assertions = store.entities(ASSERTION_ASPECT)
    kept = assertion_radii(Memo(store), assertions)
    for entry in kept:
        assert entry.radius == blast_radius(Memo(store), assertions=[entry.assertion]), entry.assertion
        text = entry.encode()
        assert AssertionRadius.decode(entry.assertion, text) == entry, entry.assertion
        assert json.loads(text)["t"] == sorted(entry.definition[0])
    return len(kept)


def test_every_radius_of_datahubs_goldens_is_the_walks_answer_and_round_trips() -> None:
    kept = _kept_are_walked_answers(load(*every_golden()).store)
    assert kept >= 10, "the goldens define assertions (dbt tests, Great Expectations)"


def test_every_radius_of_the_demo_recording_is_the_walks_answer_and_round_trips() -> None:
    store = recorded_sources().lineage
    assert isinstance(store, MemoryLineageStore)
    kept = _kept_are_walked_answers(store)
    assert kept == len(store.entities(ASSERTION_ASPECT)) > 0
    assert any(e.radius.models for e in assertion_radii(Memo(store), store.entities(ASSERTION_ASPECT)))


def _store() -> MemoryLineageStore:
    store = MemoryLineageStore()
    for a in (A, B):
        store.apply([LineageUpdate(a, ASSERTION_ASPECT, Stamp(1, 1), Facts.of([(Rel.ASSERTS, a, DS)]))])
    return store


def test_a_kept_radius_holds_only_for_the_definition_it_was_computed_from() -> None:
    store = _store()
    kept = {e.assertion: e for e in assertion_radii(Memo(store), [A, B, "urn:li:assertion:undefined"])}
    assert sorted(kept) == [A, B], "an assertion the index does not define has no radius"
    assert held(Memo(store), kept) == {A: kept[A].radius, B: kept[B].radius}
    store.apply([LineageUpdate(A, ASSERTION_ASPECT, Stamp(2, 2), Facts.of([(Rel.ASSERTS, A, OTHER)]))])
    assert held(Memo(store), kept) == {B: kept[B].radius}, "A now checks another dataset: walked again"
    assert held(Memo(store), {}) == {}


def test_a_radius_past_the_budget_is_left_to_be_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store()
    monkeypatch.setattr(radii, "RADIUS_BUDGET", 1)  # a dataset at table level weighs 2
    assert assertion_radii(Memo(store), [A, B]) == []


def test_a_radius_with_failed_rows_is_not_kept_and_a_malformed_entry_is_refused_in_one_line() -> None:
    radius = BlastRadius((), (), (), (DS,), (), failed_rows=3)
    with pytest.raises(ValueError, match="no failed rows"):
        AssertionRadius(A, (frozenset({DS}), frozenset()), radius).encode()
    for text in ("{", '{"t": []}', '{"t":[],"f":[],"c":[],"fc":[4],"oc":[],"d":[],"ft":[],"tf":[],"m":[],"i":[]}'):
        with pytest.raises(ValueError, match=f"malformed radius entry for {A}") as caught:
            AssertionRadius.decode(A, text)
        assert "\n" not in str(caught.value)
