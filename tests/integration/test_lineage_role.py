"""The lineage role on the real broker and Redis: the bundled sample, replayed by ``pareis replay`` into fresh topics
and consumed by the real runtime until the group's lag is 0, gives the index the offline loader builds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from typer.testing import CliRunner

from pareis.compose.process import run_roles
from pareis.compose.roles import resolve_roles
from pareis.config import KafkaSettings, RuntimeSettings, Settings, Topics
from pareis.core.blast import blast_radius
from pareis.datahub.files.metadata_file import read_proposals
from pareis.datahub.translate.lineage import LINEAGE_ASPECTS
from pareis.kafka import dlq as dlq_headers
from pareis.lineage_loader import load_files
from pareis.store.exposure_redis import RedisExposureIndex
from pareis.store.lineage import AspectRecord, LineageStore
from pareis.store.lineage_memory import MemoryLineageStore
from pareis.store.lineage_redis import RedisLineageStore
from tests.support.roles import committed, end_offsets, read_topic
from tests.support.stack import wait_until

pytestmark = pytest.mark.integration
SAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "demo" / "sample" / "timeline.json"
PARTITIONS = 3


def canonical(record: AspectRecord | None) -> str | None:
    if record is None:
        return None
    return f"{record.stamp}:{record.facts.encode() if record.facts is not None else 'deleted'}"


def snapshot(store: LineageStore) -> dict[str, dict[str, Any]]:
    """What a reader sees of the sample's index: each (entity, aspect) record and every blast radius."""
    proposals = list(read_proposals([SAMPLE]))
    keys = sorted({(p.entity_urn, p.aspect_name) for p in proposals if p.aspect_name in LINEAGE_ASPECTS})
    assertions = sorted({p.entity_urn for p in proposals if p.aspect_name == "assertionInfo"})
    datasets = sorted({p.entity_urn for p in proposals if p.entity_type == "dataset"})
    return {
        "records": {f"{e}|{a}": canonical(store.record(e, a)) for e, a in keys},
        "assertions": {a: blast_radius(store, assertions=[a]).to_json() for a in assertions},
        "datasets": {d: blast_radius(store, datasets=[d]).to_json() for d in datasets},
    }


FEATURES_DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,retail.analytics.customer_features,PROD)"


def with_a_malformed_lineage_entry(directory: Path) -> Path:
    """The sample with one malformed fineGrainedLineages entry among customer_features' valid ones."""
    timeline = json.loads(SAMPLE.read_text())
    (lineage,) = [c for c in timeline if c["entityUrn"] == FEATURES_DBT and c["aspectName"] == "upstreamLineage"]
    bad = {"upstreamType": "FIELD_SET", "downstreamType": "FIELD", "downstreams": ["customer_id"], "upstreams": []}
    lineage["aspect"]["json"]["fineGrainedLineages"].insert(0, bad)
    path = directory / "timeline.json"
    path.write_text(json.dumps(timeline))
    return path


@pytest.mark.parametrize("malformed", [False, True], ids=["sample", "one-malformed-lineage-entry"])
def test_role_on_replayed_sample_equals_the_loaded_index(
    kafka_bootstrap: str,
    new_topic: Callable[..., str],
    new_group: str,
    redis_url: str,
    redis_client: redis.Redis,
    malformed: bool,
    tmp_path: Path,
) -> None:
    sample = with_a_malformed_lineage_entry(tmp_path) if malformed else SAMPLE
    versioned, timeseries, dlq = new_topic(PARTITIONS), new_topic(1), new_topic(1)
    command = [sys.executable, "-m", "pareis.cli", "replay", str(sample), "--bootstrap-servers", kafka_bootstrap]
    command += ["--versioned-topic", versioned, "--timeseries-topic", timeseries]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ}, check=False)
    assert done.returncode == 0, done.stderr

    settings = Settings(
        kafka=KafkaSettings(
            bootstrap_servers=kafka_bootstrap,
            group_prefix=new_group,
            topics=Topics(mcl_versioned=versioned, mcl_timeseries=timeseries, dlq=dlq),
        ),
        redis_url=redis_url,
        runtime=RuntimeSettings(batch_size=7, commit_interval_ms=100, http_port=0, http_host="127.0.0.1"),
        log_json=True,
    )
    roles = resolve_roles(["lineage"], settings)
    group = roles[0].group
    ends = end_offsets(kafka_bootstrap, versioned, PARTITIONS)
    assert sum(ends.values()) > 0
    stop = threading.Event()
    exit_codes: list[int] = []
    runner = threading.Thread(target=lambda: exit_codes.append(run_roles(roles, settings, stop=stop)))
    runner.start()
    try:

        def caught_up() -> bool:
            offsets = committed(kafka_bootstrap, group, versioned, PARTITIONS)
            return all(offsets[p] == end for p, end in ends.items() if end > 0)

        wait_until(caught_up, 90, f"group {group} to commit every offset of {versioned}", every_s=0.2)
    finally:
        stop.set()
        runner.join(60)
    assert not runner.is_alive() and exit_codes == [0]
    if malformed:
        (letter,) = read_topic(kafka_bootstrap, dlq, 1)
        assert dict(letter.headers())[dlq_headers.ERROR_REASON] == b"lineage-incomplete", "the bad part only"
    else:
        assert end_offsets(kafka_bootstrap, dlq, 1) == {0: 0}, "nothing was dead-lettered"

    memory = MemoryLineageStore()
    load_files(memory, [sample])
    from_redis = snapshot(RedisLineageStore(redis_client))
    assert json.dumps(from_redis, sort_keys=True) == json.dumps(snapshot(memory), sort_keys=True)
    churn = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_3,PROD)"
    assert any(churn in json.dumps(b["models"]) for b in from_redis["assertions"].values())

    # `pareis blast --redis` reads that index; without the assertions role there are no runs, so no failed rows.
    assertion = sorted(from_redis["assertions"])[0]
    live, offline = (
        cli_blast(source, "--assertion", assertion) for source in (["--redis", redis_url], ["--metadata", str(sample)])
    )
    assert live["blast"] == {**offline["blast"], "failed_rows": None}
    assert offline["blast"]["models"]
    incomplete = [b.get("lineage_incomplete") for b in from_redis["assertions"].values()]
    assert any(FEATURES_DBT in (i or ()) for i in incomplete) == malformed


