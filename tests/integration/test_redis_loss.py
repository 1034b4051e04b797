"""A Redis that loses its data mid-run — flushed, or restarted without persistence — with and without an active
incident (issue 34, item 1): the roles stop with the loss named (exit 1) rather than answer from a partial index, no
incident is opened from it and none a second time for the same failure streak, and a restart refuses with the real
cause until the state is rebuilt; ``pareis bootstrap`` then makes it trusted again.

The sample timeline (tests/support/sample: one incident on the warehouse sibling of stg_transactions, failing on
days 6 and 7, healed on day 8) is replayed in two parts around the loss, on a redis-server of the test's own."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster
from typer.testing import CliRunner

from pareis.compose.ports import redis_client
from pareis.compose.process import run_roles
from pareis.compose.replay import kafka_sink, replayer
from pareis.compose.roles import resolve_roles
from pareis.config import Settings
from pareis.datahub.wire.codec import Decoder
from pareis.datahub.wire.registry import VendoredSchemaSource
from pareis.store.redis_epoch import Epoch, IndexLost
from tests.support import sample
from tests.support.pipeline import INCIDENT, caught_up, read_all, running, settings_for
from tests.support.private_redis import Server
from tests.support.recorded import RECORDED, mlflow
from tests.support.roles import wait_until
from tests.support.stack import NewTopic

pytestmark = pytest.mark.integration

ROLES = ["lineage", "assertions", "incidents"]
CHURN = mlflow("mlModelGroup", "churn")


def parts(tmp_path: Path, last_day_before: int) -> tuple[Path, Path, Path]:
    """The sample timeline as three files: the metadata, the runs up to day ``last_day_before``, the later runs."""
    b = sample.builder()
    records = json.loads(sample.TIMELINE.read_text())

    def day(r: dict[str, object]) -> int:
        aspect = r["aspect"]
        assert isinstance(aspect, dict)
        return int((aspect["json"]["timestampMillis"] - b.T0) // b.DAY)

    runs = [r for r in records if r.get("aspectName") == "assertionRunEvent"]
    files = (tmp_path / "metadata.json", tmp_path / "before.json", tmp_path / "after.json")
    for path, part in zip(
        files,
        (
            [r for r in records if r.get("aspectName") != "assertionRunEvent"],
            [r for r in runs if day(r) <= last_day_before],
            [r for r in runs if day(r) > last_day_before],
        ),
        strict=True,
    ):
        path.write_text(json.dumps(part))
    return files


@contextmanager
def roles_running(settings: Settings) -> Iterator[list[int]]:
    """The roles in a thread; the list gets ``run_roles``' exit code when they stop (by themselves, or at the end)."""
    stop = threading.Event()
    codes: list[int] = []
    roles = resolve_roles(ROLES, settings)
    thread = threading.Thread(target=lambda: codes.append(run_roles(roles, settings, stop=stop)))
    thread.start()
    try:
        yield codes
    finally:
        stop.set()
        thread.join(60)
        assert not thread.is_alive()


def incident_writes(settings: Settings) -> list[tuple[str | None, str]]:
    decoder = Decoder(VendoredSchemaSource())
    out = []
    for message in read_all(settings, settings.kafka.topics.mcp):
        change = decoder.decode_mcp(message.value())
        if change.aspect_name == "incidentInfo":
            out.append((change.entity_urn, change.aspect_json()["status"]["state"]))
    return out


def flushed(server: Server) -> None:
    with redis.Redis(port=server.port) as client:
        client.flushall()


