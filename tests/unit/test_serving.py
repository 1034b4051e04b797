"""The serving versions of a group and the recommendation (DESIGN §2.3): the table of cases — active or healed ×
serving known or presumed × a clean retrain or not × removed versions × out-of-service deployments — with answers
computed by hand from the design."""

from __future__ import annotations

import pytest

from pareis.core.contamination import ModelVersion, Verdict
from pareis.core.names import entity_url, markdown_link, short_name
from pareis.core.serving import (
    Action,
    Deployment,
    Reach,
    VersionFacts,
    combined_verdicts,
    recommend,
    serving,
)

GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)"


def v(n: int, trained: int | None) -> ModelVersion:
    return ModelVersion(f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_{n},PROD)", GROUP, str(n), trained)


V1, V2, V3, V4 = v(1, 100), v(2, 200), v(3, 300), v(4, 700)
ALL = frozenset(x.urn for x in (V1, V2, V3, V4))
ENDPOINT = "urn:li:mlModelDeployment:(urn:li:dataPlatform:sagemaker,churn-endpoint,PROD)"

# The incident: last known good 250, first failure 400; healed at 600 (or still open). churn_3 (300) is inside the
# window; churn_4 (700) was trained after the heal.
OPEN = Reach("urn:li:incident:pareis-a", 250, None, ALL)
HEALED = Reach("urn:li:incident:pareis-a", 250, 600, ALL)


def facts(*versions: ModelVersion, serves: ModelVersion | None = None, **kw: object) -> list[VersionFacts]:
    out = []
    for x in versions:
        deployments = (Deployment(ENDPOINT, "IN_SERVICE"),) if x == serves else ()
        out.append(VersionFacts(x, deployments, **kw))  # type: ignore[arg-type]
    return out


def test_active_incident_a_contaminated_version_serves_roll_back_to_the_newest_clean() -> None:
    r = recommend(GROUP, facts(V1, V2, V3, serves=V3), [OPEN], at_ms=500)
    assert r.action is Action.ROLL_BACK
    assert r.target == V2
    assert r.serving_known
    assert [s.version for s in r.serving] == [V3]
    assert r.contaminated == (V3,)
    assert "churn_3 serves and trained on corrupt data; roll back to churn_2" in r.reason


def test_after_the_heal_and_a_clean_retrain_the_retrain_is_promoted() -> None:
    r = recommend(GROUP, facts(V1, V2, V3, V4, serves=V3), [HEALED], at_ms=800)
    assert (r.action, r.target) == (Action.PROMOTE, V4)
    assert "promote churn_4" in r.reason


def test_a_clean_retrain_that_already_serves_needs_nothing_and_names_the_contaminated_one() -> None:
    r = recommend(GROUP, facts(V1, V2, V3, V4, serves=V4), [HEALED], at_ms=800)
    assert r.action is Action.NONE
    assert r.target is None
    assert r.do_not_promote == (V3,)
    assert r.reason == "Nothing to switch: churn_4 serving is not contaminated; do not promote churn_3."


def test_versions_trained_after_at_do_not_exist_yet() -> None:
    r = recommend(GROUP, facts(V1, V2, V3, V4, serves=V3), [HEALED], at_ms=650)
    assert (r.action, r.target) == (Action.ROLL_BACK, V2)


def test_no_clean_version_means_retrain_once_healed() -> None:
    r = recommend(GROUP, facts(V3, serves=V3), [OPEN], at_ms=500)
    assert (r.action, r.target) == (Action.RETRAIN, None)
    assert "retrain once the data has healed" in r.reason
    healed = recommend(GROUP, facts(V3, serves=V3), [HEALED], at_ms=650)
    assert "retrain now: the data has healed" in healed.reason


def test_unknown_training_times_are_never_a_target() -> None:
    unknown = v(0, None)
    reach = Reach(OPEN.incident, 250, None, ALL | {unknown.urn})
    r = recommend(GROUP, facts(unknown, V3, serves=V3), [reach], at_ms=500)
    assert (r.action, r.target) == (Action.RETRAIN, None)
    assert combined_verdicts([unknown], [reach])[unknown.urn] is Verdict.UNKNOWN


def test_presumed_serving_is_the_newest_version_and_says_so() -> None:
    r = recommend(GROUP, facts(V1, V2, V3), [OPEN], at_ms=500)
    assert not r.serving_known
    assert [s.version for s in r.serving] == [V3]
    assert r.serving[0].to_json()["how"] == [{"presumed": True}]
    assert (r.action, r.target) == (Action.ROLL_BACK, V2)
    assert "presumed serving" in r.reason


def test_a_removed_version_never_serves_nor_is_a_target() -> None:
    rows = [VersionFacts(V1), VersionFacts(V2, removed=True), VersionFacts(V3, (Deployment(ENDPOINT),))]
    r = recommend(GROUP, rows, [OPEN], at_ms=500)
    assert (r.action, r.target) == (Action.ROLL_BACK, V1)
    removed_serving = [VersionFacts(V1), VersionFacts(V3, (Deployment(ENDPOINT),), removed=True)]
    s, known = serving(removed_serving)
    assert ([x.version for x in s], known) == ([V1], False)