def cli_blast(*args: str | list[str]) -> dict[str, Any]:
    from pareis import cli

    flat = [a for arg in args for a in ([arg] if isinstance(arg, str) else arg)]
    result = CliRunner().invoke(cli.app, ["blast", *flat, "--json"])
    assert result.exit_code == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def cli(*args: str) -> Any:
    from pareis import cli as pareis_cli

    return CliRunner().invoke(pareis_cli.app, list(args))


def test_bootstrap_loads_redis_idempotently_and_analyze_reads_it_as_the_files(
    redis_url: str, redis_client: redis.Redis
) -> None:
    first = cli("bootstrap", "--metadata", str(SAMPLE), "--redis", redis_url)
    assert first.exit_code == 0, first.stderr
    assert "assertion runs: 18 (18 new)" in first.stdout
    exposure = RedisExposureIndex(redis_client)
    assert exposure.generation() == 1, "a load that changed the lineage advances the generation, as the role does"
    again = cli("bootstrap", "--metadata", str(SAMPLE), "--redis", redis_url)
    assert (
        again.exit_code == 0 and "(repeated 48, unchanged 8)" in again.stdout and "(0 new)" in again.stdout
    )  # 52 proposals + the 4 siblings GMS's hook writes; 8 of them restate an equal value under a newer stamp
    assert exposure.generation() == 2, "a repeated load may be the redo of one that stopped before its advance"

    memory = MemoryLineageStore()
    runs = load_files(memory, [SAMPLE]).runs
    assert snapshot(RedisLineageStore(redis_client)) == snapshot(memory)
    (assertion,) = {r.assertion for r in runs if r.result.value == "FAILURE"}
    analyze_agrees(redis_url, assertion)


def analyze_agrees(redis_url: str, assertion: str) -> None:
    """``pareis analyze`` of ``assertion`` answers the same from Redis as from the sample file."""
    answers = [
        cli("analyze", *source, "--assertion", assertion, "--json")
        for source in (["--redis", redis_url], ["--metadata", str(SAMPLE)])
    ]
    assert [a.exit_code for a in answers] == [0, 0], [a.stderr for a in answers]
    assert answers[0].stdout == answers[1].stdout


def test_bootstrap_from_datahub_fills_redis_as_the_files_do(redis_url: str) -> None:
    from tests.support.fake_gms_reads import FakeGmsReads

    with FakeGmsReads(token="secret") as gms:
        done = cli("bootstrap", "--datahub", gms.url, "--token", "secret", "--redis", redis_url)
    assert done.exit_code == 0, done.stderr
    assert "assertion runs: 18 (18 new)" in done.stdout and "(applied 48)" in done.stdout
    memory = MemoryLineageStore()
    runs = load_files(memory, [SAMPLE]).runs
    (assertion,) = {r.assertion for r in runs if r.result.value == "FAILURE"}
    analyze_agrees(redis_url, assertion)


def test_bootstrap_with_a_token_datahub_refuses_exits_1(redis_url: str) -> None:
    from tests.support.fake_gms_reads import FakeGmsReads

    with FakeGmsReads(token="secret") as gms:
        refused = cli("bootstrap", "--datahub", gms.url, "--token", "wrong", "--redis", redis_url)
    assert refused.exit_code == 1 and "401" in refused.stderr
