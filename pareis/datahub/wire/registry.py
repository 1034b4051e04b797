"""Schema sources: where the codec finds the writer schema of an id, and the id to encode a record with.

:class:`SchemaSource` is the protocol the codec depends on. Two implementations:

* :class:`VendoredSchemaSource` (here) — no registry at all: the fixed ids of DataHub's internal registry map to the
  vendored schemas (:data:`pareis.datahub.wire.schemas.INTERNAL_IDS`), and encoding uses those ids.
* :class:`pareis.datahub.wire.schema_registry.RegistrySchemaSource` — a Confluent-compatible schema registry through
  ``confluent_kafka.schema_registry`` (its HTTP client only: the Kafka clients stay in :mod:`pareis.kafka`).

Errors leave a source as :mod:`pareis.errors` types: an unknown id is ``DecodeError("unknown-schema")``; an
unreachable registry, a timeout or a 5xx/429 is :class:`Retriable`; refused credentials or a rejected registration is
:class:`Fatal`.
"""

from __future__ import annotations

from typing import Protocol

from pareis.datahub.wire import schemas
from pareis.errors import DecodeError


class SchemaSource(Protocol):
    """Resolves schema ids for decoding and encoding; implementations cache and are cheap after first use."""

    def writer_schema(self, schema_id: int) -> schemas.WriterSchema:
        """The writer schema registered under ``schema_id``.

        Raises DecodeError("unknown-schema") when there is none (or it is not Avro), Retriable when the source
        can't be reached.
        """
        ...

    def schema_id(self, topic: str, kind: str) -> int:
        """The id to frame a record of ``kind`` (see :data:`pareis.datahub.wire.schemas.KINDS`) written to ``topic``."""
        ...


class VendoredSchemaSource:
    """DataHub's internal-registry ids resolved to the vendored schemas; no network.

    ``timeseries_topic`` names the timeseries change log, whose MCLs carry id 19 instead of 18 (GMS frames each
    topic with its own id).
    """

    def __init__(self, timeseries_topic: str = "MetadataChangeLog_Timeseries_v1") -> None:
        self._timeseries_topic = timeseries_topic

    def writer_schema(self, schema_id: int) -> schemas.WriterSchema:
        relative = schemas.INTERNAL_IDS.get(schema_id)
        if relative is None:
            raise DecodeError("unknown-schema", f"schema id {schema_id} is not one of DataHub's internal registry ids")
        return schemas.vendored(relative, schema_id)

    def schema_id(self, topic: str, kind: str) -> int:
        if kind == schemas.MCL:
            if topic == self._timeseries_topic:
                return schemas.INTERNAL_MCL_TIMESERIES_ID
            return schemas.INTERNAL_MCL_ID
        if kind == schemas.MCP:
            return schemas.INTERNAL_MCP_ID
        if kind == schemas.PLATFORM_EVENT:
            return schemas.INTERNAL_PLATFORM_EVENT_ID
        raise ValueError(f"no vendored schema for {kind!r}")
