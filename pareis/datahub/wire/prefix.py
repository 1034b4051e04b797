"""The fast path: read a change-log message's header fields straight from its Avro bytes.

:func:`compile_header_reader` turns a writer schema into a function that reads ``entityType``, ``entityUrn``,
``changeType`` and ``aspectName`` and stops there, skipping whatever precedes them (``auditHeader``,
``entityKeyAspect``, …) by their Avro types. It is built from the writer schema itself, so any writer version
works; a consumer filters on the header and decodes the rest only for the messages it keeps.

This is the measured hot path (bench/codec.py), hence generated code: the reader for each writer schema is
emitted as straight-line Python (one block per field, the one-byte varint case inlined) and compiled once. The
generated source names only numbered locals; nothing from the schema text is ever placed into it.

A reader raises :class:`BadAvro`, ``IndexError`` (ran off the end) or ``ValueError`` (bad UTF-8) on malformed
input; the codec turns each into a DecodeError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pareis.datahub.wire.changelog import Header

HEADER_FIELDS = ("entityType", "entityUrn", "changeType", "aspectName")
_REQUIRED = frozenset({"entityType", "changeType"})

HeaderReader = Callable[[bytes, int], Header]
Skipper = Callable[[bytes, int], int]


class BadAvro(Exception):
    """The bytes are not a valid encoding under the writer schema."""


def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos``: (value, position after it)."""
    b = buf[pos]
    pos += 1
    n = b & 0x7F
    shift = 7
    while b & 0x80:
        if shift > 63:
            raise BadAvro("varint longer than 10 bytes")
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


def _length(buf: bytes, pos: int) -> tuple[int, int]:
    n, pos = read_long(buf, pos)
    if n < 0 or pos + n > len(buf):
        raise BadAvro(f"length {n} at byte {pos} runs past the end ({len(buf)} bytes)")
    return n, pos


def skipper(schema: Any, named: dict[str, Any]) -> Skipper:
    """A function skipping one value of ``schema`` (fastavro-parsed form; ``named`` resolves references)."""
    if isinstance(schema, list):
        branches = [skipper(branch, named) for branch in schema]

        def skip_union(buf: bytes, pos: int) -> int:
            index, pos = read_long(buf, pos)
            if not 0 <= index < len(branches):
                raise BadAvro(f"union branch {index} of {len(branches)}")
            return branches[index](buf, pos)

        return skip_union
    if isinstance(schema, str):
        if schema in named:
            # Resolved on use, so that recursive types don't recurse here.
            target: list[Skipper] = []

            def skip_named(buf: bytes, pos: int) -> int:
                if not target:
                    target.append(skipper(named[schema], named))
                return target[0](buf, pos)

            return skip_named
        return _primitive_skipper(schema)
    kind = schema["type"]
    if kind == "record" or kind == "error":
        fields = [skipper(f["type"], named) for f in schema["fields"]]

        def skip_record(buf: bytes, pos: int) -> int:
            for skip in fields:
                pos = skip(buf, pos)
            return pos

        return skip_record
    if kind == "enum":
        return _primitive_skipper("long")
    if kind == "fixed":
        return _fixed_skipper(int(schema["size"]))
    if kind in ("array", "map"):
        item = skipper(schema["items"] if kind == "array" else schema["values"], named)
        key = _primitive_skipper("string") if kind == "map" else None
        return _block_skipper(item, key)
    return skipper(kind, named)  # {"type": "string", "logicalType": …} and the like


def _primitive_skipper(name: str) -> Skipper:
    if name == "null":
        return lambda _buf, pos: pos
    if name in ("int", "long"):
        return lambda buf, pos: read_long(buf, pos)[1]
    if name in ("string", "bytes"):

        def skip_bytes(buf: bytes, pos: int) -> int:
            n, pos = _length(buf, pos)
            return pos + n

        return skip_bytes
    sizes = {"boolean": 1, "float": 4, "double": 8}
    if name in sizes:
        return _fixed_skipper(sizes[name])
    raise BadAvro(f"unknown Avro type {name!r}")


def _fixed_skipper(size: int) -> Skipper:
    def skip_fixed(buf: bytes, pos: int) -> int:
        if pos + size > len(buf):
            raise BadAvro(f"{size} bytes at byte {pos} run past the end")
        return pos + size

    return skip_fixed


def _block_skipper(item: Skipper, key: Skipper | None) -> Skipper:
    def skip_blocks(buf: bytes, pos: int) -> int:
        while True:
            count, pos = read_long(buf, pos)
            if count == 0:
                return pos
            if count < 0:  # a negative count is followed by the block's size in bytes
                size, pos = _length(buf, pos)
                pos += size
                continue
            # Each item takes at least one byte in every DataHub schema; a larger count is garbage, and
            # refusing it keeps a corrupted count from spinning for 2**63 iterations.
            if count > len(buf) - pos:
                raise BadAvro(f"block of {count} items in {len(buf) - pos} bytes")
            for _ in range(count):
                if key is not None:
                    pos = key(buf, pos)
                pos = item(buf, pos)

    return skip_blocks


