"""Settings: the only module that reads the environment or a config file.

Every setting has an environment variable ``PAREIS_<SECTION>__<NAME>`` (e.g. ``PAREIS_KAFKA__BOOTSTRAP_SERVERS``)
and may also come from a YAML file named by ``PAREIS_CONFIG_FILE`` (environment wins over the file). Nothing is
read at import time: call :func:`load_settings`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

CONFIG_FILE_ENV = "PAREIS_CONFIG_FILE"


class Topics(BaseModel):
    """Topic names; DataHub's defaults and Pareis's own."""

    mcl_versioned: str = "MetadataChangeLog_Versioned_v1"
    mcl_timeseries: str = "MetadataChangeLog_Timeseries_v1"
    mcp: str = "MetadataChangeProposal_v1"
    platform_event: str = "PlatformEvent_v1"
    signals: str = "pareis.signals.v1"
    effects: str = "pareis.effects.v1"
    dlq: str = "pareis.dlq.v1"


class KafkaSettings(BaseModel):
    """Connection to the Kafka cluster DataHub writes its change log to."""

    bootstrap_servers: str = "localhost:9092"
    schema_registry_url: str | None = None
    """Confluent-compatible registry (DataHub's internal one is ``http://gms:8080/schema-registry/api/``).
    None: decode with the vendored schemas, and encode with the fixed ids of DataHub's internal registry."""
    group_prefix: str = "pareis"
    transactional_id_prefix: str = "pareis"
    properties: dict[str, str] = Field(default_factory=dict)
    """Extra librdkafka properties (security.protocol, sasl.*, …), applied to every client."""
    topics: Topics = Field(default_factory=Topics)


class RoleTuning(BaseModel):
    """Per-role overrides of the batching and commit cadence; None keeps the process-wide value."""

    batch_size: int | None = None
    batch_timeout_s: float | None = None
    commit_every: int | None = None
    commit_interval_ms: int | None = None


# The roles on an incident's path carry few messages and decide how soon an incident is visible: a short poll
# timeout and commit interval (the exactly-once transaction is what makes outputs visible) bound their latency
# (bench/RESULTS.md, Incident latency: p99 1.7 s with the throughput cadence, 0.14 s with this one). The lineage
# role keeps the throughput cadence: it reads the whole versioned change log.
_LATENCY = RoleTuning(batch_timeout_s=0.02, commit_interval_ms=50)


def _default_tuning() -> dict[str, RoleTuning]:
    return {"assertions": _LATENCY, "incidents": _LATENCY, "effects": _LATENCY}


class RuntimeSettings(BaseModel):
    """How each role polls, batches and commits (see :meth:`for_role` for per-role overrides)."""

    batch_size: int = 500
    batch_timeout_s: float = 0.2
    commit_every: int = 1000
    commit_interval_ms: int = 1000
    max_poll_interval_ms: int = 300_000
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 30.0
    shutdown_grace_s: float = 25.0
    http_port: int = 9400
    http_host: str = "0.0.0.0"
    instance_id: str | None = None
    """Stable id of this process among its role's replicas (part of the transactional.id); None: the host name
    (the pod name on Kubernetes, kept across container restarts so a restart fences its predecessor)."""
    session_timeout_ms: int = 10_000
    static_membership: bool = False
    """Join the group as ``<role>-<instance_id>`` (KIP-345): a restarted instance takes its partitions back at
    once, without a rebalance; but a stopped one holds them until the session times out."""
    roles: dict[str, RoleTuning] = Field(default_factory=_default_tuning)
    """Per-role cadence (``PAREIS_RUNTIME__ROLES__INCIDENTS__COMMIT_INTERVAL_MS=…``); by default the incident path
    (assertions, incidents, effects) is tuned for latency, the lineage role for throughput."""

    @field_validator("roles", mode="after")
    @classmethod
    def _over_defaults(cls, roles: dict[str, RoleTuning]) -> dict[str, RoleTuning]:
        # What the operator sets refines the defaults field by field instead of replacing the whole map.
        merged = _default_tuning()
        for name, tuning in roles.items():
            base = merged.get(name, RoleTuning())
            merged[name] = base.model_copy(update=tuning.model_dump(exclude_none=True))
        return merged

    def for_role(self, role: str) -> RuntimeSettings:
        """These settings with ``role``'s overrides applied (a copy; unchanged when it has none)."""
        tuning = self.roles.get(role)
        if tuning is None:
            return self
        return self.model_copy(update=tuning.model_dump(exclude_none=True))


class DatahubSettings(BaseModel):
    """Where Pareis's own writes go, and how they are marked."""

    write_path: Literal["kafka", "rest"] = "kafka"
    gms_url: str | None = None
    token: SecretStr | None = None
    actor: str = "urn:li:corpuser:pareis"
    agent_urn: str = "urn:li:aiAgent:pareis"
    pipeline_name: str = "pareis"
    ui_url: str | None = None
    """DataHub's web app (e.g. ``https://datahub.example.com``), for the links Pareis writes into notes; None:
    notes name the incident URN instead of linking it."""
    mcp_url: str | None = None
    """The public URL of ``pareis mcp --http`` (e.g. ``https://pareis.example.com/mcp``): when set, the agent
    registry names the MCP server as a DataHub ``service`` with ``mcpServerProperties``."""
    repository_url: str | None = None
    """Where Pareis's source lives (a git URL), for the Agent Skill's ``sourceRepository`` in DataHub."""


class SlackSettings(BaseModel):
    token: SecretStr | None = None
    channel: str | None = None
    base_url: str = "https://slack.com/api/"


class JiraSettings(BaseModel):
    url: str | None = None
    email: str | None = None
    token: SecretStr | None = None
    project: str | None = None
    issue_type: str = "Bug"
    done_transition: str = "Done"


class LinearSettings(BaseModel):
    api_key: SecretStr | None = None
    team_id: str | None = None
    url: str = "https://api.linear.app/graphql"


class TicketSettings(BaseModel):
    slack: SlackSettings = Field(default_factory=SlackSettings)
    jira: JiraSettings = Field(default_factory=JiraSettings)
    linear: LinearSettings = Field(default_factory=LinearSettings)


class Settings(BaseSettings):
    """All of Pareis's settings. Build with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="PAREIS_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    redis_url: str = "redis://localhost:6379/0"
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    datahub: DatahubSettings = Field(default_factory=DatahubSettings)
    tickets: TicketSettings = Field(default_factory=TicketSettings)
    log_level: str = "INFO"
    log_json: bool = True

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = os.environ.get(CONFIG_FILE_ENV)
        if path:
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=Path(path)))
        return tuple(sources)


def load_settings(**overrides: Any) -> Settings:
    """Read settings from init overrides, then ``PAREIS_*`` variables, then the YAML file, in that order."""
    path = os.environ.get(CONFIG_FILE_ENV)
    if path and not Path(path).is_file():
        raise FileNotFoundError(f"{CONFIG_FILE_ENV}={path}: no such file")
    return Settings(**overrides)