@pytest.mark.parametrize("status", ["OUT_OF_SERVICE", "FAILED", "DELETING", "CREATING", "out_of_service"])
def test_an_out_of_service_deployment_does_not_serve(status: str) -> None:
    rows = [VersionFacts(V2, (Deployment(ENDPOINT, "IN_SERVICE"),)), VersionFacts(V3, (Deployment(ENDPOINT, status),))]
    r = recommend(GROUP, rows, [OPEN], at_ms=500)
    assert [s.version for s in r.serving] == [V2]
    assert r.action is Action.NONE
    assert r.do_not_promote == (V3,)


@pytest.mark.parametrize("status", [None, "IN_SERVICE", "UPDATING", "ROLLING_BACK", "UNKNOWN", "SOMETHING_NEW"])
def test_a_deployment_not_known_out_of_service_serves(status: str | None) -> None:
    """Absent (never ingested), in service, changing, unknown, or a status DataHub does not define: serving."""
    s, known = serving([VersionFacts(V3, (Deployment(ENDPOINT, status),))])
    assert known
    assert s[0].how[0].to_json() == {"deployment": ENDPOINT, "status": status}


def test_serving_aliases_are_a_setting_and_case_insensitive() -> None:
    rows = [VersionFacts(V2, aliases=("Champion",)), VersionFacts(V3, aliases=("challenger",))]
    s, known = serving(rows)
    assert ([x.version for x in s], known) == ([V2], True)
    s, _ = serving(rows, serving_aliases=("CHALLENGER",))
    assert [x.version for x in s] == [V3]


def test_every_incident_that_reached_the_group_counts() -> None:
    """churn_4 is clean for the first incident but trained inside a second one's window: contaminated."""
    second = Reach("urn:li:incident:pareis-b", 650, None, frozenset({V4.urn}))
    r = recommend(GROUP, facts(V1, V2, V3, V4, serves=V4), [HEALED, second], at_ms=800)
    assert r.contaminated == (V3, V4)
    assert (r.action, r.target) == (Action.ROLL_BACK, V2)
    assert r.incidents == ("urn:li:incident:pareis-a", "urn:li:incident:pareis-b")


def test_a_version_outside_the_blast_radius_is_clean_whenever_it_was_trained() -> None:
    only_v3 = Reach("urn:li:incident:pareis-a", 250, None, frozenset({V3.urn}))
    r = recommend(GROUP, facts(V1, V2, V3, V4, serves=V3), [only_v3], at_ms=800)
    assert (r.action, r.target) == (Action.PROMOTE, V4)


def test_json_shape() -> None:
    r = recommend(GROUP, facts(V1, V2, V3, serves=V3), [OPEN], at_ms=500)
    got = r.to_json()
    assert list(got) == sorted(got)
    assert got["action"] == "ROLL_BACK"
    assert got["target"]["urn"] == V2.urn
    assert got["serving"] == [
        {"how": [{"deployment": ENDPOINT, "status": "IN_SERVICE"}], "urn": V3.urn, "version": "3"}
    ]


def test_short_names_and_links() -> None:
    ds = "urn:li:dataset:(urn:li:dataPlatform:snowflake,db.[business_report.xlsx]Sheet,PROD)"
    col = f"urn:li:schemaField:({ds},profile.country)"
    assert short_name(ds) == "db.[business_report.xlsx]Sheet"
    assert short_name(col) == "profile.country"
    assert short_name(V3.urn) == "churn_3"
    assert short_name("urn:li:mlFeature:(churn_features,tenure_days)") == "tenure_days"
    assert short_name(None) == "—"
    assert entity_url(None, ds) is None
    assert entity_url("https://dh.example/", V3.urn) == (
        "https://dh.example/mlModels/urn%3Ali%3AmlModel%3A%28urn%3Ali%3AdataPlatform%3Amlflow%2Cchurn_3%2CPROD%29"
    )
    assert entity_url("https://dh.example", col).endswith("/Schema?schemaFilter=profile.country")
    assert markdown_link(None, ds) == "db.\\[business_report.xlsx\\]Sheet"
    assert markdown_link("https://dh.example", GROUP).startswith("[churn](https://dh.example/mlModelGroup/")


def test_the_index_keeps_deployments_statuses_and_aliases_as_the_connectors_write_them() -> None:
    """SageMaker lists an endpoint URN (an ARN) that no entity carries: status unknown, so it serves; the endpoint
    entity it did ingest is CREATING. Unity Catalog (Databricks) versions carry ``prod`` and ``champion``."""
    from pareis.core.catalog import model_versions, serving_facts
    from tests.support.goldens import golden, load

    sagemaker = load(golden("sagemaker__sagemaker_mces_golden")).store
    first = "urn:li:mlModel:(urn:li:dataPlatform:sagemaker,the-first-model,PROD)"
    found = serving_facts(sagemaker, model_versions(sagemaker, [first]).values())[first]
    assert [(d.status, d.in_service) for d in found.deployments] == [(None, True)]
    assert found.deployments[0].urn.endswith("endpoint/the-first-endpoint,PROD)")
    assert serving([found])[1] is True

    unity = load(golden("unity__unity_catalog_ml_model_mces_golden")).store
    version = "urn:li:mlModel:(urn:li:dataPlatform:databricks,quickstart_catalog.quickstart_schema.test_model_1,PROD)"
    facts_ = serving_facts(unity, model_versions(unity, [version]).values())[version]
    assert facts_.aliases == ("champion", "prod")
    on, known = serving([facts_])
    assert known
    assert [h.to_json() for h in on[0].how] == [{"alias": "champion"}, {"alias": "prod"}]
