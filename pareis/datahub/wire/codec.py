"""DataHub's Kafka wire format: Confluent framing around Avro, decoded and encoded as GMS and its clients do.

A frame is ``0x00``, a 4-byte big-endian schema id, then the Avro body (no container header). The schema id names
the *writer* schema, found through a :class:`~pareis.datahub.wire.registry.SchemaSource`; bodies written with an older
schema are resolved into the current (vendored) shape.

Decoding, cheapest first:

* :meth:`Decoder.header` reads only ``entityType``/``entityUrn``/``changeType``/``aspectName`` (see
  :mod:`pareis.datahub.wire.prefix`), so a consumer can drop what it doesn't want before paying for the rest;
* :meth:`Decoder.decode_mcl` / :meth:`Decoder.decode_mcp` / :meth:`Decoder.decode_platform_event` decode the
  whole record into a :class:`~pareis.datahub.wire.changelog.ChangeLog` or
  :class:`~pareis.datahub.wire.changelog.PlatformEvent`; aspect JSON stays as bytes until asked for.
  ``decode_mcl(..., previous=False)`` skips the prior value (``previousAspectValue``/``previousSystemMetadata``)
  for callers that never read it;
* :meth:`Decoder.kept_mcl` is what the roles decode with: the filter on ``aspectName`` and the decode in one pass,
  building only the values the roles read (the others still checked, so the same frames are Poison). A body written
  with the current schema is read by a reader compiled for it (:mod:`pareis.datahub.wire.record_reader`); any other
  writer goes through fastavro's ``schemaless_reader(writer=by-id schema, reader=vendored current)``.

Every failure (short frame, bad magic byte, unknown id, truncated or corrupt Avro) is a DecodeError naming the
reason and, when the caller passes one, the Origin. Encoding (:class:`Encoder`) writes what DataHub writes: MCPs
exactly as ``DatahubKafkaEmitter`` serialises them, MCLs with the fields GMS fills.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from fastavro import schemaless_reader, schemaless_writer

from pareis.datahub.wire import schemas
from pareis.datahub.wire.aspects import JSON_CONTENT_TYPE, pegasus_json
from pareis.datahub.wire.changelog import ChangeLog, Header, PlatformEvent
from pareis.datahub.wire.plain_mcp import plain_mcp
from pareis.datahub.wire.prefix import HEADER_FIELDS, BadAvro, HeaderReader, compile_header_reader
from pareis.datahub.wire.record_reader import (
    REST,
    VALIDATE,
    KeptReader,
    RecordReader,
    compile_kept_reader,
    compile_record_reader,
)
from pareis.datahub.wire.registry import SchemaSource
from pareis.errors import DecodeError, Origin, Poison

MAGIC = 0
FRAME_HEADER = 5
_schema_id = struct.Struct(">I").unpack_from
# The MCL/MCP fields a ChangeLog holds; the others (auditHeader, entityKeyAspect, previousSystemMetadata) are
# skipped, not decoded, on the compiled path.
_CHANGE_LOG_FIELDS = frozenset(
    {
        "entityType",
        "entityUrn",
        "changeType",
        "aspectName",
        "aspect",
        "systemMetadata",
        "headers",
        "previousAspectValue",
        "created",
    }
)
# What ``decode_mcl(..., previous=False)`` reads: previousAspectValue is skipped too.
_CURRENT_FIELDS = _CHANGE_LOG_FIELDS - {"previousAspectValue"}
# What :meth:`Decoder.kept_mcl` builds: the values the roles read (``is_own_write``, ``stamp_of``, the
# assertions role's ``created.time``). Everything ``decode_mcl(previous=False)`` decodes and these leave out
# is still UTF-8-decoded (VALIDATE), so both reject the same frames.
_ROLE_FIELDS: dict[str, Any] = {
    "entityType": True,
    "entityUrn": True,
    "changeType": True,
    "aspectName": True,
    "aspect": True,
    "systemMetadata": {"lastObserved": True, "pipelineName": True, "properties": True, "version": True, REST: VALIDATE},
    "headers": VALIDATE,
    "created": {"time": True, "actor": True, REST: VALIDATE},
}
ROLE_SYSTEM_METADATA = frozenset({"lastObserved", "pipelineName", "properties", "version"})
"""The ``systemMetadata`` keys a ChangeLog from :meth:`Decoder.kept_mcl` holds."""
ROLE_CREATED = frozenset({"time", "actor"})
"""The ``created`` keys a ChangeLog from :meth:`Decoder.kept_mcl` holds."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """Everything needed to decode bodies of one writer schema id, built on its first message."""

    writer: schemas.WriterSchema
    reader: dict[str, Any] | None  # None: the writer is the current schema, no resolution needed
    header: HeaderReader | None
    header_error: str | None
    compiled: RecordReader | None  # the compiled reader when no resolution is needed, else fastavro
    compiled_change_log: RecordReader | None  # the same, reading only what a ChangeLog holds
    compiled_current: RecordReader | None  # the same again, skipping previousAspectValue as well
    compiled_kept: KeptReader | None  # filter on aspectName, then only what the roles read (Decoder.kept_mcl)


class Decoder:
    """Decodes Confluent-framed DataHub records; one per process is enough (plans are cached per schema id).

    Safe to share between threads: the only shared state is the plan cache, and two threads meeting a new
    schema id at once merely build the same plan twice.

    Every method takes an optional ``origin`` that errors then name. In a hot loop, build the Origin only on
    failure instead: ``except DecodeError as exc: raise exc.at(Origin(topic, partition, offset)) from exc``.
    """

    def __init__(self, source: SchemaSource) -> None:
        self._source = source
        self._plans: dict[int, _Plan] = {}

    def schema_id(self, value: bytes, origin: Origin | None = None) -> int:
        """The writer schema id of a frame; DecodeError("framing") if it is not Confluent framing."""
        if len(value) < FRAME_HEADER or value[0] != MAGIC:
            raise _framing_error(value, origin)
        sid: int = _schema_id(value, 1)[0]
        return sid

    def header(self, value: bytes, origin: Origin | None = None) -> Header:
        """The header fields of an MCL or MCP frame, reading nothing past ``aspectName``."""
        if len(value) < FRAME_HEADER or value[0] != MAGIC:
            raise _framing_error(value, origin)
        sid: int = _schema_id(value, 1)[0]
        plan = self._plans.get(sid) or self._plan(sid, origin)
        if plan.header is None:
            raise DecodeError("unknown-schema", f"schema id {sid}: {plan.header_error}", origin)
        try:
            return plan.header(value, FRAME_HEADER)
        except (BadAvro, IndexError, ValueError) as exc:
            raise DecodeError("avro", f"schema id {sid}: header: {_describe(exc)}", origin) from exc

    def decode_mcl(self, value: bytes, origin: Origin | None = None, *, previous: bool = True) -> ChangeLog:
        """A MetadataChangeLog frame, in the current schema's shape.

        With ``previous=False`` the caller says it never reads the prior value: ``previousAspectValue`` (and
        ``previousSystemMetadata``, which a ChangeLog never holds) are skipped, not built, and ``previous_aspect``
        is None whatever the frame carries. Skipped values are still bounds- and structure-checked (a truncated
        or corrupt frame is a DecodeError), but their strings are not UTF-8-decoded. Writers left to fastavro
        are decoded whole and the prior value dropped. The roles decode this way (:mod:`pareis.compose.decoding`).
        """
        return _change_log(*self._record(value, schemas.MCL, origin, change_log=True, previous=previous), origin)

    def kept_mcl(
        self, value: bytes, wanted: Collection[str | None] | None, origin: Origin | None = None
    ) -> ChangeLog | None:
        """What the roles decode (:mod:`pareis.compose.decoding`): None when the aspect name is not in ``wanted``
        (None: keep every aspect), else the MetadataChangeLog with only the values the roles read.

        Same answers as ``header`` + ``decode_mcl(previous=False)``, in one pass: the same frames are dropped,
        the same ones raise the same DecodeError (any failure is re-decoded that way, to raise it), and the
        ChangeLog differs only in what no role reads — ``system_metadata`` holds just :data:`ROLE_SYSTEM_METADATA`,
        ``created`` just :data:`ROLE_CREATED`, and ``headers`` is None. The left-out values are still checked
        (structure, bounds, UTF-8) as ``decode_mcl`` checks them, not built.
        """
        if len(value) >= FRAME_HEADER and value[0] == MAGIC:
            sid: int = _schema_id(value, 1)[0]
            plan = self._plans.get(sid) or self._plan(sid, origin)  # as header() does first
            if plan.compiled_kept is not None:
                try:
                    record, end = plan.compiled_kept(value, FRAME_HEADER, wanted)
                except (BadAvro, IndexError, ValueError):
                    pass  # decoded again below, which raises the DecodeError the two-step decode raises
                else:
                    if record is None:
                        return None
                    if end == len(value):
                        return _change_log(record, sid, origin)
        if wanted is not None and self.header(value, origin).aspect_name not in wanted:
            return None
        return self.decode_mcl(value, origin, previous=False)

    def decode_mcp(self, value: bytes, origin: Origin | None = None) -> ChangeLog:
        """A MetadataChangeProposal frame (``previous_aspect`` and ``created`` are None)."""
        return _change_log(*self._record(value, schemas.MCP, origin, change_log=True), origin)

    def decode_platform_event(self, value: bytes, origin: Origin | None = None) -> PlatformEvent:
        """A PlatformEvent frame (entity- and relationship-change events; payload JSON left as bytes)."""
        record, sid = self._record(value, schemas.PLATFORM_EVENT, origin)
        payload = record["payload"]
        return PlatformEvent(
            record["name"], record["header"]["timestampMillis"], payload["value"], payload["contentType"], sid, origin
        )

    def decode_record(self, value: bytes, origin: Origin | None = None) -> tuple[str, dict[str, Any]]:
        """Any known frame as (kind, Avro-shaped dict in the current schema of that kind)."""
        sid = self.schema_id(value, origin)
        plan = self._plans.get(sid) or self._plan(sid, origin)
        return plan.writer.kind, self._record(value, plan.writer.kind, origin)[0]

    def _record(
        self, value: bytes, kind: str, origin: Origin | None, *, change_log: bool = False, previous: bool = True
    ) -> tuple[dict[str, Any], int]:
        sid = self.schema_id(value, origin)
        plan = self._plans.get(sid) or self._plan(sid, origin)
        if plan.writer.kind != kind:
            raise DecodeError("unknown-schema", f"schema id {sid} is {plan.writer.kind}, not {kind}", origin)
        if not change_log:
            compiled = plan.compiled
        elif previous:
            compiled = plan.compiled_change_log
        else:
            compiled = plan.compiled_current
        if compiled is not None:
            try:
                record, end = compiled(value, FRAME_HEADER)
            except (BadAvro, IndexError, ValueError) as exc:
                raise DecodeError("avro", f"schema id {sid}: {_describe(exc)}", origin) from exc
        else:
            body = io.BytesIO(value)
            body.seek(FRAME_HEADER)
            try:
                decoded = schemaless_reader(body, plan.writer.parsed, plan.reader)
            except Exception as exc:  # fastavro raises EOFError, IndexError, ValueError, StopIteration, … on bad bytes
                raise DecodeError("avro", f"schema id {sid}: {_describe(exc)}", origin) from exc
            if not isinstance(decoded, dict):
                raise DecodeError("unknown-schema", f"schema id {sid} does not describe a record", origin)
            record = decoded
            end = body.tell()
            if not previous:
                record["previousAspectValue"] = None
        left = len(value) - end
        if left:
            raise DecodeError("avro", f"schema id {sid}: {left} bytes left after the record", origin)
        return record, sid

    def _plan(self, sid: int, origin: Origin | None) -> _Plan:
        try:
            writer = self._source.writer_schema(sid)
        except DecodeError as exc:
            if origin is None:
                raise
            raise exc.at(origin) from exc
        if writer.kind not in schemas.KINDS:
            raise DecodeError("unknown-schema", f"schema id {sid} is {writer.kind or 'unnamed'}", origin)
        current = schemas.current(writer.kind)
        reader = None if writer.canonical == current.canonical else current.parsed
        header: HeaderReader | None = None
        header_error: str | None = None
        if writer.kind == schemas.PLATFORM_EVENT:
            header_error = "a PlatformEvent has no change-log header"
        else:
            try:
                header = compile_header_reader(writer.parsed)
            except (ValueError, BadAvro) as exc:
                header_error = str(exc)
        compiled: RecordReader | None = None
        compiled_change_log: RecordReader | None = None
        compiled_current: RecordReader | None = None
        compiled_kept: KeptReader | None = None
        if reader is None:
            try:
                compiled = compile_record_reader(writer.parsed)
                if writer.kind != schemas.PLATFORM_EVENT:
                    compiled_change_log = compile_record_reader(writer.parsed, _CHANGE_LOG_FIELDS)
                    compiled_current = compile_record_reader(writer.parsed, _CURRENT_FIELDS)
                if writer.kind == schemas.MCL and header is not None and _aspect_name_last(writer.parsed):
                    compiled_kept = compile_kept_reader(writer.parsed, _ROLE_FIELDS, "aspectName")
            except ValueError:  # logical or recursive types: fastavro reads those
                compiled = compiled_change_log = compiled_current = compiled_kept = None
        plan = _Plan(
            writer, reader, header, header_error, compiled, compiled_change_log, compiled_current, compiled_kept
        )
        self._plans[sid] = plan
        return plan


def _aspect_name_last(writer: dict[str, Any]) -> bool:
    """Whether ``aspectName`` comes after the other header fields, so that a reader stopping after it has read
    exactly what the header reader reads (and :meth:`Decoder.kept_mcl` drops the frames ``header`` drops)."""
    names = [str(f["name"]) for f in writer.get("fields", [])]
    if "aspectName" not in names:
        return False
    at = names.index("aspectName")
    return all(name not in names[at:] for name in HEADER_FIELDS if name != "aspectName")


def _change_log(record: dict[str, Any], sid: int, origin: Origin | None) -> ChangeLog:
    aspect = record["aspect"]
    previous = record.get("previousAspectValue")
    return ChangeLog(
        record["entityType"],
        record["entityUrn"],
        record["changeType"],
        record["aspectName"],
        aspect["value"] if aspect else None,
        previous["value"] if previous else None,
        record["systemMetadata"],
        record.get("created"),
        record.get("headers"),
        sid,
        aspect["contentType"] if aspect else None,
        origin,
    )


def _framing_error(value: bytes, origin: Origin | None) -> DecodeError:
    if len(value) < FRAME_HEADER:
        return DecodeError("framing", f"frame of {len(value)} bytes is shorter than its 5-byte header", origin)
    if value[0] == 1:
        return DecodeError("framing", "magic byte 1 (schema-GUID framing) is not supported", origin)
    return DecodeError("framing", f"magic byte {value[0]:#04x} is not Confluent framing (0x00)", origin)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, EOFError | IndexError) or not text:
        return f"truncated ({type(exc).__name__}{': ' + text if text else ''})"
    return f"{type(exc).__name__}: {text}"[:300]


class Encoder:
    """Encodes DataHub records with the current vendored schemas, framed with the source's id for the topic.

    ``topic`` is the default topic; each method also takes one (the subject is ``<topic>-value`` on a registry,
    and on DataHub's internal ids the timeseries change log differs from the versioned one).
    """

    def __init__(self, source: SchemaSource, topic: str | None = None) -> None:
        self._source = source
        self._topic = topic

    def encode_mcl(self, record: Mapping[str, Any] | Any, topic: str | None = None) -> bytes:
        """An MCL: an Avro-shaped mapping (e.g. from :func:`mcl_record`) or a ``MetadataChangeLogClass``."""
        return self._encode(schemas.MCL, _as_record(record), topic)

    def encode_mcp(self, mcp: Mapping[str, Any] | Any, topic: str | None = None) -> bytes:
        """An MCP from a ``MetadataChangeProposalWrapper`` or ``MetadataChangeProposalClass`` (or an Avro-shaped
        mapping), byte for byte as ``DatahubKafkaEmitter`` writes it: ``to_obj(tuples=True)`` — for a wrapper
        that is Pegasus JSON via ``pre_json_transform`` in ``aspect.value`` — then Avro.

        A record of plain values in the shape :mod:`pareis.datahub.writes.incident_serial` builds (no audit header, key
        aspect or headers) is written by :func:`pareis.datahub.wire.plain_mcp.plain_mcp`, the bytes fastavro writes at a
        fraction of the cost; anything else goes to fastavro."""
        record = _as_record(mcp)
        body = plain_mcp(record)
        if body is not None:
            return self._frame(schemas.MCP, topic) + body
        return self._encode(schemas.MCP, record, topic)

    def encode_platform_event(self, record: Mapping[str, Any] | Any, topic: str | None = None) -> bytes:
        """A PlatformEvent from an Avro-shaped mapping or a ``PlatformEventClass``."""
        return self._encode(schemas.PLATFORM_EVENT, _as_record(record), topic)

    def _frame(self, kind: str, topic: str | None) -> bytes:
        topic = topic or self._topic
        if not topic:
            raise ValueError("no topic given and none bound to this Encoder")
        return bytes((MAGIC,)) + self._source.schema_id(topic, kind).to_bytes(4, "big")

    def _encode(self, kind: str, record: Mapping[str, Any], topic: str | None) -> bytes:
        topic = topic or self._topic
        out = io.BytesIO()
        out.write(self._frame(kind, topic))
        try:
            schemaless_writer(out, schemas.current(kind).parsed, record, strict_allow_default=True)
        except Exception as exc:  # fastavro raises ValueError, TypeError, KeyError, … for a record off-schema
            raise Poison(f"cannot encode {kind} for {topic}: {type(exc).__name__}: {exc}") from exc
        return out.getvalue()


def _as_record(obj: Mapping[str, Any] | Any) -> Mapping[str, Any]:
    if isinstance(obj, Mapping):
        return obj
    to_obj = getattr(obj, "to_obj", None)
    if to_obj is None:
        raise TypeError(f"cannot encode a {type(obj).__name__}")
    record: Mapping[str, Any] = to_obj(tuples=True)
    return record


def mcl_record(
    *,
    entity_urn: str,
    aspect_name: str | None,
    aspect: Any = None,
    change_type: str = "UPSERT",
    entity_type: str | None = None,
    previous_aspect: Any = None,
    system_metadata: Any = None,
    previous_system_metadata: Any = None,
    created: Any = None,
    headers: Mapping[str, str] | None = None,
    content_type: str = JSON_CONTENT_TYPE,
) -> dict[str, Any]:
    """The Avro-shaped MCL record GMS would log, for :meth:`Encoder.encode_mcl`.

    ``aspect``/``previous_aspect``: an acryl-datahub aspect object (serialised to compact Pegasus JSON), a
    parsed JSON object, raw JSON bytes/str, or None. ``system_metadata``/``previous_system_metadata``/``created``:
    acryl-datahub objects or Avro-shaped dicts. ``entity_type`` defaults to the one named by the URN.
    """
    if entity_type is None:
        from datahub.utilities.urns.urn import guess_entity_type

        entity_type = guess_entity_type(entity_urn)
    return {
        "entityType": entity_type,
        "entityUrn": entity_urn,
        "changeType": str(change_type),
        "aspectName": aspect_name,
        "aspect": _generic_aspect(aspect, content_type),
        "systemMetadata": _avro_obj(system_metadata),
        "previousAspectValue": _generic_aspect(previous_aspect, JSON_CONTENT_TYPE),
        "previousSystemMetadata": _avro_obj(previous_system_metadata),
        "created": _avro_obj(created),
        "headers": dict(headers) if headers is not None else None,
    }


def _generic_aspect(value: Any, content_type: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        data = value
    elif isinstance(value, str):
        data = value.encode()
    elif hasattr(value, "to_obj"):
        data = pegasus_json(value)
    else:
        data = orjson.dumps(value)
    return {"value": data, "contentType": content_type}


def _avro_obj(value: Any) -> Any:
    if value is None or isinstance(value, Mapping):
        return value
    # Plain to_obj(): fastavro picks the union branch of a nested record by its shape; tuples=True only works
    # at the top level, where the whole record's unions are tagged.
    return value.to_obj()
