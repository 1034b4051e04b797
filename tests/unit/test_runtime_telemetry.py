"""Metrics, health and the HTTP endpoint of a process."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import orjson
import pytest

from pareis.telemetry.health import Health
from pareis.telemetry.http import TelemetryServer
from pareis.telemetry.metrics import RuntimeMetrics


class Clock:
    """A settable monotonic clock (the readiness checks' results are reused within their window)."""

    now = 1000.0

    def __call__(self) -> float:
        return self.now


CLOCK = Clock()


@pytest.fixture
def served() -> tuple[RuntimeMetrics, Health, httpx.Client]:
    metrics, health = RuntimeMetrics(), Health(check_every_s=2.0, clock=CLOCK)
    server = TelemetryServer(metrics.registry, health, "127.0.0.1", 0).start()
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=5) as client:
        yield metrics, health, client
    server.stop()


def test_metrics_are_exposed_per_role_and_partition(served: tuple[RuntimeMetrics, Health, httpx.Client]) -> None:
    metrics, _, client = served
    metrics.count("lineage", {("mcl", 3): 5}, metrics.consumed)
    metrics.count_errors("lineage", {"DecodeError": 2})
    metrics.set_lag("lineage", {("mcl", 3): 42})
    metrics.batch_seconds.labels("lineage").observe(0.01)
    body = client.get("/metrics").text
    assert 'pareis_messages_consumed_total{partition="3",role="lineage",topic="mcl"} 5.0' in body
    assert 'pareis_errors_total{error_class="DecodeError",role="lineage"} 2.0' in body
    assert 'pareis_consumer_lag{partition="3",role="lineage",topic="mcl"} 42.0' in body
    assert 'pareis_batch_duration_seconds_count{role="lineage"} 1.0' in body
    metrics.drop_partitions("lineage", [("mcl", 3)])
    assert "pareis_consumer_lag{" not in client.get("/metrics").text


def test_healthz_fails_when_a_loop_goes_silent(served: tuple[RuntimeMetrics, Health, httpx.Client]) -> None:
    _, health, client = served
    beat = health.loop("lineage", max_silence_s=60)
    assert client.get("/healthz").status_code == 200
    beat.last -= 120  # as if the loop had not come back for two minutes
    response = client.get("/healthz")
    assert response.status_code == 503
    assert orjson.loads(response.content)["details"]["lineage"].startswith("silent for")
    beat.beat()
    assert client.get("/healthz").status_code == 200


def test_a_loop_blocked_in_a_call_past_its_limit_is_neither_alive_nor_ready_at_once(
    served: tuple[RuntimeMetrics, Health, httpx.Client],
) -> None:
    """Issue 34: a role wedged in a Kafka call showed 200 on /readyz, and /healthz failed only after 300 s of
    silence. A call past its limit fails both at once, long before the loop's allowed silence."""
    _, health, client = served
    health.gate("incidents.joined", True)
    beat = health.loop("incidents", max_silence_s=300)
    with beat.calling("send_offsets_to_transaction", 7):
        CLOCK.now += 6
        assert client.get("/healthz").status_code == 200, "within its limit"
        assert client.get("/readyz").status_code == 200
        CLOCK.now += 2
        alive, ready = client.get("/healthz"), client.get("/readyz")
        assert alive.status_code == ready.status_code == 503
        reason = "blocked in send_offsets_to_transaction for 8s (deadline 7s)"
        assert orjson.loads(alive.content)["details"]["incidents"] == reason
        assert orjson.loads(ready.content)["details"]["incidents"] == reason
    assert client.get("/healthz").status_code == client.get("/readyz").status_code == 200, "the call returned"


def test_a_call_made_inside_another_moves_the_outer_calls_deadline() -> None:
    """A rebalance callback commits inside a poll: the poll's limit counts without the commit's time."""
    health = Health(clock=CLOCK)
    beat = health.loop("incidents", max_silence_s=300)
    with beat.calling("consume", 2):
        with beat.calling("commit_transaction", 7):
            CLOCK.now += 6
            assert beat.overrun() is None
            assert beat.call is not None and beat.call.within() == ["commit_transaction", "consume"]
        CLOCK.now += 1
        assert beat.overrun() is None, "the poll itself took 1 s of its 2"
        CLOCK.now += 1.5
        found = beat.overrun()
        assert found is not None and found[0].what == "consume" and found[1] == pytest.approx(0.5)
    assert beat.call is None


def test_readyz_needs_open_gates_and_passing_checks(served: tuple[RuntimeMetrics, Health, httpx.Client]) -> None:
    _, health, client = served
    assert client.get("/readyz").status_code == 503  # nothing registered yet: not ready
    health.gate("lineage.joined", False)
    down = {"redis": True}

    def redis_check() -> None:
        if down["redis"]:
            raise ConnectionError("connection refused")

    health.check("lineage.redis", redis_check)
    assert client.get("/readyz").status_code == 503
    health.gate("lineage.joined", True)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert orjson.loads(response.content)["details"]["lineage.redis"] == "ConnectionError: connection refused"
    down["redis"] = False
    assert client.get("/readyz").status_code == 503, "the last result is reused within its window"
    CLOCK.now += 2.5
    assert client.get("/readyz").json() == {"ok": True, "details": {"lineage.joined": "ok", "lineage.redis": "ok"}}
    assert client.get("/nope").status_code == 404


def test_readyz_is_no_amplifier_however_often_it_is_asked(
    served: tuple[RuntimeMetrics, Health, httpx.Client],
) -> None:
    _, health, client = served
    calls = []
    health.gate("lineage.joined", True)
    health.check("lineage.redis", lambda: calls.append(1))
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: client.get("/readyz").status_code, range(60)))
    assert set(codes) == {200} and len(calls) == 1, "one Redis PING for 60 probes within the window"
    CLOCK.now += 2.5
    client.get("/readyz")
    assert len(calls) == 2


def test_logs_follow_the_current_stderr_even_after_the_old_one_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CLI runner (or pytest) swaps and closes sys.stderr; a logger bound to the old stream failed every later
    log call with "I/O operation on closed file" (seen when a CLI test configured logging before runtime tests)."""
    import io
    import logging

    import structlog

    from pareis.telemetry.logging import configure_logging

    first = io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    configure_logging("INFO", json=True)
    structlog.get_logger("t").info("one")
    first.close()
    second = io.StringIO()
    monkeypatch.setattr("sys.stderr", second)
    structlog.get_logger("t").warning("two", key="v")
    logging.getLogger("lib").warning("three")
    lines = second.getvalue().splitlines()
    assert [orjson.loads(line)["event"] for line in lines] == ["two", "three"]
