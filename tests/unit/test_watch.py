"""The pure rule of live re-evaluation (pareis.core.watch): what an active incident watches, and whether a lineage
update touches it — on the sample's real incident (its blast radius computed by the core over the sample's index)."""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from pareis.config import Settings
from pareis.core.fieldpath import COLUMN_PREFIX, column_urn
from pareis.core.graph import Memo, Rel
from pareis.core.intents import IncidentFacts
from pareis.core.watch import WatchIndex, folded, processes_of, subjects, watch_set
from pareis.demo.session import DemoSession, steps_of
from tests.support import sample

KEY = sample.stg_warehouse()
FEATURES_W = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.analytics.customer_features,PROD)"
UNRELATED = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.other.inventory,PROD)"


@cache
def session_at_day_6() -> DemoSession:
    """The sample replayed through every role up to the day the incident opens (2025-10-07)."""
    session = DemoSession(Settings())
    for step in steps_of([sample.TIMELINE]):
        session.run(step)
        if step.name == "2025-10-07":
            return session
    raise AssertionError("the sample has no day 2025-10-07")


def facts() -> IncidentFacts:
    got = session_at_day_6().facts(KEY)
    assert got is not None
    return got


def test_columns_fold_into_their_dataset_and_other_urns_stay() -> None:
    assert folded(column_urn(KEY, "unit_price")) == KEY
    assert folded(column_urn(KEY, "a,b")) == KEY, "a comma in the path is percent-encoded"
    assert folded(sample.feature("total_spend")) == sample.feature("total_spend")
    assert subjects(sample.model("churn", 9), [sample.feature("total_spend"), column_urn(KEY, "x")]) == {
        sample.model("churn", 9),
        sample.feature("total_spend"),
        KEY,
    }


def test_the_watch_set_holds_the_radius_folded_its_models_groups_versions_and_processes() -> None:
    f = facts()
    processes = processes_of(Memo(session_at_day_6().ports.lineage), f)
    watched = watch_set(f, processes)
    assert list(watched) == sorted(set(watched))
    assert {KEY, sample.stg_dbt(), FEATURES_W, sample.feature("total_spend"), sample.feature("avg_unit_price")} <= set(
        watched
    )
    assert {sample.model("churn", 3), sample.model("ltv", 1), sample.group("churn"), sample.group("ltv")} <= set(
        watched
    )
    assert not any(u.startswith("urn:li:schemaField:") for u in watched), "columns are folded"
    assert sample.assertion("not_null_unit_price") in watched
    # the training runs read the feature table and train the models: their aspects can move the radius
    assert processes and all(p.startswith("urn:li:dataProcessInstance:") for p in processes)
    assert set(processes) <= set(watched)
    assert sample.feature("order_count") not in watched, "a feature fed by clean columns only is not watched"


def test_a_new_version_reading_a_poisoned_feature_hits_and_an_unrelated_change_does_not() -> None:
    index = WatchIndex.of({KEY: watch_set(facts())})
    new_version = sample.model("upsell", 1)
    reads = [(Rel.FEATURE_MODEL, sample.feature("avg_unit_price"), new_version)]
    assert index.hits(subjects(new_version, (u for _, s, d in reads for u in (s, d)))) == (KEY,)
    clean = [(Rel.FEATURE_MODEL, sample.feature("order_count"), new_version)]
    assert index.hits(subjects(new_version, (u for _, s, d in clean for u in (s, d)))) == ()
    assert index.hits(subjects(UNRELATED, [column_urn(UNRELATED, "sku")])) == ()


def test_a_soft_delete_or_a_re_pointed_feature_of_the_radius_hits() -> None:
    index = WatchIndex.of({KEY: watch_set(facts())})
    assert index.hits(subjects(sample.model("churn", 3), [])) == (KEY,), "status on an affected model"
    # a feature re-pointed away from the poison: its own aspect changes, so it is a subject
    assert index.hits(subjects(sample.feature("total_spend"), [column_urn(FEATURES_W, "basket_size")])) == (KEY,)
    # and one re-pointed *at* a poisoned column: the column's dataset is watched
    assert index.hits(subjects(sample.feature("order_count"), [column_urn(FEATURES_W, "avg_unit_price")])) == (KEY,)


def test_hits_name_every_incident_watching_sorted() -> None:
    index = WatchIndex.of({"urn:li:dataset:b": ["urn:li:mlModel:m"], "urn:li:dataset:a": ["urn:li:mlModel:m", "x"]})
    assert index.hits(["urn:li:mlModel:m"]) == ("urn:li:dataset:a", "urn:li:dataset:b")
    assert index.hits(["x", "y"]) == ("urn:li:dataset:a",)
    assert not WatchIndex.of({}) and WatchIndex.of({}).hits(["x"]) == ()


_URN_PARTS = st.sampled_from(
    [
        "urn:li:dataset:(urn:li:dataPlatform:pg,a,PROD)",
        "urn:li:dataset:(urn:li:dataPlatform:pg,b,PROD)",
        "urn:li:mlFeature:(t,f)",
        "urn:li:mlModel:(urn:li:dataPlatform:mlflow,m,PROD)",
        "",
        "x",
        "a,b",
    ]
)
_URNS = st.one_of(
    _URN_PARTS,
    st.builds(lambda d, p: f"{COLUMN_PREFIX}{d},{p})", _URN_PARTS, st.sampled_from(["c", "s.t", "c%2Cd", ""])),
    st.builds(lambda d: f"{COLUMN_PREFIX}{d})", _URN_PARTS),  # no comma after the prefix: folds to itself
    st.builds(lambda d: f"{COLUMN_PREFIX}{d}", _URN_PARTS),
)


@settings(max_examples=400, deadline=None)
@given(
    watches=st.dictionaries(st.sampled_from(["k1", "k2", "k3"]), st.lists(_URNS, max_size=6), max_size=3),
    entity=_URNS,
    edges=st.lists(st.tuples(st.sampled_from(list(Rel)), _URNS, _URNS), max_size=6),
)
def test_touched_answers_as_hits_of_the_subjects(
    watches: dict[str, list[str]], entity: str, edges: list[tuple[Rel, str, str]]
) -> None:
    """The lineage role's fast check is the rule: the incidents whose sets meet the update's folded subjects,
    malformed and column-looking URNs included."""
    index = WatchIndex.of(watches)
    expected = index.hits(subjects(entity, (u for _, s, d in edges for u in (s, d))))
    assert index.touched(entity, frozenset(edges)) == expected
