"""Owners, incidents on ML entities and human edits through the live stack (issue 16, DESIGN §3): `pareis run all`
as a real process on the local Kafka and Redis, with the fake Slack, Jira, Linear (tests/support) and, on the REST
path, the fake GMS.

The sample timeline (deploy/demo/sample) is published with the `pareis replay` CLI in steps, and with it
``ownership`` and ``corpUserInfo`` aspects built with acryl-datahub's classes, as DataHub's connectors write them:

* the failing dataset (the warehouse sibling of stg_transactions) is owned by ``alice`` (a user with
  ``corpUserInfo.email``, known to Slack) and, through its dbt sibling, by ``dave@example.com`` (an id that is an
  address, unknown to Slack);
* the churn group is owned by the group ``ml-platform`` (so are its versions), the version churn_3 by ``bob``
  (``corpUserInfo.email``, known to Slack);
* the affected feature avg_unit_price is owned by ``fiona``: features' owners are indexed for the read side, an
  incident names the owners of the failing dataset and of the models only (the issue's wording).

Steps: (1) every change before day 6 plus the ownership; (2) the day-6 runs: the incident opens; (3) the
Kafka test changes the dataset's owners (``carol`` added) with no run: the next Update names her; the REST test
instead registers churn_4 (the sample's day-7 lineage) after a person edited the incident in GMS, and the edit
survives the Update. After each step the test waits until every role has committed its input (consumer-group
offsets at the topics' ends, and the effects role past the last effect): a synchronisation on observable state.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCPW
from datahub.ingestion.sink.file import write_metadata_file
from datahub.metadata.schema_classes import (
    CorpUserInfoClass,
    IncidentExternalLinksClass,
    IncidentNotesClass,
    OwnerClass,
    OwnershipClass,
    OwnershipTypeClass,
    SystemMetadataClass,
)

from pareis.core.incident_urn import incident_urn
from pareis.core.names import short_name
from pareis.datahub.gms.patch import apply_patch
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.datahub.writes.capabilities import PROBE_INCIDENT
from tests.support import sample
from tests.support.fake_gms import INCIDENT_TYPES_RELEASE, FakeGms
from tests.support.fake_jira import FakeJira
from tests.support.fake_linear import FakeLinear
from tests.support.fake_slack import CHANNEL_ID, FakeSlack
from tests.support.live import ROOT, RoleProc, read_committed, role_topics, stack_env, ticket_env, ticket_servers
from tests.support.roles import caught_up, committed, wait_until
from tests.support.stack import NewTopic

pytestmark = pytest.mark.e2e

PARTITIONS = 3
SETTLE_S = 90.0  # per step; generous: the box may be loaded
GRACE_S = 20.0

B = sample.builder()
DAY6, DAY7 = B.T0 + 6 * B.DAY, B.T0 + 7 * B.DAY
KEY, STG_DBT = sample.stg_warehouse(), sample.stg_dbt()
INCIDENT = incident_urn(KEY, DAY6)
CHURN = [sample.model("churn", v) for v in (1, 2, 3)]
CHURN_3, CHURN_4 = CHURN[2], sample.model("churn", 4)
LTV_1 = sample.model("ltv", 1)
MODELS = sorted([*CHURN, LTV_1])  # the versions registered before the day-6 runs, all reading a poisoned feature
FEATURES = sorted(sample.feature(f) for f in ("avg_unit_price", "total_spend"))  # fed by unit_price
GROUP_CHURN = sample.group("churn")

ALICE, BOB, CAROL = "urn:li:corpuser:alice", "urn:li:corpuser:bob", "urn:li:corpuser:carol"
DAVE, FIONA = "urn:li:corpuser:dave@example.com", "urn:li:corpuser:fiona"
ML_PLATFORM = "urn:li:corpGroup:ml-platform"
EMAILS = {ALICE: "alice@example.com", BOB: "bob@example.com", CAROL: "carol@example.com", FIONA: "fiona@example.com"}
SLACK_USERS = {"alice@example.com": "UALICE01", "bob@example.com": "UBOB0001", "carol@example.com": "UCAROL01"}
# Mapped by URN, email and user name (each way tickets.<tool>.users allows); dave is mapped nowhere.
JIRA_USERS = {"alice@example.com": "acc-alice", BOB: "acc-bob", "ml-platform": "acc-ml"}
LINEAR_USERS = {ALICE: "lin-alice", "bob@example.com": "lin-bob"}


def clock(record: dict[str, Any]) -> int:
    return int((record.get("systemMetadata") or {}).get("lastObserved") or 0)


def stamped(at_ms: int, *mcps: MCPW) -> list[MCPW]:
    for mcp in mcps:
        mcp.systemMetadata = SystemMetadataClass(lastObserved=at_ms, runId=f"owners-{at_ms}")
    return list(mcps)


def ownership(*owners: str) -> OwnershipClass:
    return OwnershipClass(owners=[OwnerClass(owner=o, type=OwnershipTypeClass.TECHNICAL_OWNER) for o in owners])


def owners_mcps(at_ms: int) -> list[MCPW]:
    """The ownership the story starts with, and the users' emails (DataHub's own aspects)."""
    return stamped(
        at_ms,
        MCPW(entityUrn=KEY, aspect=ownership(ALICE)),
        MCPW(entityUrn=STG_DBT, aspect=ownership(DAVE)),
        MCPW(entityUrn=GROUP_CHURN, aspect=ownership(ML_PLATFORM)),
        MCPW(entityUrn=CHURN_3, aspect=ownership(BOB)),
        MCPW(entityUrn=FEATURES[0], aspect=ownership(FIONA)),
        *(
            MCPW(entityUrn=user, aspect=CorpUserInfoClass(active=True, email=email, displayName=user.split(":")[3]))
            for user, email in EMAILS.items()
        ),
    )


@dataclass
class Live:
    """One `pareis run all` on fresh topics and the session's Redis database, and how to feed and watch it."""

    bootstrap: str
    group: str
    topics: dict[str, str]
    env: dict[str, str]
    runner: RoleProc
    tmp: Path

    def replay(self, name: str, records: Sequence[dict[str, Any]] = (), mcps: Sequence[MCPW] = ()) -> None:
        """Publish ``records`` (file-format JSON, from the sample) and ``mcps`` with `pareis replay` (a process of
        its own, as each connector run is), then wait until every role has committed everything."""
        paths = []
        if records:
            paths.append(self.tmp / f"{name}-sample.json")
            paths[-1].write_text(json.dumps(list(records)))
        if mcps:
            paths.append(self.tmp / f"{name}.json")
            write_metadata_file(paths[-1], list(mcps))
        done = subprocess.run(
            [sys.executable, "-m", "pareis.cli", "replay", *map(str, paths)],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"pareis replay {name}: {done.stdout}{done.stderr}"
        wait_until(self.settled, SETTLE_S, f"the roles to settle after {name}\n{self.runner.log_tail()}", every_s=0.2)
        wait_until(self.effects_done, SETTLE_S, f"the effects role after {name}\n{self.runner.log_tail()}", every_s=0.2)

    def settled(self) -> bool:
        assert self.runner.proc is not None and self.runner.proc.poll() is None, self.runner.log_tail()
        return all(
            caught_up(self.bootstrap, f"{self.group}-{role}", self.topics[topic], PARTITIONS)
            for role, topic in (
                ("lineage", "mcl_versioned"),
                ("assertions", "mcl_timeseries"),
                ("incidents", "signals"),
            )
        )

    def effects_done(self) -> bool:
        """The effects role has committed past the last effect (the topic is transactional: its end counts commit
        markers, so compare with the last record)."""
        last: dict[int, int] = {}
        for message in read_committed(self.bootstrap, self.topics["effects"], PARTITIONS):
            last[message.partition()] = max(last.get(message.partition(), -1), message.offset())
        done = committed(self.bootstrap, f"{self.group}-effects", self.topics["effects"], PARTITIONS)
        return all(done[p] > offset for p, offset in last.items())

    def stop(self) -> None:
        try:
            code = self.runner.stop(timeout_s=GRACE_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`pareis run all` still running {GRACE_S}s after SIGTERM\n{self.runner.log_tail()}")
        assert code == 0, f"`pareis run all` exited with {code}\n{self.runner.log_tail()}"
        assert read_committed(self.bootstrap, self.topics["dlq"], 1) == [], "dead letters"


@pytest.fixture
def live_factory(
    kafka_bootstrap: str, new_topic: NewTopic, new_group: str, redis_url: str, tmp_path: Path
) -> Iterator[Any]:
    started: list[Live] = []

    def start(settings: dict[str, str]) -> Live:
        topics = role_topics(new_topic, PARTITIONS)
        env = stack_env(
            kafka_bootstrap,
            new_group,
            topics,
            redis_url,
            {
                "PAREIS_RUNTIME__BATCH_TIMEOUT_S": "0.05",
                "PAREIS_RUNTIME__COMMIT_INTERVAL_MS": "200",
                "PAREIS_RUNTIME__BACKOFF_MAX_S": "2",
                "PAREIS_RUNTIME__SESSION_TIMEOUT_MS": "10000",
                "PAREIS_RUNTIME__SHUTDOWN_GRACE_S": str(GRACE_S),
                "PAREIS_RUNTIME__INSTANCE_ID": uuid.uuid4().hex[:8],
                "PAREIS_RUNTIME__HTTP_HOST": "127.0.0.1",
                "PAREIS_LOG_JSON": "true",
                **settings,
            },
        )
        runner = RoleProc("all", env, tmp_path)
        live = Live(kafka_bootstrap, new_group, topics, env, runner, tmp_path)
        started.append(live)
        runner.start()
        wait_until(runner.ready, 120, f"`pareis run all` ready\n{runner.log_tail()}", every_s=0.2)
        return live

    yield start
    for live in started:
        if live.runner.proc is not None and live.runner.proc.poll() is None:
            live.runner.kill()


@pytest.fixture
def fakes() -> Iterator[tuple[FakeSlack, FakeJira, FakeLinear]]:
    with ticket_servers() as (slack, jira, linear):
        slack.users.update(SLACK_USERS)
        jira.accounts.update(JIRA_USERS.values())
        linear.users.update(LINEAR_USERS.values())
        yield slack, jira, linear


Records = list[dict[str, Any]]


def sample_steps() -> tuple[Records, Records, Records]:
    """The sample's changes (file-format JSON) before day 6, its day-6 runs (the first failure), and churn_4's
    registration (day 7, 12:00; no run follows it)."""
    records: Records = json.loads(sample.TIMELINE.read_text())
    before = [r for r in records if clock(r) < DAY6]
    day6_runs = [r for r in records if clock(r) == DAY6]
    churn_4 = [r for r in records if clock(r) == DAY7 + 12 * 3_600_000]
    assert {r["aspectName"] for r in day6_runs} == {"assertionRunEvent"} and len(day6_runs) == 3
    assert churn_4 and {r["entityType"] for r in churn_4} >= {"mlModel", "dataProcessInstance"}
    return before, day6_runs, churn_4


def incident_infos(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """Every ``incidentInfo`` on the MCP topic, decoded (Pareis's codec, DataHub's schemas), in order."""
    decoder = Decoder(VendoredSchemaSource())
    out = []
    for message in read_committed(bootstrap, topic, PARTITIONS):
        change = decoder.decode_mcp(message.value())
        if change.aspect_name == "incidentInfo":
            assert change.entity_urn == INCIDENT
            out.append(change.aspect_json())
    return out


def entity_lists(gms: FakeGms) -> set[tuple[str, ...]]:
    """The ``entities`` of every ``incidentInfo`` of the incident GMS accepted; no accepted one (the probe's
    included) names a feature or a group."""
    infos = [r for r in gms.received if r.aspect_name == "incidentInfo"]
    named = {e for r in infos for e in r.aspect["entities"]}
    assert not any(":mlFeature:" in e or ":mlModelGroup:" in e for e in named), named
    return {tuple(r.aspect["entities"]) for r in infos if r.entity_urn == INCIDENT}


def ticket_copies(bootstrap: str, topic: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The incident's ``incidentExternalLinks`` and ``incidentNotes`` once every PATCH on the MCP topic is applied
    in order (as GMS would), each validated with acryl-datahub's class."""
    decoder = Decoder(VendoredSchemaSource())
    found: dict[str, Any] = {}
    for message in read_committed(bootstrap, topic, PARTITIONS):
        change = decoder.decode_mcp(message.value())
        if change.aspect_name in ("incidentExternalLinks", "incidentNotes"):
            assert change.entity_urn == INCIDENT and change.change_type == "PATCH"
            name = str(change.aspect_name)
            found[name] = apply_patch(name, found.get(name), change.aspect_json())
    links, notes = found["incidentExternalLinks"], found["incidentNotes"]
    assert IncidentExternalLinksClass.from_obj(links).validate() and IncidentNotesClass.from_obj(notes).validate()
    return links, notes


def actors(info: dict[str, Any]) -> list[str]:
    return [a["actor"] for a in info.get("assignees") or []]


def owners_section(description: str) -> list[str]:
    """The Owners section of a description (Markdown, decision first), its links as their labels."""
    lines = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", description).splitlines()
    start = lines.index("### Owners") + 1
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("- "))
    return lines[start + 1 : end]


def analyze_json(env: dict[str, str], redis_url: str) -> dict[str, Any]:
    """`pareis analyze --dataset KEY --redis … --json`: the incident's JSON, read from the live index."""
    done = subprocess.run(
        [sys.executable, "-m", "pareis.cli", "analyze", "--dataset", KEY, "--redis", redis_url, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"pareis analyze: {done.stdout}{done.stderr}"
    return dict(json.loads(done.stdout))


def test_owners_are_named_mentioned_assigned_and_followed_on_the_kafka_path(
    live_factory: Any, fakes: tuple[FakeSlack, FakeJira, FakeLinear], redis_url: str
) -> None:
    slack, jira, linear = fakes
    before, day6_runs, _ = sample_steps()
    live = live_factory(
        {
            "PAREIS_DATAHUB__WRITE_PATH": "kafka",
            "PAREIS_DATAHUB__ML_INCIDENT_TYPES": json.dumps(["mlModel", "mlFeature"]),
            **ticket_env(slack, jira, linear),
            "PAREIS_TICKETS__JIRA__USERS": json.dumps(JIRA_USERS),
            "PAREIS_TICKETS__LINEAR__USERS": json.dumps(LINEAR_USERS),
        }
    )
    live.replay("before-day-6", before, owners_mcps(B.T0 + 1))
    live.replay("day-6-runs", day6_runs)
    opened = incident_infos(live.bootstrap, live.topics["mcp"])

    # --- the incident names the owners: description, incidentInfo.assignees, the JSON ---------------------------
    dataset_owners = [ALICE, DAVE]  # its own and its dbt sibling's, URN order
    assert [i["status"]["state"] for i in opened] == ["ACTIVE", "ACTIVE"], "the dataset's, then with ML entities"
    for info in opened:
        assert actors(info) == dataset_owners, "incidentInfo.assignees: the failing dataset's owners"
        assert info["description"].startswith("### Decision\n"), "decision first"
        section = owners_section(info["description"])
        assert section[0] == f"- {short_name(KEY)} (failing dataset): alice@example.com and dave@example.com"
        for model in CHURN:
            expected = "ml-platform and bob@example.com" if model == CHURN_3 else "ml-platform"
            assert f"- {short_name(model)}: {expected}" in section, (model, section)
        assert not any(short_name(LTV_1) in line for line in section), "ltv has no owner"
        assert "fiona" not in info["description"], "a feature's owner is not an incident's"
    answer = analyze_json(live.env, redis_url)
    assert answer["incident"]["urn"] == INCIDENT
    assert answer["owners"]["dataset"] == [
        {"email": "alice@example.com", "urn": ALICE},
        {"email": "dave@example.com", "urn": DAVE},
    ]
    assert answer["owners"]["models"][CHURN_3] == [
        {"email": None, "urn": ML_PLATFORM},
        {"email": "bob@example.com", "urn": BOB},
    ]

    # --- incidents on the ML entities (datahub.ml_incident_types): versions and features, never a group --------
    dataset_only, with_ml = opened
    assert dataset_only["entities"] == [KEY]
    assert with_ml["entities"][0] == KEY and sorted(with_ml["entities"][1:]) == sorted([*MODELS, *FEATURES])
    assert not any(":mlModelGroup:" in e for i in opened for e in i["entities"])

    # --- the tickets: Slack mentions who it resolves, writes the rest as text; Jira and Linear assign ---------
    (message,) = slack.top_level()
    owners_line = next(line for line in str(message["text"]).splitlines() if line.startswith("Owners: "))
    assert owners_line == "Owners: <@UALICE01>, dave@example.com, ml-platform, <@UBOB0001>", owners_line
    # The payloads lead with the decision: Slack's header is the incident's title (the decision), the Owners section
    # mentions; Jira's description opens with the Decision heading; Linear's Markdown too.
    blocks = message["blocks"]
    assert blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": f":large_orange_circle: [MEDIUM] {opened[0]['title']}", "emoji": True},
    }
    assert opened[0]["title"].startswith("Roll back churn to "), opened[0]["title"]
    assert blocks[1]["text"]["text"].startswith("*churn*: *ROLL BACK to* "), blocks[1]
    owners_block = next(b["text"]["text"] for b in blocks if b["type"] == "section" and "*Owners*" in b["text"]["text"])
    assert "<@UALICE01>" in owners_block and "<@UBOB0001>" in owners_block, owners_block
    looked_up = sorted(str(r.form().get("email") or r.json().get("email")) for r in slack.calls("users.lookupByEmail"))
    assert looked_up == ["alice@example.com", "bob@example.com", "dave@example.com"], "each email once, cached"
    (issue,) = jira.issues.values()
    description = issue["fields"]["description"]["content"]
    assert (
        description[0]["content"] == [{"type": "text", "text": "Decision"}] and description[1]["type"] == "bulletList"
    )
    assert issue["fields"]["assignee"]["accountId"] == "acc-alice"
    assert issue["watchers"] == ["acc-ml", "acc-bob"]
    (linear_issue,) = linear.issues.values()
    assert linear_issue["description"].startswith("### Decision\n\n- **churn**: **ROLL BACK to** ")
    assert linear_issue["assigneeId"] == "lin-alice"
    assert linear_issue["subscriberIds"] == ["lin-bob"]

    # --- an owner change while the incident is active: picked up by the next Update, no run needed ------------
    live.replay("new-owner", mcps=stamped(DAY6 + 2 * 3_600_000, MCPW(entityUrn=KEY, aspect=ownership(ALICE, CAROL))))
    infos = incident_infos(live.bootstrap, live.topics["mcp"])
    assert len(infos) > len(opened), "an Update wrote the incident again"
    for info in infos[len(opened) :]:
        assert info["status"]["state"] == "ACTIVE"
        assert actors(info) == [ALICE, CAROL, DAVE], "the new owner is assigned"
        assert owners_section(info["description"])[0] == (
            f"- {short_name(KEY)} (failing dataset): alice@example.com, carol@example.com and dave@example.com"
        )
    change = f"+{short_name(KEY)}/carol"  # by short names: the URNs are in the JSON
    (thread,) = [slack.replies(m["ts"]) for m in slack.top_level()]
    assert any(change in str(r["text"]) for r in thread), thread
    assert any(change in json.dumps(c["body"]) for c in issue["comments"]), issue["comments"]
    assert any(change in c for c in linear.comments_on(linear_issue["id"]))
    live.stop()

    # --- DataHub's incident carries the tickets: a link to each, the Update's comment as a note per ticket -------
    links, notes = ticket_copies(live.bootstrap, live.topics["mcp"])
    urls = {
        "slack": f"https://pareis-test.slack.com/archives/{CHANNEL_ID}/p{message['ts'].replace('.', '')}",
        "jira": f"{jira.url}/browse/{issue['key']}",
        "linear": linear_issue["url"],
    }
    assert sorted((link["system"], link["url"]) for link in links["links"]) == sorted(urls.items())
    assert sorted(n["source"]["externalId"].rsplit("/", 1)[1] for n in notes["notes"]) == ["jira", "linear", "slack"]
    assert all(change in n["message"] for n in notes["notes"])


def test_ml_incidents_where_gms_accepts_them_and_a_human_edit_survives_on_the_rest_path(
    live_factory: Any, fakes: tuple[FakeSlack, FakeJira, FakeLinear]
) -> None:
    before, day6_runs, churn_4 = sample_steps()
    # A GMS that takes incidents on models (and feature tables) but refuses them on features.
    with FakeGms(incident_types=INCIDENT_TYPES_RELEASE | {"mlModel", "mlFeatureTable"}) as gms:
        live = live_factory(
            {
                "PAREIS_DATAHUB__WRITE_PATH": "rest",
                "PAREIS_DATAHUB__GMS_URL": gms.url,
                **ticket_env(*fakes),
            }
        )

        # The start-up probe asked GMS: one probe incident per ML type, the refused one never stored. Readiness
        # can come before the incidents role's probe has finished (seen in CI under load): wait for its last write.
        def probes_of() -> list[list[str]]:
            return [r.aspect["entities"] for r in gms.received if r.entity_urn == PROBE_INCIDENT]

        wait_until(lambda: [] in probes_of(), SETTLE_S, f"the start-up probe\n{live.runner.log_tail()}", every_s=0.2)
        probes = probes_of()
        assert sorted(tuple(e) for e in probes) == sorted(
            [
                ("urn:li:mlFeatureTable:(urn:li:dataPlatform:pareis,pareis-capability-probe)",),
                ("urn:li:mlModel:(urn:li:dataPlatform:pareis,pareis-capability-probe,PROD)",),
                (),
            ]
        ), probes

        live.replay("before-day-6", before, owners_mcps(B.T0 + 1))
        live.replay("day-6-runs", day6_runs)
        info = gms.aspect(INCIDENT, "incidentInfo")
        assert info is not None and info["status"]["state"] == "ACTIVE"
        assert actors(info) == [ALICE, DAVE], "incidentInfo.assignees: the failing dataset's owners"
        assert info["entities"] == [KEY, *MODELS], "on the model versions; not on features (refused), nor groups"
        # Two writes (the dataset's incident, then with the versions); REST delivery is at-least-once, so a write
        # may repeat. Every incidentInfo GMS accepted names no feature and no group, and none was refused: a
        # refused write would be a dead letter (checked at the stop).
        opened = entity_lists(gms)
        assert opened == {(KEY,), (KEY, *MODELS)}, opened

        # A person takes the incident in DataHub's UI: assigns themself, moves it to investigation, raises priority.
        oncall = "urn:li:corpuser:oncall"
        edited = {
            **info,
            "assignees": [{"actor": oncall, "assignedAt": {"time": DAY6 + 60_000, "actor": oncall}}],
            "status": {**info["status"], "stage": "INVESTIGATION"},
            "priority": 0,
        }
        gms.edit(INCIDENT, "incidentInfo", edited)
        # The tickets are linked on the incident; the on-call writes two notes in DataHub's UI (no source).
        links = gms.aspect(INCIDENT, "incidentExternalLinks")
        assert links is not None and sorted(link["system"] for link in links["links"]) == ["jira", "linear", "slack"]
        people = [
            {"message": "Paused the churn retrain", "created": {"time": DAY6 + 60_000, "actor": oncall}},
            {"message": "Data team is on it", "created": {"time": DAY6 + 90_000, "actor": oncall}},
        ]
        gms.edit(INCIDENT, "incidentNotes", {"notes": people})

        # churn_4 registered mid-incident (the sample's day 7): an Update, from the lineage change alone.
        live.replay("churn-4", churn_4)
        assert entity_lists(gms) - opened == {(KEY, *sorted([*MODELS, CHURN_4]))}, entity_lists(gms)
        after = gms.aspect(INCIDENT, "incidentInfo")
        assert after["entities"] == [KEY, *sorted([*MODELS, CHURN_4])], "the new version carries the incident"
        assert "churn_4 serves and trained on corrupt data" in after["description"], "Pareis's own fields move on"
        assert actors(after) == [oncall], "the person's assignee survives"
        assert after["status"]["stage"] == "INVESTIGATION" and after["priority"] == 0
        assert after["status"]["state"] == "ACTIVE"
        # The Update's comment is mirrored once per ticket; the people's notes are still there, first.
        notes = gms.aspect(INCIDENT, "incidentNotes")["notes"]
        assert notes[:2] == people and len(notes) == 5, notes
        assert sorted(n["source"]["externalId"].rsplit("/", 1)[1] for n in notes[2:]) == ["jira", "linear", "slack"]
        assert all("churn_4" in n["message"] for n in notes[2:]), "the comment: churn_4 joined the blast radius"
        live.stop()
