"""The schema registry as a :class:`~pareis.datahub.registry.SchemaSource`: Confluent's, or DataHub's internal one at
``http://gms:8080/schema-registry/api/``, through ``confluent_kafka.schema_registry``.

Writer schemas are fetched by id and parsed once per id; encoding registers (or looks up) the subject
``<topic>-value`` (TopicNameStrategy) and caches the id per subject.

Errors leave here as :mod:`pareis.errors` types: an unknown id is ``DecodeError("unknown-schema")``; an unreachable
registry, a timeout or a 5xx/429 is :class:`Retriable`; refused credentials or a rejected registration is
:class:`Fatal`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pareis.datahub import schemas
from pareis.errors import DecodeError, Fatal, Retriable

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient

_RETRIABLE_STATUS = frozenset({408, 425, 429})


class RegistrySchemaSource:
    """A Confluent-compatible registry behind ``confluent_kafka``'s client.

    ``client`` is a ``SchemaRegistryClient`` (build it with :meth:`connect`; tests pass the in-process mock from
    ``SchemaRegistryClient.new_client({"url": "mock://…"})``). With ``auto_register`` (DatahubKafkaEmitter's
    behaviour) encoding registers the vendored current schema under ``<topic>-value``; without it, it only looks
    the schema up there, which is what a read-only registry such as DataHub's internal one supports.
    """

    def __init__(self, client: SchemaRegistryClient, *, auto_register: bool = True) -> None:
        self._client = client
        self._auto_register = auto_register
        self._writers: dict[int, schemas.WriterSchema] = {}
        self._ids: dict[tuple[str, str], int] = {}

    @classmethod
    def connect(cls, url: str, *, auto_register: bool = True, **conf: Any) -> RegistrySchemaSource:
        """A source for the registry at ``url``; ``conf`` adds client settings (``basic.auth.user.info``, …).

        Builds the client only; nothing is fetched until the first id is needed.
        """
        from confluent_kafka.schema_registry import SchemaRegistryClient

        return cls(SchemaRegistryClient.new_client({"url": url, **conf}), auto_register=auto_register)

    def writer_schema(self, schema_id: int) -> schemas.WriterSchema:
        cached = self._writers.get(schema_id)
        if cached is not None:
            return cached
        with _translated(f"schema id {schema_id}", missing="unknown-schema"):
            found = self._client.get_schema(schema_id)
        schema_type = getattr(found, "schema_type", None) or "AVRO"
        if schema_type != "AVRO":
            raise DecodeError("unknown-schema", f"schema id {schema_id} is a {schema_type} schema, not Avro")
        try:
            writer = schemas.parse_writer(schema_id, found.schema_str or "")
        except ValueError as exc:
            raise DecodeError("unknown-schema", str(exc)) from exc
        self._writers[schema_id] = writer
        return writer

    def schema_id(self, topic: str, kind: str) -> int:
        key = (topic, kind)
        cached = self._ids.get(key)
        if cached is not None:
            return cached
        from confluent_kafka.schema_registry import Schema

        subject = f"{topic}-value"
        schema = Schema(schemas.text(schemas.CURRENT_FILES[kind]), "AVRO")
        schema_id: int | None
        with _translated(f"subject {subject}", missing=None):
            if self._auto_register:
                schema_id = self._client.register_schema(subject, schema)
            else:
                schema_id = self._client.lookup_schema(subject, schema).schema_id
        if schema_id is None:
            raise Fatal(f"subject {subject}: the registry returned no schema id")
        self._ids[key] = schema_id
        return schema_id


class _translated:
    """Context manager mapping registry-client exceptions to Pareis's error classes.

    ``missing`` is the DecodeError reason for a 404 (None: a 404 is Fatal — e.g. a subject that must exist).
    """

    def __init__(self, what: str, *, missing: str | None) -> None:
        self._what = what
        self._missing = missing

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, _tb: object) -> None:
        if exc is None or not isinstance(exc, Exception):
            return
        from confluent_kafka.schema_registry.error import OAuthTokenError, SchemaRegistryError

        if isinstance(exc, SchemaRegistryError):
            status = int(exc.http_status_code)
            detail = f"{self._what}: registry answered {status}: {exc.error_message}"
            if status == 404 and self._missing is not None:
                raise DecodeError(self._missing, detail) from exc
            if status >= 500 or status in _RETRIABLE_STATUS:
                raise Retriable(detail) from exc
            raise Fatal(detail) from exc
        if isinstance(exc, OAuthTokenError):
            raise Fatal(f"{self._what}: registry credentials refused: {exc}") from exc
        if isinstance(exc, _transport_errors()):
            raise Retriable(f"{self._what}: registry unreachable: {exc}") from exc


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Network-level exception classes: the registry client uses httpx2 when installed, else httpx."""
    import httpx  # here, not at import: only needed once a registry call has failed

    errors: tuple[type[BaseException], ...] = (httpx.HTTPError, OSError, TimeoutError)
    try:
        from confluent_kafka.schema_registry.common._httpx_compat import httpx as client_httpx
    except ImportError:  # an older confluent-kafka: plain httpx, covered above
        return errors
    return (*errors, client_httpx.HTTPError)
