"""The retrain gate's topic on the real broker (issue 32 item 5, issue 35 item 1): ``pareis run scores`` creates
``pareis.gate.v1`` compacted at start-up, publishes one record per model when a decision changes and none when it
does not.

Redis holds the demo recording up to the poisoned retrain (steps 01–08, through ``pareis bootstrap``); the test then
plays the assertions role's part for one assertion — the not-null test of ``raw.transactions.unit_price`` — by
recording its runs and producing their signals: its SUCCESS of day 4 (the first decisions), the same signal again
(a redelivery: nothing changed), then its FAILURE of day 5 (an active incident reaches churn_3 and ltv_3).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from pareis.core.runs import AssertionRun
from pareis.roles.messages import RunSignal, encode
from pareis.store.runs_redis import RedisRunHistory
from tests.support.live import RoleProc, pareis, read_committed, role_topics, stack_env
from tests.support.recorded import RECORDED, mlflow, recorded_sources
from tests.support.roles import caught_up, wait_until
from tests.support.stack import NewTopic

pytestmark = pytest.mark.integration

PARTITIONS = 3
UNIT_PRICE = "urn:li:assertion:6e41cb73d72b9001ee4652988641ffbb"
DAY4, DAY5 = 1_759_644_000_000, 1_759_730_400_000  # 2025-10-05T06:00Z (tests pass), 2025-10-06T06:00Z (fail)


def runs_of(at_ms: int) -> AssertionRun:
    [run] = [r for r in recorded_sources().runs.timeline([UNIT_PRICE], None) if r.timestamp_ms == at_ms]
    return run


def test_a_decision_change_is_one_record_an_unchanged_one_none_on_a_compacted_topic(
    kafka_bootstrap: str,
    kafka_admin: AdminClient,
    new_topic: NewTopic,
    new_group: str,
    redis_url: str,
    later_topic: str,
    tmp_path: Path,
) -> None:
    url = redis_url  # the session's own database, flushed for this test
    gate_topic = later_topic  # not created: the scores role creates it at start-up
    topics = {**role_topics(new_topic, PARTITIONS), "gate": gate_topic}
    env = stack_env(
        kafka_bootstrap,
        new_group,
        topics,
        url,
        {
            "PAREIS_KAFKA__TOPIC_PARTITIONS": str(PARTITIONS),
            "PAREIS_RUNTIME__HTTP_HOST": "127.0.0.1",
            "PAREIS_RUNTIME__COMMIT_INTERVAL_MS": "100",
            "PAREIS_LOG_JSON": "true",
        },
    )
    steps = sorted(RECORDED.glob("0[1-8]-*.json"))
    loaded = pareis(
        ["bootstrap", *(a for p in steps for a in ("--metadata", str(p))), "--redis", url], env, timeout_s=300
    )
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    history = RedisRunHistory(redis.Redis.from_url(url))
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "acks": "all"})

    def signal(run: AssertionRun) -> None:
        history.record(run)  # as the assertions role records a run before it forwards its signal
        producer.produce(topics["signals"], encode(RunSignal(run.dataset, run, run.timestamp_ms)), run.dataset.encode())
        assert producer.flush(30) == 0

    def published() -> list[tuple[str, dict[str, object]]]:
        """The gate topic's records, in offset order per partition (the role's caught up with its input first)."""
        group = f"{new_group}-scores"
        wait_until(lambda: caught_up(kafka_bootstrap, group, topics["signals"], PARTITIONS), 120, "scores caught up")
        records = read_committed(kafka_bootstrap, gate_topic, PARTITIONS)
        return [(m.key().decode(), orjson.loads(m.value())) for m in records]

    role = RoleProc("scores", env, tmp_path)
    role.start()
    try:
        wait_until(role.ready, 120, f"the scores role ready\n{role.log_tail()}", every_s=0.2)
        # Created at start-up, as configured: the partitions, and compacted (the latest decision per model counts).
        assert len(kafka_admin.list_topics(timeout=10).topics[gate_topic].partitions) == PARTITIONS
        (configs,) = kafka_admin.describe_configs([ConfigResource("topic", gate_topic)]).values()
        assert configs.result(30)["cleanup.policy"].value == "compact"

        passing = runs_of(DAY4)
        signal(passing)
        first = published()
        models = [model for model, _ in first]
        assert len(models) == len(set(models)), "one record per model"
        churn, churn_3 = mlflow("mlModelGroup", "churn"), mlflow("mlModel", "churn_3")
        assert {churn, mlflow("mlModelGroup", "ltv"), churn_3} <= set(models), models
        assert all(answer["evaluated_at_ms"] == DAY4 for _, answer in first)
        decided = {model: (answer["decision"], answer.get("evaluated")) for model, answer in first}
        assert decided[churn_3][0] == "GO", first

        signal(passing)  # redelivered: the same run, the same decisions
        assert published() == first, "an unchanged decision is not published again"

        signal(runs_of(DAY5))
        after = published()
        assert all(record in after for record in first), "the earlier records are kept (nothing compacted yet)"
        new = [(m, a) for m, a in after if (m, a) not in first]
        changed = [m for m, _ in new]
        assert len(changed) == len(set(changed)), "one record per changed decision"
        assert churn_3 in changed and dict(new)[churn_3]["decision"] == "NO-GO"
        for model, answer in new:
            assert answer["evaluated_at_ms"] == DAY5
            assert (answer["decision"], answer.get("evaluated")) != decided[model], f"{model} did not change"
        unchanged = set(decided) - set(changed)
        assert all(decided[m][0] != "GO" for m in unchanged), "a model left out was not GO before either"
        assert role.stop() == 0, role.log_tail()
    finally:
        if role.proc is not None and role.proc.poll() is None:
            role.kill()
