"""The brief of an incident (DESIGN §4, decision first): what each surface a person reads renders, in one place.

Facts from the writer scenario (an incident driven through the real state machine) and from the demo recording
(DataHub's own connectors), with recommendations made by hand where a case needs one."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from pareis.core.brief import (
    ASSERTIONS,
    DECISION,
    EVIDENCE,
    HEADLINE_MAX,
    MAX_LISTED,
    MODELS,
    NEXT_STEP,
    OWNERS,
    RETRAIN,
    VERSIONS,
    Brief,
    Section,
    Span,
    brief,
    headline,
    iso,
    linked,
    plain,
)
from pareis.core.contamination import ModelVersion
from pareis.core.incident_text import description, markdown, plain_text, title
from pareis.core.intents import IncidentFacts
from pareis.core.owners import IncidentOwners, Owner
from pareis.core.serving import Action, Recommendation, ServingVersion, ServingVia
from tests.support.goldens import DEMO, incident, load
from tests.support.writer_scenario import CHURN, CHURN_V1, CHURN_V2, CHURN_V3, DATASET, story

STORY = story()
OPEN, RESOLVE = STORY.open.facts, STORY.resolve.facts
UI = "https://datahub.example.com"
RAW = "urn:li:dataset:(urn:li:dataPlatform:postgres,retail.raw.transactions,PROD)"


def version(name: str, n: int, t: int | None) -> ModelVersion:
    group = f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{name},PROD)"
    return ModelVersion(f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name}_{n},PROD)", group, str(n), t)


def decided(name: str, action: Action, target: ModelVersion | None, bad: ModelVersion) -> Recommendation:
    assert bad.group is not None
    serving = (ServingVersion(bad, (ServingVia(),)),)
    return Recommendation(bad.group, action, target, serving, False, (bad,), (OPEN.urn,), f"reason of {name}.")


def with_decisions(*decisions: Recommendation) -> IncidentFacts:
    return replace(OPEN, decisions=decisions)


def test_the_sections_come_decision_first_then_the_evidence() -> None:
    found = brief(OPEN)
    titles = [s.title for s in found.sections]
    assert titles == [DECISION, RETRAIN, NEXT_STEP, EVIDENCE, MODELS, VERSIONS, ASSERTIONS], "no owners: no section"
    assert found.state == "ACTIVE" and found.severity == OPEN.severity.value and found.incident == OPEN.urn
    assert brief(RESOLVE).state == "RESOLVED"


def test_sentences_name_entities_by_short_names_and_the_urns_stay_in_the_json() -> None:
    for facts in (OPEN, RESOLVE):
        text = plain_text(brief(facts))
        assert "urn:li:" not in text, text
        assert "urn:li:" not in title(facts)
    assert CHURN_V3 in str(OPEN.to_json())


def test_each_group_has_its_decision_with_reason_and_the_versions_not_to_promote() -> None:
    decision = next(d for d in OPEN.decisions if d.group == CHURN)
    assert decision.action is Action.ROLL_BACK and decision.target is not None
    assert [v.urn for v in decision.do_not_promote] == [CHURN_V2]
    churn, fraud = brief(OPEN).section(DECISION).lines  # type: ignore[union-attr]
    assert plain(churn) == f"churn: ROLL BACK to churn_1 — {decision.reason} Do not promote churn_2."
    assert [s.text for s in churn if s.strong] == ["churn", "ROLL BACK to ", "churn_1"]
    assert plain(fraud).startswith("fraud_7: Nothing to switch: fraud_7 serving"), "NONE: its reason says it"


def test_retrain_is_blocked_while_open_and_names_the_versions_still_blocked_after_the_heal() -> None:
    open_lines = brief(OPEN).section(RETRAIN).lines  # type: ignore[union-attr]
    assert [plain(line) for line in open_lines] == [
        "churn: BLOCKED while the incident is open (the retrain gate says when)",
        "fraud_7: BLOCKED while the incident is open (the retrain gate says when)",
    ]
    assert [urn for urn, status in RESOLVE.retrain if status.value == "BLOCKED"] == [CHURN_V2]
    healed = brief(RESOLVE).section(RETRAIN).lines  # type: ignore[union-attr]
    assert [plain(line) for line in healed] == [
        "fraud_7: OK: every version may be retrained or promoted",
        "churn: OK, except churn_2: BLOCKED (trained on corrupt data)",
    ]


def test_owners_are_listed_with_emails_or_names_the_failing_dataset_first() -> None:
    owners = IncidentOwners(
        dataset=(Owner("urn:li:corpuser:alice", "alice@example.com"), Owner("urn:li:corpGroup:data-eng")),
        models=((CHURN_V3, (Owner("urn:li:corpuser:bob", "bob@example.com"),)), (CHURN_V1, ())),
    )
    lines = brief(replace(OPEN, owners=owners), ui_url=UI).section(OWNERS).lines  # type: ignore[union-attr]
    assert [plain(line) for line in lines] == [
        "shop.public.orders (failing dataset): alice@example.com and data-eng",
        "churn_3: bob@example.com",
    ]
    assert lines[0][2].url == f"{UI}/user/urn%3Ali%3Acorpuser%3Aalice"


def test_the_next_step_says_what_to_switch_fix_and_retrain() -> None:
    churn_3, churn_2 = version("churn", 3, 30), version("churn", 2, 20)
    ltv_3 = version("ltv", 3, 30)
    facts = with_decisions(
        decided("churn", Action.ROLL_BACK, churn_2, churn_3), decided("ltv", Action.RETRAIN, None, ltv_3)
    )
    steps = [plain(line) for line in brief(facts).section(NEXT_STEP).lines]  # type: ignore[union-attr]
    assert steps == [
        "Switch serving now: roll back churn to churn_2.",
        "Fix the data of shop.public.orders (1 failing assertion(s)); retraining churn and ltv stays blocked until it"
        " heals, then retrain ltv on clean data.",
    ]
    healed = replace(facts, window=RESOLVE.window)
    assert [plain(line) for line in brief(healed).section(NEXT_STEP).lines] == [  # type: ignore[union-attr]
        "Switch serving now: roll back churn to churn_2.",
        "Retrain ltv on clean data now: the data has healed.",
    ]


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        ("roll-back", "Roll back churn to churn_2 — shop.public.orders failing"),
        ("promote", "Promote churn_4 in churn — shop.public.orders failing"),
        ("retrain", "Retrain churn — shop.public.orders failing"),
        ("none", "Nothing to switch: no contaminated version serves — shop.public.orders failing"),
        ("no-model", "No model affected — shop.public.orders failing"),
        (
            "many",
            "Roll back a to a_2; roll back b to b_2; roll back c to c_2; 2 more group(s) — shop.public.orders failing",
        ),
    ],
)
def test_the_headline_is_the_decision_then_the_failing_dataset(decisions: str, expected: str) -> None:
    churn_3 = version("churn", 3, 30)
    cases = {
        "roll-back": (decided("churn", Action.ROLL_BACK, version("churn", 2, 20), churn_3),),
        "promote": (decided("churn", Action.PROMOTE, version("churn", 4, 40), churn_3),),
        "retrain": (decided("churn", Action.RETRAIN, None, churn_3),),
        "none": (decided("churn", Action.NONE, None, churn_3),),
        "no-model": (),
        "many": tuple(decided(n, Action.ROLL_BACK, version(n, 2, 20), version(n, 3, 30)) for n in "abcde"),
    }
    assert headline(with_decisions(*cases[decisions])) == expected


def test_the_headline_fits_a_slack_header() -> None:
    long_name = "x" * 200
    facts = with_decisions(decided(long_name, Action.ROLL_BACK, version(long_name, 2, 20), version(long_name, 3, 30)))
    text = headline(facts)
    assert len(text) == HEADLINE_MAX and text.endswith("…")


def test_long_sections_list_the_first_lines_and_count_the_rest() -> None:
    many = tuple(decided(f"g{i:02d}", Action.NONE, None, version(f"g{i:02d}", 3, 30)) for i in range(MAX_LISTED + 5))
    lines = brief(with_decisions(*many)).section(DECISION).lines  # type: ignore[union-attr]
    assert len(lines) == MAX_LISTED + 1 and plain(lines[-1]) == "… and 5 more"


def test_urgent_decisions_come_first() -> None:
    facts = with_decisions(
        decided("a", Action.NONE, None, version("a", 3, 30)),
        decided("b", Action.RETRAIN, None, version("b", 3, 30)),
        decided("c", Action.PROMOTE, version("c", 4, 40), version("c", 3, 30)),
    )
    lines = brief(facts).section(DECISION).lines  # type: ignore[union-attr]
    assert [line[0].text for line in lines] == ["c", "b", "a"]


def test_with_the_web_app_every_named_entity_links_its_datahub_page() -> None:
    found = brief(OPEN, ui_url=UI)
    linked = [s for section in found.sections for line in section.lines for s in line if s.url]
    assert linked and all(s.url and s.url.startswith(UI + "/") for s in linked)
    group = found.section(DECISION).lines[0][0]  # type: ignore[union-attr]
    assert (
        group.url
        == f"{UI}/mlModelGroup/urn%3Ali%3AmlModelGroup%3A%28urn%3Ali%3AdataPlatform%3Amlflow%2Cchurn%2CPROD%29"
    )
    assert not any(s.url for section in brief(OPEN).sections for line in section.lines for s in line)


def test_a_brief_round_trips_through_json_and_refuses_a_malformed_one() -> None:
    found = brief(OPEN, ui_url=UI, links=[Span("Open in DataHub", UI + "/x")])
    assert Brief.from_json(found.to_json()) == found
    for bad in (
        [],
        {**found.to_json(), "headline": ""},
        {**found.to_json(), "sections": [{"title": "x", "lines": [[{"url": "u"}]]}]},
        {**found.to_json(), "links": [{"text": "a", "strong": "yes"}]},
    ):
        with pytest.raises(TypeError):
            Brief.from_json(bad)


def test_markdown_puts_a_heading_per_section_and_links_names() -> None:
    text = description(OPEN, UI)
    assert text.startswith("### Decision\n\n- **[churn](" + UI + "/mlModelGroup/")
    assert text.count("### ") == len(brief(OPEN).sections)
    unlinked = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", text)
    assert unlinked == description(OPEN)
    with_links = markdown(brief(OPEN, links=[Span("Open in Mission Control", "https://mc/incidents/x")]))
    assert with_links.endswith("\n\n[Open in Mission Control](https://mc/incidents/x)")


def test_markdown_escapes_what_would_be_markup_in_a_name() -> None:
    section = Section(DECISION, ((Span("a*b[c]", strong=True), Span(" plain")),))
    text = markdown(Brief("urn:li:incident:x", "h", "ACTIVE", "HIGH", (section,)))
    assert text == "### Decision\n\n- **a\\*b\\[c\\]** plain"


def test_the_demo_recordings_incident_leads_with_its_decision() -> None:
    metadata = load(*sorted(DEMO.glob("*.json")))
    facts = incident(metadata, RAW)
    found = brief(facts)
    assert [s.title for s in found.sections][:3] == [DECISION, RETRAIN, NEXT_STEP]
    assert [line[0].text for line in found.section(DECISION).lines] == ["churn", "ltv"]  # type: ignore[union-attr]
    assert "254193" in plain(found.section(EVIDENCE).lines[0])  # type: ignore[union-attr]
    assert "urn:li:" not in plain_text(found) and "urn:li:" not in found.headline
    assert DATASET not in plain_text(found) and CHURN not in plain_text(found)


@pytest.mark.parametrize("ui_url", [UI, None, "https://other.example.com/"])
def test_a_brief_linked_again_is_the_brief_of_those_links(ui_url: str | None) -> None:
    # The tickets link the description's brief (built without the web app) instead of analysing the facts again.
    metadata = load(*sorted(DEMO.glob("*.json")))
    links = [Span("Open in DataHub", "https://x/incident"), Span("Open in Mission Control", "https://mc/i")]
    for facts in (OPEN, RESOLVE, incident(metadata, RAW), with_decisions()):
        for source in (brief(facts), brief(facts, ui_url="https://stale.example.com")):
            found = linked(source, ui_url, links)
            expected = brief(facts, ui_url=ui_url, links=links)
            assert found == expected and found.to_json() == expected.to_json()
            assert markdown(found) == markdown(expected)
    read_back = Brief.from_json(brief(OPEN, ui_url=UI).to_json())
    assert linked(read_back, None).to_json()["sections"] == read_back.to_json()["sections"]  # no entity: kept


def test_iso_writes_utc_milliseconds_as_the_c_library_does() -> None:
    import random
    import time

    def libc(ms: int) -> str:
        seconds, millis = divmod(ms, 1000)
        return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(seconds))}.{millis:03d}Z"

    edges = [0, -1, 999, -1000, 951_782_400_000, 253_402_300_799_999, 253_402_300_800_000, -30_610_224_000_001]
    rng = random.Random(35)
    for ms in edges + [rng.randint(-40_000_000_000_000, 260_000_000_000_000) for _ in range(20_000)]:
        assert iso(ms) == libc(ms), ms
    assert iso(1_714_564_800_000) == "2024-05-01T12:00:00.000Z" and iso(None) == "-"
