"""The schema registry as a :class:`~pareis.datahub.wire.registry.SchemaSource`: Confluent's, or DataHub's internal one
at
``http://gms:8080/schema-registry/api/``, through ``confluent_kafka.schema_registry``.

Writer schemas are fetched by id and parsed once per id; encoding registers (or looks up) the subject
``<topic>-value`` (TopicNameStrategy) and caches the id per subject.

Errors leave here as :mod:`pareis.errors` types. Only the registry's own answer that an id does not exist (404 with
a registry error code, 404xx) makes a message poison (``DecodeError("unknown-schema")``); refused credentials
(401/403) and a refused registration (409/422) are :class:`Fatal`. Every other failure of a registry call is the
registry's, not the message's, and :class:`Retriable`: unreachable, a timeout, any other status, a 404 from something
that is not the registry (a proxy), a 200 whose body is not the registry's JSON (an SSO or proxy page), a schema text
that does not parse. Treating those as poison would dead-letter and commit every message whose schema id is not
cached yet — at start-up, all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pareis.datahub.wire import schemas
from pareis.errors import DecodeError, Fatal, Retriable

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient

_CREDENTIALS_REFUSED = frozenset({401, 403})
_REGISTRATION_REFUSED = frozenset({409, 422})  # an incompatible or invalid schema: configuration, not transient


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
            schema_str = found.schema_str
        if schema_type != "AVRO":
            raise DecodeError("unknown-schema", f"schema id {schema_id} is a {schema_type} schema, not Avro")
        try:
            writer = schemas.parse_writer(schema_id, schema_str or "")
        except ValueError as exc:  # the registry's data, not the message: retry (and alert), never dead-letter
            raise Retriable(f"schema id {schema_id}: the registry's schema does not parse: {exc}") from exc
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

    ``missing`` is the DecodeError reason for the registry's "schema not found" (None: that is Fatal — e.g. a
    subject that must exist). Everything but that and refused credentials is Retriable (module docstring).
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
            status, code = int(exc.http_status_code), int(exc.error_code or -1)
            detail = f"{self._what}: registry answered {status}: {str(exc.error_message)[:200]}"
            if status == 404 and 40400 <= code < 40500:  # the registry's own "not found" (40403: schema, …)
                if self._missing is not None:
                    raise DecodeError(self._missing, detail) from exc
                raise Fatal(detail) from exc
            if status in _CREDENTIALS_REFUSED or status in _REGISTRATION_REFUSED:
                raise Fatal(detail) from exc
            raise Retriable(detail) from exc
        if isinstance(exc, OAuthTokenError):
            raise Fatal(f"{self._what}: registry credentials refused: {exc}") from exc
        if isinstance(exc, _transport_errors()):
            raise Retriable(f"{self._what}: registry unreachable: {exc}") from exc
        if isinstance(exc, DecodeError | Fatal | Retriable):
            return
        # A body that is not the registry's JSON (an HTML page answering 200), or any other surprise.
        raise Retriable(f"{self._what}: unreadable registry answer: {type(exc).__name__}: {str(exc)[:200]}") from exc


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Network-level exception classes: the registry client uses httpx2 when installed, else httpx."""
    import httpx  # here, not at import: only needed once a registry call has failed

    errors: tuple[type[BaseException], ...] = (httpx.HTTPError, OSError, TimeoutError)
    try:
        from confluent_kafka.schema_registry.common._httpx_compat import httpx as client_httpx
    except ImportError:  # an older confluent-kafka: plain httpx, covered above
        return errors
    return (*errors, client_httpx.HTTPError)