_READ_LONG = """\
    b = buf[pos]
    if b < 0x80:
        pos += 1
        n = (b >> 1) ^ -(b & 1)
    elif buf[pos + 1] < 0x80:
        b = (b & 0x7F) | (buf[pos + 1] << 7)
        pos += 2
        n = (b >> 1) ^ -(b & 1)
    else:
        n, pos = read_long(buf, pos)
"""
_READ_STRING = (
    _READ_LONG
    + """\
    end = pos + n
    if n < 0 or end > size:
        raise BadAvro("string length %d at byte %d runs past the end" % (n, pos))
    v{i} = buf[pos:end].decode()
    pos = end
"""
)
_READ_ENUM = (
    _READ_LONG
    + """\
    if not 0 <= n < {count}:
        raise BadAvro("enum index %d of {count}" % n)
    v{i} = symbols{i}[n]
"""
)


def compile_header_reader(writer: dict[str, Any]) -> HeaderReader:
    """Compile the header reader for a fastavro-parsed record schema.

    The reader takes ``(buf, pos)`` — the whole frame and the offset of the Avro body — and returns a
    :class:`Header`. Raises ValueError when the schema has no ``entityType``/``changeType`` or gives a header
    field a type other than string, enum or a union of null with those.
    """
    named = writer.get("__named_schemas", {})
    fields = writer.get("fields")
    if writer.get("type") != "record" or not isinstance(fields, list):
        raise ValueError("not a record schema")
    present = {f["name"] for f in fields}
    missing = _REQUIRED - present
    if missing:
        raise ValueError(f"writer schema has no {', '.join(sorted(missing))}")
    namespace: dict[str, Any] = {"read_long": read_long, "BadAvro": BadAvro, "Header": Header}
    lines = ["def read_header(buf, pos):", "    size = len(buf)"]
    wanted = set(HEADER_FIELDS) & present
    slot = {name: i for i, name in enumerate(HEADER_FIELDS)}
    for index, f in enumerate(fields):
        if not wanted:
            break
        name = f["name"]
        if name in wanted:
            wanted.discard(name)
            lines.append(_read_block(f["type"], slot[name], named, namespace))
        else:
            namespace[f"skip{index}"] = skipper(f["type"], named)
            lines.append(_skip_block(f["type"], index))
    for name in set(HEADER_FIELDS) - present:
        lines.append(f"    v{slot[name]} = None")
    lines.append("    return Header(v0, v1, v2, v3)")
    exec(compile("\n".join(lines), "<pareis header reader>", "exec"), namespace)  # see module docstring
    reader: HeaderReader = namespace["read_header"]
    return reader


def _skip_block(schema: Any, index: int) -> str:
    if isinstance(schema, list) and schema and schema[0] == "null":
        # The common case (auditHeader, entityKeyAspect): branch 0, null, is the byte 0x00.
        return f"    if buf[pos] == 0:\n        pos += 1\n    else:\n        pos = skip{index}(buf, pos)"
    return f"    pos = skip{index}(buf, pos)"


def _read_block(schema: Any, i: int, named: dict[str, Any], namespace: dict[str, Any]) -> str:
    if isinstance(schema, list):
        out = [_READ_LONG.rstrip("\n")]
        for branch_index, branch in enumerate(schema):
            keyword = "if" if branch_index == 0 else "elif"
            body = _indent(_read_value(branch, i, named, namespace))
            out.append(f"    {keyword} n == {branch_index}:\n{body}")
        out.append(f'    else:\n        raise BadAvro("union branch %d of {len(schema)}" % n)')
        return "\n".join(out)
    return _read_value(schema, i, named, namespace).rstrip("\n")


def _read_value(schema: Any, i: int, named: dict[str, Any], namespace: dict[str, Any]) -> str:
    if isinstance(schema, str) and schema in named:
        schema = named[schema]
    if schema == "null":
        return f"    v{i} = None\n"
    if schema == "string" or (isinstance(schema, dict) and schema.get("type") == "string"):
        return _READ_STRING.format(i=i)
    if isinstance(schema, dict) and schema.get("type") == "enum":
        symbols = tuple(str(s) for s in schema["symbols"])
        namespace[f"symbols{i}"] = symbols
        return _READ_ENUM.format(i=i, count=len(symbols))
    raise ValueError(f"header field {HEADER_FIELDS[i]} has unsupported type {schema!r}")


def _indent(block: str) -> str:
    return "\n".join("    " + line if line else line for line in block.rstrip("\n").split("\n"))