@pytest.mark.parametrize("lose", [flushed, Server.restart], ids=["flushed", "restarted-without-persistence"])
@pytest.mark.parametrize("last_day_before", [4, 6], ids=["no-incident-yet", "incident-active"])
def test_the_roles_stop_with_the_loss_named_and_never_answer_from_the_partial_index(
    kafka_bootstrap: str,
    new_topic: NewTopic,
    new_group: str,
    private_redis: Callable[..., Server],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    lose: Callable[[Server], None],
    last_day_before: int,
) -> None:
    server = private_redis()
    settings = settings_for(kafka_bootstrap, new_topic, new_group, server.url)
    topics = settings.kafka.topics
    metadata, before, after = parts(tmp_path, last_day_before)
    replay = replayer(settings, kafka_sink(settings), default_ms=0)
    replay.run_files([metadata])
    # The lineage index first: an assertion run is keyed through siblings the index must already know.
    with running(["lineage"], settings):
        wait_until(lambda: caught_up(settings, "lineage", topics.mcl_versioned), 120, "lineage to catch up")
    replay.run_files([before])
    active = last_day_before >= 6

    with roles_running(settings) as codes:
        wait_until(lambda: caught_up(settings, "assertions", topics.mcl_timeseries), 120, "assertions to catch up")
        if active:
            wait_until(lambda: caught_up(settings, "incidents", topics.signals), 120, "incidents to catch up")
        assert incident_writes(settings) == ([(INCIDENT, "ACTIVE")] if active else [])
        capfd.readouterr()
        lose(server)
        replay.run_files([after])  # day 7 fails again (the same streak) or days 6-8 fail and heal
        wait_until(lambda: codes, 120, "the roles to stop by themselves")
    assert codes == [1]
    out = capfd.readouterr()
    failed = [line for line in (out.out + out.err).splitlines() if "role failed" in line]
    assert failed and all("lost its data" in line and "pareis bootstrap" in line for line in failed), failed
    # Nothing answered from the partial index: no incident opened from it, and no second one for the streak.
    assert incident_writes(settings) == ([(INCIDENT, "ACTIVE")] if active else [])

    # A restart refuses with the real cause (not "layout 1 (no layout key)"), however many times it is tried.
    with roles_running(settings) as again:
        wait_until(lambda: again, 60, "the restarted roles to refuse")
    assert again == [1]
    out = capfd.readouterr()
    assert "lost its data (marked: lost" in out.out + out.err
    assert "layout" not in " ".join(line for line in (out.out + out.err).splitlines() if "role failed" in line)


def test_a_read_command_on_a_redis_that_lost_its_data_exits_2_with_one_line(redis_backend_url: str) -> None:
    """``pareis analyze --model … --redis`` answers from the bootstrapped index; once a role saw the loss (and
    marked it), and for keys no epoch vouches for, it refuses: exit 2, one line naming the loss and the rebuild. On
    standalone Redis and Redis Cluster. The rebuild (``pareis bootstrap``) makes it answer again."""
    from pareis import cli

    runner = CliRunner()

    def incidents() -> Any:
        return runner.invoke(cli.app, ["analyze", "--model", CHURN, "--redis", redis_backend_url, "--json"])

    loaded = runner.invoke(cli.app, ["bootstrap", "--metadata", str(RECORDED), "--redis", redis_backend_url])
    assert loaded.exit_code == 0, loaded.output
    assert incidents().exit_code == 0
    client = redis_client(redis_backend_url)
    role = Epoch(client, redis_backend_url)
    role.open()
    everything_gone(client)
    with pytest.raises(IndexLost):
        role.check()  # a running role notices, and marks the loss
    refused = incidents()
    assert refused.exit_code == 2 and refused.stdout == ""
    assert len(refused.stderr.splitlines()) == 1 and "lost its data" in refused.stderr and "bootstrap" in refused.stderr

    again = runner.invoke(cli.app, ["bootstrap", "--metadata", str(RECORDED), "--redis", redis_backend_url])
    assert again.exit_code == 0, again.output
    assert incidents().exit_code == 0
    everything_gone(client)
    client.set("pareis:lineage:layout", "3")  # written after the loss by a process that had not noticed it
    refused = incidents()
    assert refused.exit_code == 2 and "holds Pareis keys but no epoch" in refused.stderr
    client.close()


def everything_gone(client: Any) -> None:
    if isinstance(client, RedisCluster):
        for node in client.get_primaries():
            client.get_redis_connection(node).flushall()
    else:
        client.flushdb()
