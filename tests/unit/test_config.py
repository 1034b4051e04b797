"""Settings: environment and YAML sources, and the per-role runtime cadence."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import structlog.testing
from pydantic import ValidationError

from pareis.compose.roles import effects_process
from pareis.config import Settings, SettingsError, TicketSettings, load_settings
from pareis.errors import Fatal
from pareis.telemetry.logging import configure_logging
from pareis.tickets.factory import check_ticket_tools


def test_the_incident_path_is_tuned_for_latency_and_lineage_for_throughput() -> None:
    runtime = load_settings().runtime
    lineage, incidents = runtime.for_role("lineage"), runtime.for_role("incidents")
    assert lineage.commit_interval_ms == runtime.commit_interval_ms
    assert incidents.commit_interval_ms < lineage.commit_interval_ms
    assert incidents.batch_timeout_s < lineage.batch_timeout_s
    assert incidents.batch_size == runtime.batch_size, "fields without an override keep the process-wide value"


def test_role_overrides_refine_the_defaults_field_by_field(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = load_settings().runtime
    monkeypatch.setenv("PAREIS_RUNTIME__ROLES__INCIDENTS__COMMIT_INTERVAL_MS", "7")
    monkeypatch.setenv("PAREIS_RUNTIME__ROLES__LINEAGE__BATCH_SIZE", "2000")
    runtime = load_settings().runtime
    assert runtime.for_role("incidents").commit_interval_ms == 7
    assert runtime.for_role("incidents").batch_timeout_s == defaults.for_role("incidents").batch_timeout_s
    cadence = ("batch_size", "batch_timeout_s", "commit_every", "commit_interval_ms")
    for field in cadence:
        assert getattr(runtime.for_role("assertions"), field) == getattr(defaults.for_role("assertions"), field)
    assert runtime.for_role("lineage").batch_size == 2000


def test_settings_are_frozen_and_a_variant_is_a_copy() -> None:
    settings = load_settings()
    with pytest.raises(ValidationError, match="frozen"):
        settings.kafka.topics.mcl_versioned = "elsewhere"
    with pytest.raises(ValidationError, match="frozen"):
        settings.redis_url = "redis://elsewhere:6379/0"
    variant = settings.datahub.model_copy(update={"actor": "urn:li:corpuser:other"})
    assert variant.actor == "urn:li:corpuser:other" and settings.datahub.actor == "urn:li:corpuser:pareis"


def test_init_overrides_refine_a_section_key_by_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # What `pareis replay --bootstrap-servers … --versioned-topic …` relies on: the other keys keep their values.
    monkeypatch.setenv("PAREIS_KAFKA__TOPICS__MCP", "mcp-from-env")
    monkeypatch.setenv("PAREIS_KAFKA__GROUP_PREFIX", "group-from-env")
    kafka = load_settings(kafka={"bootstrap_servers": "b:9092", "topics": {"mcl_versioned": "versioned"}}).kafka
    assert (kafka.bootstrap_servers, kafka.topics.mcl_versioned) == ("b:9092", "versioned")
    assert (kafka.topics.mcp, kafka.group_prefix) == ("mcp-from-env", "group-from-env")


def test_yaml_file_and_environment_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "pareis.yaml"
    config.write_text("redis_url: redis://from-file:6379/0\nkafka:\n  bootstrap_servers: file:9092\n")
    monkeypatch.setenv("PAREIS_CONFIG_FILE", str(config))
    monkeypatch.setenv("PAREIS_KAFKA__BOOTSTRAP_SERVERS", "env:9092")
    settings = load_settings()
    assert settings.redis_url == "redis://from-file:6379/0"
    assert settings.kafka.bootstrap_servers == "env:9092", "the environment wins over the file"


def test_a_missing_config_file_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAREIS_CONFIG_FILE", str(tmp_path / "missing.yaml"))
    with pytest.raises(SettingsError, match=r"missing\.yaml"):
        load_settings()


@pytest.mark.parametrize(
    ("variable", "named"),
    [
        ("PAREIS_TICKETS__SLAK__TOKEN", "tickets.slak"),
        ("PAREIS_TICKETS__SLACK__TOKN", "tickets.slack.tokn"),
        ("PAREIS_KAFKA__TOPICS__SIGNAL", "kafka.topics.signal"),
        ("PAREIS_RUNTIME__ROLES__INCIDNETS__BATCH_SIZE", "incidnets"),
        ("PAREIS_RUNTIME__ROLES__INCIDENTS__BATCHSIZE", "runtime.roles.incidents.batchsize"),
        ("PAREIS_REDIS", "PAREIS_REDIS"),
        ("PAREIS_TIKETS__SLACK__TOKEN", "PAREIS_TIKETS__SLACK__TOKEN"),
    ],
)
def test_an_unknown_variable_at_any_level_is_an_error_that_never_echoes_its_value(
    monkeypatch: pytest.MonkeyPatch, variable: str, named: str
) -> None:
    monkeypatch.setenv(variable, "xoxb-secret-value")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert named in str(caught.value)
    assert "secret-value" not in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "tickets:\n  slak:\n    token: xoxb-secret-value\n",
        "kafka:\n  topics:\n    signal: x\n",
        "bogus: xoxb-secret-value\n",
        "runtime:\n  roles:\n    incidents:\n      batchsize: 3\n",
    ],
)
def test_an_unknown_key_at_any_level_of_the_file_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    config = tmp_path / "pareis.yaml"
    config.write_text(text)
    monkeypatch.setenv("PAREIS_CONFIG_FILE", str(config))
    with pytest.raises(SettingsError, match="unknown setting") as caught:
        load_settings()
    assert "secret-value" not in str(caught.value)


def test_an_invalid_value_is_named_without_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAREIS_RUNTIME__BATCH_SIZE", "hunter2")
    with pytest.raises(SettingsError, match=r"runtime\.batch_size \(PAREIS_RUNTIME__BATCH_SIZE\)") as caught:
        load_settings()
    assert "hunter2" not in str(caught.value)


def test_tooling_variables_are_not_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAREIS_TEST_REDIS_URL", "redis://x")
    monkeypatch.setenv("PAREIS_STACK_DIR", "/tmp/x")
    load_settings()


def test_no_ticket_tool_must_be_explicit_and_the_tools_are_logged() -> None:
    with pytest.raises(Fatal, match="PAREIS_TICKETS__NO_TOOLS"):
        check_ticket_tools(TicketSettings())
    with pytest.raises(Fatal, match="no ticket tool"):
        effects_process(Settings())
    with structlog.testing.capture_logs() as logs:
        assert check_ticket_tools(TicketSettings(no_tools=True)) == []
        check_ticket_tools(TicketSettings(slack={"token": "xoxb-1", "channel": "C1"}))  # type: ignore[arg-type]
    assert [e["tools"] for e in logs if e["event"] == "ticket tools"] == ["none (tickets.no_tools)", ["slack"]]
    with pytest.raises(Fatal, match="slack"):
        check_ticket_tools(TicketSettings(no_tools=True, slack={"token": "xoxb-1", "channel": "C1"}))  # type: ignore[arg-type]


def test_secrets_never_show_in_repr_dumps_or_logs(capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(
        redis_url="redis://:hunter2@redis:6379/0",
        kafka={"properties": {"sasl.password": "pw-1", "sasl.username": "svc", "ssl.key.password": "pw-2"},  # type: ignore[arg-type]
               "schema_registry_url": "https://reader:pw-3@registry/"},
        tickets=TicketSettings(slack={"token": "xoxb-pw-4", "channel": "C1"}),  # type: ignore[arg-type]
    )  # fmt: skip
    shown = [repr(settings), str(settings.model_dump()), settings.model_dump_json(), repr(settings.kafka)]
    for text in shown:
        for secret in ("hunter2", "pw-1", "pw-2", "pw-3", "xoxb-pw-4"):
            assert secret not in text
    assert "svc" in shown[0], "only secrets are redacted"
    assert settings.redis_url == "redis://:hunter2@redis:6379/0", "the value itself is intact for the clients"
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        configure_logging("INFO", json=True)
        structlog.get_logger("test").warning("redis failed", url="redis://:hunter2@redis:6379/0", error="x://u:pw-5@h")
        logged = capsys.readouterr().err
    finally:  # the rest of the suite logs as before, not into this test's captured stream
        structlog.reset_defaults()
        root.handlers[:], root.level = handlers, level
    assert "hunter2" not in logged and "pw-5" not in logged and "redis://:**********@redis:6379/0" in logged


@pytest.mark.parametrize("name", ["PAREIS_RUNTIME__BATCH_QUIET_S", "PAREIS_RUNTIME__ROLES__SCORES__BATCH_QUIET_S"])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_quiet_time_must_be_positive(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    """A wait of no time or less (librdkafka: a negative timeout waits forever) is refused at load, one line."""
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match="batch_quiet_s") as caught:
        load_settings()
    assert "\n" not in str(caught.value)


def test_the_scores_role_gathers_until_its_input_goes_quiet() -> None:
    runtime = load_settings().runtime
    assert runtime.batch_quiet_s is None and runtime.for_role("incidents").batch_quiet_s is None
    assert runtime.for_role("scores").batch_quiet_s == 0.2
