"""MetadataChangeProposal records of plain values written straight to Avro: the bytes fastavro writes for them,
without its per-record cost.

The incidents role's proposals (:mod:`pareis.datahub.writes.incident_serial`) are plain: strings, an int time, a JSON
aspect, the system metadata's first seven fields, no audit header, key aspect or headers. :func:`plain_mcp` writes
such a record by hand, against the vendored MCP schema's layout, which is checked once (:func:`_plain_layout`); a
record of any other shape, or a schema of another layout, gets None and goes to fastavro
(:class:`pareis.datahub.wire.codec.Encoder`). ``tests/unit/test_incident_serial.py`` compares the bytes with fastavro's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pareis.datahub.wire import schemas


def plain_mcp(record: Mapping[str, Any]) -> bytes | None:
    """The Avro body (no frame) of ``record`` when it is plain and the schema's layout is the one assumed; None
    otherwise."""
    if not _plain_layout():
        return None
    try:
        return _body(record)
    except _NotPlain:
        return None


_MCP_FIELDS = (
    "auditHeader",
    "entityType",
    "entityUrn",
    "entityKeyAspect",
    "changeType",
    "aspectName",
    "aspect",
    "systemMetadata",
    "headers",
)
_SYSTEM_METADATA_FIELDS = (
    "lastObserved",
    "runId",
    "lastRunId",
    "pipelineName",
    "registryName",
    "registryVersion",
    "properties",
    "version",
    "schemaVersion",
    "aspectCreated",
    "aspectModified",
)
_CHANGE_TYPES: dict[str, int] = {}


class _NotPlain(Exception):
    """The record is not of the shape :func:`plain_mcp` writes (fastavro writes it)."""


def _plain_layout() -> bool:
    """Whether the current MCP schema has the layout :func:`plain_mcp` assumes (checked once)."""
    if not _CHANGE_TYPES:
        fields = {f["name"]: f["type"] for f in schemas.current(schemas.MCP).parsed["fields"]}
        meta = fields["systemMetadata"][1] if isinstance(fields.get("systemMetadata"), list) else {}
        aspect = fields.get("aspect")
        ok = (
            tuple(fields) == _MCP_FIELDS
            and isinstance(meta, dict)
            and tuple(f["name"] for f in meta.get("fields", ())) == _SYSTEM_METADATA_FIELDS
            and [_branch(t) for t in fields["entityUrn"]] == ["null", "string"]
            and [_branch(t) for t in fields["aspectName"]] == ["null", "string"]
            and isinstance(aspect, list)
            and _branch(aspect[0]) == "null"
            and [g["name"] for g in _record_of(aspect[1], fields)["fields"]] == ["value", "contentType"]
            and [[_branch(t) for t in f["type"]] for f in meta["fields"][:7]]
            == [
                ["long", "null"],
                ["string", "null"],
                ["string", "null"],
                ["null", "string"],
                ["null", "string"],
                ["null", "string"],
                ["null", "map"],
            ]
        )
        symbols = fields["changeType"].get("symbols", ()) if isinstance(fields.get("changeType"), dict) else ()
        _CHANGE_TYPES.update({s: i for i, s in enumerate(symbols)} if ok else {"": -1})
    return "" not in _CHANGE_TYPES


def _branch(t: Any) -> str:
    return t if isinstance(t, str) else str(t.get("type"))


def _record_of(t: Any, fields: Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(t, dict):
        return t
    key = fields["entityKeyAspect"][1]  # the GenericAspect record, defined at its first use
    return key if isinstance(key, dict) else {"fields": ()}


def _long(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _str(value: Any) -> bytes:
    if type(value) is not str:
        raise _NotPlain
    data = value.encode()
    return _long(len(data)) + data


def _body(r: Mapping[str, Any]) -> bytes:
    """The Avro body of an MCP record of plain values (no union tagged as a tuple), with no audit header, key
    aspect or headers, a JSON aspect and a system metadata of the first seven fields; _NotPlain otherwise."""
    if r.get("auditHeader") is not None or r.get("entityKeyAspect") is not None or r.get("headers") is not None:
        raise _NotPlain
    aspect, meta = r.get("aspect"), r.get("systemMetadata")
    if type(aspect) is not dict or type(meta) is not dict or type(aspect.get("value")) is not bytes:
        raise _NotPlain
    if any(meta.get(k) is not None for k in _SYSTEM_METADATA_FIELDS[7:]) or meta.get("registryName") is not None:
        raise _NotPlain
    if meta.get("registryVersion") is not None or type(meta.get("lastObserved")) is not int:
        raise _NotPlain
    change = _CHANGE_TYPES.get(r.get("changeType"))  # type: ignore[arg-type]
    if change is None:
        raise _NotPlain
    out = [b"\x00", _str(r.get("entityType")), b"\x02", _str(r.get("entityUrn")), b"\x00", _long(change)]
    out += [b"\x02", _str(r.get("aspectName")), b"\x02", _long(len(aspect["value"])), aspect["value"]]
    out += [_str(aspect.get("contentType")), b"\x02", b"\x00", _long(meta["lastObserved"])]
    out += [b"\x00", _str(meta.get("runId")), b"\x00", _str(meta.get("lastRunId"))]
    out += [b"\x02", _str(meta.get("pipelineName")), b"\x00\x00"]
    properties = meta.get("properties")
    if type(properties) is not dict or not properties:
        raise _NotPlain
    out += [b"\x02", _long(len(properties))]
    for k, v in properties.items():
        out += [_str(k), _str(v)]
    out.append(b"\x00\x00\x00\x00\x00\x00")  # end of map; version, schemaVersion, created, modified; headers
    return b"".join(out)
