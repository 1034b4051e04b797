"""Settings: environment and YAML sources, and the per-role runtime cadence."""

from __future__ import annotations

from pathlib import Path

import pytest

from pareis.config import load_settings


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
    with pytest.raises(FileNotFoundError, match=r"missing\.yaml"):
        load_settings()
