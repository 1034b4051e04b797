"""The writer tests' shared incident (:mod:`tests.support.writer_scenario`) is what it says it is."""

from __future__ import annotations

from tests.support.writer_scenario import CHURN_V2, DISCOUNT, NOT_NULL, RANGE, story


def test_the_story_is_an_open_an_update_and_a_resolve_of_one_incident() -> None:
    s = story()
    assert s.open.facts.urn == s.update.facts.urn == s.resolve.facts.urn
    assert s.update.facts.window.assertions == (NOT_NULL, RANGE)
    assert DISCOUNT in s.update.tags_add
    contaminated = {
        v.version.urn for g in s.resolve.facts.contamination for v in g.versions if v.verdict == "CONTAMINATED"
    }
    assert contaminated == {CHURN_V2}
