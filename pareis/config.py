"""Settings: the only module that reads the environment or a config file.

Every setting has an environment variable ``PAREIS_<SECTION>__<NAME>`` (e.g. ``PAREIS_KAFKA__BOOTSTRAP_SERVERS``)
and may also come from a YAML file named by ``PAREIS_CONFIG_FILE`` (environment wins over the file). Nothing is
read at import time: call :func:`load_settings`.

Unknown keys are errors at every level, in the environment and in the file (a typo such as
``PAREIS_TICKETS__SLAK__TOKEN`` would otherwise be ignored silently). ``PAREIS_CONFIG_FILE`` and the tooling
namespaces ``PAREIS_TEST_*`` (the test suite) and ``PAREIS_STACK_*`` (``deploy/local``) are not settings.
:func:`load_settings` raises :class:`SettingsError`, whose message names the offending keys but never their values
(they may be secrets).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)
from pydantic_settings import SettingsError as SourceError

from pareis.core.serving import DEFAULT_SERVING_ALIASES

CONFIG_FILE_ENV = "PAREIS_CONFIG_FILE"
ENV_PREFIX = "PAREIS_"
NOT_SETTINGS = ("PAREIS_TEST_", "PAREIS_STACK_")
"""Prefixes of variables that belong to tooling, not to the settings."""
ROLE_NAMES = ("lineage", "assertions", "incidents", "scores", "effects")


class SettingsError(ValueError):
    """Settings that cannot be used: unknown keys, invalid values, a missing config file. The message is one
    line per problem, naming keys but never values."""


_SECRET_KEY_PARTS = ("password", "secret", "token", "credential", "api.key", "apikey", "sasl.jaas")
REDACTED = "**********"


def redact_url(url: str) -> str:
    """``url`` with the password of its userinfo (``scheme://user:password@host``) replaced by :data:`REDACTED`."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    userinfo, _, host = rest.partition("@")
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:{REDACTED}@{host}" if user else f"{scheme}://{REDACTED}@{host}"


def redact_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """Client properties with the value of every secret-looking key (``sasl.password``, ``ssl.key.password``,
    ``sasl.oauthbearer.client.secret``, …) replaced by :data:`REDACTED`."""
    return {
        k: REDACTED if any(part in k.lower() for part in _SECRET_KEY_PARTS) else redact_url(v)
        for k, v in properties.items()
    }


def _redacted(value: object) -> object:
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values()):
        return redact_properties(value)
    return value


