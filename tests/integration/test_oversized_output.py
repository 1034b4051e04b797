"""A valid run event whose signal is over the producer's limit, on the real broker (issue 34): a run whose ``runId``
is 2 MB. Before, the assertions role's producer refused the signal (``MSG_SIZE_TOO_LARGE``, Fatal) and the role
restarted on that input for ever (40 restarts in 150 s, no dead letter, no incident). Now the input is
dead-lettered with the reason, truncated to the dead-letter bound, and the runs after it are signalled."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from pareis.contracts.records import header
from pareis.kafka import dlq
from pareis.roles.messages import decode_signal
from tests.support.frames import run_event
from tests.support.live import RoleProc, read_committed, stack_env
from tests.support.roles import caught_up, wait_until
from tests.support.stack import NewTopic

pytestmark = pytest.mark.integration

DATASET = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.orders,PROD)"
ASSERTION = "urn:li:assertion:not_null_order_id"
DATAHUB_MAX_BYTES = "5242880"  # DataHub's change-log topics take records of up to 5 MB


def test_a_2mb_run_id_dead_letters_its_run_event_and_the_assertions_role_goes_on(
    kafka_bootstrap: str, new_topic: NewTopic, new_group: str, redis_url: str, tmp_path: Path
) -> None:
    topics = {
        "mcl_timeseries": new_topic(1, max_message_bytes=DATAHUB_MAX_BYTES),
        "signals": new_topic(1),
        "dlq": new_topic(1),
    }
    runs = enumerate(["r-0", "r" * 2_000_000, "r-2"])
    values = [run_event(topics["mcl_timeseries"], ASSERTION, DATASET, 1_000 * i, rid) for i, rid in runs]
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "message.max.bytes": DATAHUB_MAX_BYTES})
    for value in values:
        producer.produce(topics["mcl_timeseries"], value, ASSERTION.encode())
    assert producer.flush(30) == 0
    env = stack_env(kafka_bootstrap, new_group, topics, redis_url, {"PAREIS_RUNTIME__HTTP_HOST": "127.0.0.1"})
    role = RoleProc("assertions", env, tmp_path)
    role.start()
    try:
        group = f"{new_group}-assertions"

        def done() -> bool:
            assert role.proc is not None and role.proc.poll() is None, f"the role stopped\n{role.log_tail()}"
            return caught_up(kafka_bootstrap, group, topics["mcl_timeseries"], 1)

        wait_until(done, 90, f"the three run events committed\n{role.log_tail()}", every_s=0.2)
        assert role.stop(30) == 0, role.log_tail()
    finally:
        if role.proc is not None and role.proc.poll() is None:
            role.kill()

    signals = [decode_signal(m.value()) for m in read_committed(kafka_bootstrap, topics["signals"], 1)]
    assert [s.run.run_id for s in signals] == ["r-0", "r-2"]
    (letter,) = read_committed(kafka_bootstrap, topics["dlq"], 1)
    headers = letter.headers()
    assert header(headers, dlq.SOURCE_OFFSET) == b"1"
    assert header(headers, dlq.ERROR_REASON) == b"output-too-large"
    assert header(headers, dlq.ORIGINAL_SIZE) == str(len(values[1])).encode()
    assert header(headers, dlq.TRUNCATED) == b"true"
    assert values[1].startswith(letter.value()) and len(letter.value()) < dlq.DEFAULT_MAX_BYTES