class Redacting(BaseModel):
    """Mixed into every settings model: its ``repr`` and dumps never show a secret (URL passwords and
    secret-looking client properties are redacted; tokens are ``SecretStr``)."""

    def __repr_args__(self) -> Iterator[tuple[str | None, object]]:
        for name, value in super().__repr_args__():
            yield name, _redacted(value)

    @model_serializer(mode="wrap")
    def _dump_redacted(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        return {k: _redacted(v) for k, v in dumped.items()} if isinstance(dumped, dict) else dumped


class Section(Redacting):
    """A settings section: unknown keys are errors (a typo must not pass silently), and it is frozen (settings
    are read once, then only read: a variant is a ``model_copy(update=…)``). Its ``repr`` and dumps never show a
    secret: URL passwords and secret-looking client properties are redacted (tokens are ``SecretStr``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Topics(Section):
    """Topic names; DataHub's defaults and Pareis's own."""

    mcl_versioned: str = "MetadataChangeLog_Versioned_v1"
    mcl_timeseries: str = "MetadataChangeLog_Timeseries_v1"
    mcp: str = "MetadataChangeProposal_v1"
    platform_event: str = "PlatformEvent_v1"
    signals: str = "pareis.signals.v1"
    effects: str = "pareis.effects.v1"
    dlq: str = "pareis.dlq.v1"
    gate: str = "pareis.gate.v1"
    """The retrain gate's decisions (DESIGN §1): key = model URN, compacted."""


OWNED_TOPICS = ("signals", "effects", "dlq", "gate")
"""The :class:`Topics` fields Pareis owns (creates, with ``kafka.topic_*``); the others are DataHub's."""


def _default_topic_configs() -> dict[str, dict[str, str]]:
    return {"gate": {"cleanup.policy": "compact"}}  # a decision per model: the latest one is what counts


class KafkaSettings(Section):
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
    connect_timeout_s: float = Field(default=30.0, gt=0)
    """How long a role (or ``pareis replay``) waits for the brokers at start-up before it gives up (exit 1); the
    first failed attempt is logged at once, naming ``bootstrap_servers``."""
    dlq_max_bytes: int = Field(default=900_000, ge=1024)
    """Upper bound of a dead letter (key, value and headers); a larger poison message keeps as much of its value
    as fits, marked truncated. Keep it below the DLQ topic's ``max.message.bytes`` (1 MB by default)."""
    call_timeout_s: float = Field(default=5.0, gt=0)
    """The timeout a role gives each transactional call (and the admin calls at start-up), retried while its errors
    are retriable (a slow broker costs a retry, never the role). Pareis enforces it itself: a call still blocked a
    few seconds past it (librdkafka does not always honour it: after a broker restart a transactional call can block
    for ever) makes the role not alive, not ready, and exits the process (1) so that it restarts from its committed
    offsets (:mod:`pareis.kafka.watchdog`); so it also bounds how long such a wedge lasts."""
    create_topics: bool = True
    """Each role creates the topics Pareis owns (``signals``, ``effects``, ``dlq``, ``gate``) that it reads or
    writes when they are missing, at start-up, as Kafka Streams creates its internal topics. false: it only checks
    that they exist and stops, naming those to create, when one does not (``pareis topics create`` creates them,
    e.g. in the chart's pre-install Job)."""
    topic_partitions: int = Field(default=6, ge=1)
    """Partitions of each topic Pareis creates: the most instances a role reading it can scale to. An existing
    topic with fewer is logged at start-up, never changed."""
    replication_factor: int = -1
    """Replication factor of each topic Pareis creates; -1: the broker's ``default.replication.factor``."""
    topic_configs: dict[str, dict[str, str]] = Field(default_factory=_default_topic_configs)
    """Topic configs (``retention.ms``, ``min.insync.replicas``, …) of each topic Pareis creates, by its field in
    ``topics`` (``signals``, ``effects``, ``dlq``, ``gate``); merged over the defaults (``gate``:
    ``cleanup.policy=compact``)."""

    @field_validator("replication_factor")
    @classmethod
    def _a_factor(cls, factor: int) -> int:
        if factor != -1 and factor < 1:
            raise ValueError("must be -1 (the broker's default) or at least 1")
        return factor

    @field_validator("topic_configs", mode="after")
    @classmethod
    def _over_default_configs(cls, configs: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        unknown = sorted(set(configs) - set(OWNED_TOPICS))
        if unknown:
            raise ValueError(f"unknown topic(s) {', '.join(unknown)}; Pareis owns {', '.join(OWNED_TOPICS)}")
        merged = _default_topic_configs()
        for name, config in configs.items():
            merged[name] = {**merged.get(name, {}), **config}
        return merged


class RoleTuning(Section):
    """Per-role overrides of the batching and commit cadence; None keeps the process-wide value."""

    batch_size: int | None = None
    batch_timeout_s: float | None = None
    batch_quiet_s: float | None = Field(default=None, gt=0)
    commit_every: int | None = None
    commit_interval_ms: int | None = None
    commit_async: bool | None = None


# The roles on an incident's path carry few messages and decide how soon an incident is visible: a short poll
# timeout and commit interval (the exactly-once transaction is what makes outputs visible) bound their latency
# (bench/RESULTS.md, Incident latency). The lineage role keeps the throughput cadence: it reads the whole versioned
# change log.
_LATENCY = RoleTuning(batch_timeout_s=0.02, commit_interval_ms=50)
# The scores role coalesces: most of a batch's cost is what its signals share (the failing classes' walk up, one
# survey of the models downstream, the incidents near them), so a burst drains fastest in few large batches: up to
# 2,000 signals, gathered for up to a second (it is off the incident path; bench/RESULTS.md, Issue 35: the scores
# role's lag).
# A burst's signals arrive within a fraction of a second: the batch closes once they stop coming for 0.2 s rather
# than waiting out the second, and its second counts from its first signal (a burst is not split where an idle
# wait's second happened to end).
_COALESCING = RoleTuning(batch_size=2000, batch_timeout_s=1.0, batch_quiet_s=0.2)


def _default_tuning() -> dict[str, RoleTuning]:
    return {
        "lineage": RoleTuning(commit_async=True),
        "assertions": _LATENCY,
        "incidents": _LATENCY,
        "effects": _LATENCY,
        "scores": _COALESCING,
    }


class RuntimeSettings(Section):
    """How each role polls, batches and commits (see :meth:`for_role` for per-role overrides)."""

    batch_size: int = 500
    batch_timeout_s: float = 0.2
    batch_quiet_s: float | None = Field(default=None, gt=0)
    """None: a batch is what one wait of ``batch_timeout_s`` brings (up to ``batch_size``). A number: a batch starts
    with the first message to come and gathers for up to ``batch_timeout_s`` from it, closing early once no message
    came for this long (a coalescing role's burst is one batch as soon as it has arrived)."""
    commit_every: int = 1000
    commit_interval_ms: int = 1000
    commit_async: bool = False
    """At-least-once roles: commit offsets on the hot path without waiting for the broker's reply (one commit in
    flight; see :mod:`pareis.kafka.checkpoint`). On by default for the lineage role only (bench/RESULTS.md,
    Runtime); the effects and assertions roles keep waiting for each commit."""
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
        unknown = sorted(set(roles) - set(ROLE_NAMES))
        if unknown:
            raise ValueError(f"unknown role(s) {', '.join(unknown)}; roles: {', '.join(ROLE_NAMES)}")
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


ML_INCIDENT_TYPES = frozenset({"mlModel", "mlFeature", "mlFeatureTable"})
"""The ML entity types DataHub may accept incidents on (``incidentInfo.entities``); never ``mlModelGroup``
("incidents belong on member models")."""


class DatahubSettings(Section):
    """Where Pareis's own writes go, and how they are marked."""

    write_path: Literal["kafka", "rest"] = "kafka"
    gms_url: str | None = None
    token: SecretStr | None = None
    actor: str = "urn:li:corpuser:pareis"
    agent_urn: str = "urn:li:aiAgent:pareis"
    pipeline_name: str = "pareis"
    ui_url: str | None = None
    """DataHub's web app (e.g. ``https://datahub.example.com``), for the links Pareis writes: the incident's
    description, postmortem and tickets link each entity they name to its DataHub page, and the notes and tickets
    link the incident. None: nothing is linked (notes name the incident URN)."""
    mcp_url: str | None = None
    """The public URL of ``pareis mcp --http`` (e.g. ``https://pareis.example.com/mcp``): when set, the agent
    registry names the MCP server as a DataHub ``service`` with ``mcpServerProperties``."""
    repository_url: str | None = None
    """Where Pareis's source lives (a git URL), for the Agent Skill's ``sourceRepository`` in DataHub."""
    serving_aliases: list[str] = Field(default_factory=lambda: list(DEFAULT_SERVING_ALIASES))
    """Model version aliases (``versionProperties.aliases``: MLflow's, Databricks Unity Catalog's) that mean "this
    version serves" (DESIGN §2.3, case-insensitive): the recommendation reads them beside deployments. Set it to
    your registry's words (e.g. ``["champion", "blue"]``); ``[]``: only deployments say what serves."""
    ml_incident_types: list[str] | None = None
    """The ML entity types the server accepts incidents on, among ``mlModel``, ``mlFeature``, ``mlFeatureTable``
    (DataHub master since mid-2026; no release before): affected model versions and features of those types carry
    the incident too, in a write apart from the dataset's. None: on the ``rest`` path, ask GMS at start-up (a probe
    write, :mod:`pareis.datahub.writes.capabilities`); on the ``kafka`` path, none. ``[]``: none, without asking."""

    @field_validator("serving_aliases", mode="after")
    @classmethod
    def _aliases(cls, aliases: list[str]) -> list[str]:
        blank = [a for a in aliases if not a.strip()]
        if blank:
            raise ValueError("a serving alias cannot be blank")
        return sorted({a.strip() for a in aliases})

    @field_validator("ml_incident_types", mode="after")
    @classmethod
    def _ml_types(cls, types: list[str] | None) -> list[str] | None:
        if types is None:
            return None
        if "mlModelGroup" in types:
            raise ValueError("mlModelGroup never takes incidents (they belong on its member models, mlModel)")
        unknown = sorted(set(types) - ML_INCIDENT_TYPES)
        if unknown:
            raise ValueError(f"unknown type(s) {', '.join(unknown)}; known: {', '.join(sorted(ML_INCIDENT_TYPES))}")
        return sorted(set(types))


class IncidentSettings(Section):
    """How assertion runs become incidents (DESIGN §2.3)."""

    open_on_low_severity: bool = False
    """True: a FAILURE of ``result.severity`` LOW (dbt's ``warn``) opens an incident like any other. False: it is a
    warning: recorded, counted in pass rates and shown (the gate's check 2 WARNs), but it opens no incident."""


class SlackSettings(Section):
    token: SecretStr | None = None
    channel: str | None = None
    base_url: str = "https://slack.com/api/"


class JiraSettings(Section):
    url: str | None = None
    email: str | None = None
    token: SecretStr | None = None
    project: str | None = None
    issue_type: str = "Bug"
    done_transition: str = "Done"
    users: dict[str, str] = Field(default_factory=dict)
    """Owner (URN, email or user name) → Jira account id: the first mapped owner of an incident is its issue's
    assignee, the others watchers. Empty: nobody is assigned."""


class LinearSettings(Section):
    api_key: SecretStr | None = None
    team_id: str | None = None
    url: str = "https://api.linear.app/graphql"
    users: dict[str, str] = Field(default_factory=dict)
    """Owner (URN, email or user name) → Linear user id: the first mapped owner is the issue's assignee, the others
    subscribers. Empty: nobody is assigned."""


class TicketSettings(Section):
    no_tools: bool = False
    """True: run the effects role with no ticket tool (ticket effects go nowhere). Must be explicit: without a
    configured tool and without this, the effects role refuses to start."""
    delivery_budget_s: float = Field(default=60.0, gt=0)
    """Per batch of effects: past it the rest of the batch is redone after a back-off (Retriable), so that the
    effects role never exceeds ``runtime.max_poll_interval_ms`` (each call is bounded to a few seconds)."""
    slack: SlackSettings = Field(default_factory=SlackSettings)
    jira: JiraSettings = Field(default_factory=JiraSettings)
    linear: LinearSettings = Field(default_factory=LinearSettings)


class RedisSettings(Section):
    """How Pareis holds its Redis to account (the URL itself is ``redis_url``: ``redis://``/``rediss://`` for one
    server, ``redis+cluster://``/``rediss+cluster://`` with any node as seed for Redis Cluster)."""

    replicas: int = Field(default=0, ge=0)
    """Replicas that must acknowledge a role's Redis writes (``WAIT``) before it commits the Kafka offsets or the
    transaction that depend on them, so that a failover never loses a write whose input is committed. On Redis
    Cluster, of every primary. 0: no wait (one server without replicas); the chart sets 1."""
    replica_timeout_ms: int = Field(default=5_000, gt=0)
    """How long a commit waits for those acknowledgements; fewer in time and the batch is redone from the
    committed offsets (Retriable)."""
    require_persistence: bool = False
    """Refuse to start (one line, exit 1, never ready) unless every Redis node keeps an append-only file
    (``appendonly yes``): a restart without it empties the index, which Pareis then has to be rebuilt from. The
    chart sets it."""


class WebSettings(Section):
    """Mission Control as people reach it."""

    public_url: str | None = None
    """Mission Control's public URL (e.g. ``https://pareis.example.com``): tickets link each incident's page there
    (``/incidents/<URN>``) beside its page in DataHub. None: tickets link DataHub only."""


class Settings(Redacting, BaseSettings):
    """All of Pareis's settings. Build with :func:`load_settings`; frozen like every section."""

    model_config = SettingsConfigDict(
        env_prefix="PAREIS_", env_nested_delimiter="__", extra="forbid", validate_default=True, frozen=True
    )

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    redis_url: str = "redis://localhost:6379/0"
    redis: RedisSettings = Field(default_factory=RedisSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    datahub: DatahubSettings = Field(default_factory=DatahubSettings)
    incidents: IncidentSettings = Field(default_factory=IncidentSettings)
    tickets: TicketSettings = Field(default_factory=TicketSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    log_level: str = "INFO"
    log_json: bool = True

    @field_validator("log_level")
    @classmethod
    def _a_level(cls, level: str) -> str:
        if level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError("not a log level (DEBUG, INFO, WARNING, ERROR, CRITICAL)")
        return level.upper()

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


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """The ``PAREIS_*`` variables of ``environ`` whose first segment is no top-level setting (nested segments are
    checked by the sections themselves)."""
    top = {name.upper() for name in Settings.model_fields}
    unknown = []
    for name in environ:
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper == CONFIG_FILE_ENV or upper.startswith(NOT_SETTINGS):
            continue
        if upper[len(ENV_PREFIX) :].split("__", 1)[0] not in top:
            unknown.append(name)
    return sorted(unknown)


def describe(error: ValidationError, *, env: bool = True) -> str:
    """One line per problem of ``error``: where (as a setting path and its variable) and what, never the value."""
    lines = []
    for problem in error.errors(include_input=False, include_url=False):
        path = ".".join(str(part) for part in problem["loc"])
        variable = ENV_PREFIX + "__".join(str(part) for part in problem["loc"]).upper()
        where = f"{path} ({variable})" if env and path else path or "settings"
        message = "unknown setting" if problem["type"] == "extra_forbidden" else problem["msg"]
        lines.append(f"{where}: {message}")
    return "; ".join(lines)


def load_settings(**overrides: Any) -> Settings:
    """Read settings from init overrides, then ``PAREIS_*`` variables, then the YAML file, in that order.

    :class:`SettingsError` for a missing config file, an unknown variable or key, or an invalid value."""
    path = os.environ.get(CONFIG_FILE_ENV)
    if path and not Path(path).is_file():
        raise SettingsError(f"{CONFIG_FILE_ENV}={path}: no such file")
    unknown = unknown_variables(os.environ)
    if unknown:
        raise SettingsError(f"unknown setting variable(s): {', '.join(unknown)}")
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(f"invalid settings: {describe(exc)}") from None
    except SourceError as exc:  # a section's variable that is no JSON object: PAREIS_REDIS=redis://… for the URL
        section = re.search(r'field "(\w+)"', str(exc))
        name = ENV_PREFIX + section.group(1).upper() if section else "a PAREIS_* variable"
        raise SettingsError(f"{name} names a settings section: give its keys as {name}__<KEY>") from None
    except (OSError, ValueError) as exc:  # an unreadable or malformed YAML file
        raise SettingsError(f"{CONFIG_FILE_ENV}={path}: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
