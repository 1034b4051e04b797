"""The second half of the hot path: a full-record reader compiled per writer schema.

The lineage role decodes every message it keeps; fastavro's generic reader spends most of that time walking the
schema value by value (bench/codec.py: ~3× the cost of this reader on a realistic MCL). :func:`compile_record_reader`
emits straight-line Python for one writer schema — one inlined block per value, unions of null decided on one
byte — and compiles it once. It returns exactly what ``fastavro.schemaless_reader(fo, writer)`` returns (records as
dicts, unions unwrapped, enums as symbol strings, bytes as bytes); tests pin that equivalence.

It covers the case where no schema resolution is needed (the writer *is* the current schema). The codec keeps
fastavro for everything else: legacy writers resolved into the current shape, and schemas with logical types.
Field names and enum symbols reach the generated source only as ``repr`` literals or namespace tuples.

A reader raises :class:`~pareis.datahub.wire.prefix.BadAvro`, ``IndexError`` or ``ValueError`` on malformed input.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

from pareis.datahub.wire.prefix import BadAvro, read_long

RecordReader = Callable[[bytes, int], tuple[dict[str, Any], int]]
KeptReader = Callable[[bytes, int, "Collection[str | None] | None"], tuple[dict[str, Any] | None, int]]
SKIP: Final = "skip"
"""A field spec: skip the value (bounds and structure checked, strings not UTF-8-decoded)."""
VALIDATE: Final = "validate"
"""A field spec: skip the value, but UTF-8-decode its strings (and drop them), so that it rejects what a full
decode rejects."""
REST: Final = "*"
"""The key of a :data:`Keep` mapping giving the spec of the fields it does not name (default :data:`SKIP`)."""
Keep = frozenset[str] | Mapping[str, Any]
"""Which fields of a record to build: a set of names (the others :data:`SKIP`), or a mapping of name to spec —
``True`` (build the whole value), a nested :data:`Keep` (for a record, or a union of null and a record),
:data:`SKIP` or :data:`VALIDATE`."""
_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


_VARINT = re.compile(rb"[\x80-\xff]{0,9}[\x00-\x7f]").match  # what read_long accepts: at most 10 bytes


def skip_long(buf: bytes, pos: int) -> int:
    """The position after the varint at ``pos``; raises what :func:`read_long` raises when it is malformed."""
    found = _VARINT(buf, pos)
    if found is None:
        return read_long(buf, pos)[1]  # raises IndexError (truncated) or BadAvro (too long)
    return found.end()


def read_long_wide(buf: bytes, pos: int) -> tuple[int, int]:
    """:func:`read_long`, unrolled for varints of up to 7 bytes (timestamps in milliseconds take 6)."""
    b = buf[pos]
    n = b & 0x7F
    if b < 0x80:
        return (n >> 1) ^ -(n & 1), pos + 1
    b = buf[pos + 1]
    n |= (b & 0x7F) << 7
    if b < 0x80:
        return (n >> 1) ^ -(n & 1), pos + 2
    b = buf[pos + 2]
    n |= (b & 0x7F) << 14
    if b < 0x80:
        return (n >> 1) ^ -(n & 1), pos + 3
    b = buf[pos + 3]
    n |= (b & 0x7F) << 21
    if b < 0x80:
        return (n >> 1) ^ -(n & 1), pos + 4
    b = buf[pos + 4]
    n |= (b & 0x7F) << 28
    if b < 0x80:
        return (n >> 1) ^ -(n & 1), pos + 5
    b = buf[pos + 5]
    n |= (b & 0x7F) << 35
    if b < 0x80:
        return (n >> 1) ^ -(n & 1), pos + 6
    b = buf[pos + 6]
    n |= (b & 0x7F) << 42
    if b < 0x80:
        return (n >> 1) ^ -(n & 1), pos + 7
    return read_long(buf, pos)


class _Emitter:
    """Accumulates the generated source; ``value`` emits the code reading one value into a local."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "read_long_wide": read_long_wide,
            "skip_long": skip_long,
            "BadAvro": BadAvro,
            "unpack_float": struct.Struct("<f").unpack_from,
            "unpack_double": struct.Struct("<d").unpack_from,
        }
        self.counter = 0
        self.active: set[str] = set()
        self.skipping = False  # emit code that only advances past values (for fields left out)
        self.validating = False  # while skipping: still UTF-8-decode strings (and drop the result)

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def long(self, depth: int, target: str) -> None:
        # One- and two-byte varints inline (lengths of URNs and most strings); longer ones (timestamps) call out.
        self.emit(depth, "b = buf[pos]")
        self.emit(depth, "if b < 0x80:")
        self.emit(depth + 1, "pos += 1")
        self.emit(depth + 1, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(depth, "elif buf[pos + 1] < 0x80:")
        self.emit(depth + 1, "b = (b & 0x7F) | (buf[pos + 1] << 7)")
        self.emit(depth + 1, "pos += 2")
        self.emit(depth + 1, f"{target} = (b >> 1) ^ -(b & 1)")
        self.emit(depth, "else:")
        self.emit(depth + 1, f"{target}, pos = read_long_wide(buf, pos)")

    def skip_long(self, depth: int) -> None:
        # A skipped long (the audit stamps' times, mostly 6-byte varints) is only stepped over: its end is found
        # by a regular expression instead of being decoded byte by byte.
        self.emit(depth, "if buf[pos] < 0x80:")
        self.emit(depth + 1, "pos += 1")
        self.emit(depth, "else:")
        self.emit(depth + 1, "pos = skip_long(buf, pos)")

    def sized(self, depth: int, target: str, size: str, decode: str = "") -> None:
        self.emit(depth, f"end = pos + {size}")
        self.emit(depth, f"if {size} < 0 or end > size:")
        self.emit(depth + 1, f'raise BadAvro("%d bytes at byte %d run past the end" % ({size}, pos))')
        if not self.skipping:
            self.emit(depth, f"{target} = buf[pos:end]{decode}")
        elif self.validating and decode:
            self.emit(depth, f"buf[pos:end]{decode}")
        self.emit(depth, "pos = end")

    def value(self, schema: Any, depth: int, target: str, keep: Keep | None = None) -> None:
        if isinstance(schema, list):
            self.union(schema, depth, target, keep)
        elif isinstance(schema, str) and schema in self.named:
            self.value(self.named[schema], depth, target, keep)
        elif isinstance(schema, str):
            self.primitive(schema, depth, target)
        elif "logicalType" in schema:
            raise ValueError(f"logical type {schema['logicalType']!r} is left to fastavro")
        elif schema["type"] in _PRIMITIVES:
            self.primitive(schema["type"], depth, target)
        elif schema["type"] in ("record", "error"):
            self.record(schema, depth, target, keep)
        elif schema["type"] == "enum":
            symbols = self.fresh("symbols")
            self.namespace[symbols] = tuple(str(s) for s in schema["symbols"])
            index = self.fresh("n")
            self.long(depth, index)
            self.emit(depth, f"if not 0 <= {index} < {len(schema['symbols'])}:")
            self.emit(depth + 1, f'raise BadAvro("enum index %d" % {index})')
            if not self.skipping:
                self.emit(depth, f"{target} = {symbols}[{index}]")
        elif schema["type"] == "fixed":
            self.sized(depth, target, str(int(schema["size"])))
        elif schema["type"] in ("array", "map"):
            self.blocks(schema, depth, target)
        else:
            raise ValueError(f"unknown Avro type {schema['type']!r}")

    def primitive(self, name: str, depth: int, target: str) -> None:
        if name == "null":
            self.emit(depth, f"{target} = None")
        elif name == "boolean":
            self.emit(depth, f"{target} = buf[pos] != 0")
            self.emit(depth, "pos += 1")
        elif name in ("int", "long") and self.skipping:
            self.skip_long(depth)
        elif name in ("int", "long"):
            self.long(depth, target)
        elif name in ("float", "double"):
            width = 4 if name == "float" else 8
            self.emit(depth, f"if pos + {width} > size:")
            self.emit(depth + 1, 'raise BadAvro("number runs past the end")')
            self.emit(depth, f"{target} = unpack_{name}(buf, pos)[0]")
            self.emit(depth, f"pos += {width}")
        elif name in ("bytes", "string"):
            # The common cases first, in as few lines as can be: a length under 64 (one byte, even: not negative).
            decode = ".decode()" if name == "string" else ""
            self.emit(depth, "b = buf[pos]")
            self.emit(depth, "if b < 0x80 and not b & 1:")
            self.emit(depth + 1, "end = pos + 1 + (b >> 1)")
            self.emit(depth + 1, "if end > size:")
            self.emit(depth + 2, 'raise BadAvro("%d bytes at byte %d run past the end" % (b >> 1, pos + 1))')
            if not self.skipping:
                self.emit(depth + 1, f"{target} = buf[pos + 1:end]{decode}")
            elif self.validating and decode:
                self.emit(depth + 1, f"buf[pos + 1:end]{decode}")
            self.emit(depth + 1, "pos = end")
            # Then a length under 8,192 (two bytes: URNs, most descriptions).
            self.emit(depth, "elif not b & 1 and buf[pos + 1] < 0x80:")
            self.emit(depth + 1, "end = pos + 2 + (((b & 0x7F) | (buf[pos + 1] << 7)) >> 1)")
            self.emit(depth + 1, "if end > size:")
            self.emit(depth + 2, 'raise BadAvro("%d bytes at byte %d run past the end" % (end - pos - 2, pos + 2))')
            if not self.skipping:
                self.emit(depth + 1, f"{target} = buf[pos + 2:end]{decode}")
            elif self.validating and decode:
                self.emit(depth + 1, f"buf[pos + 2:end]{decode}")
            self.emit(depth + 1, "pos = end")
            self.emit(depth, "else:")
            length = self.fresh("n")
            self.long(depth + 1, length)
            self.sized(depth + 1, target, length, decode)
        else:
            raise ValueError(f"unknown Avro type {name!r}")

    def union(self, branches: list[Any], depth: int, target: str, keep: Keep | None = None) -> None:
        # Branch i is written as the one-byte varint 2*i (every writer encodes it canonically; DataHub unions
        # have at most a dozen branches), so the branch is chosen on one byte.
        if len(branches) > 63:
            raise ValueError("unions of more than 63 branches are left to fastavro")
        index = self.fresh("u")
        self.emit(depth, f"{index} = buf[pos]")
        self.emit(depth, "pos += 1")
        for i, branch in enumerate(branches):
            self.emit(depth, f"{'if' if i == 0 else 'elif'} {index} == {2 * i}:")
            self.value(branch, depth + 1, target, keep)
        self.emit(depth, "else:")
        self.emit(depth + 1, f'raise BadAvro("union branch byte %d of {len(branches)} branches" % {index})')

    def record(
        self,
        schema: dict[str, Any],
        depth: int,
        target: str,
        keep: Keep | None = None,
        filter_on: str | None = None,
    ) -> None:
        name = str(schema.get("name", ""))
        if name in self.active:
            raise ValueError(f"recursive type {name!r} is left to fastavro")
        self.active.add(name)
        slots = []
        for f in schema["fields"]:
            field_name = str(f["name"])
            spec: Any = True
            if isinstance(keep, frozenset):
                spec = field_name in keep or SKIP
            elif keep is not None:
                spec = keep.get(field_name, keep.get(REST, SKIP))
            if spec in (SKIP, VALIDATE):
                self.skip(f["type"], depth, validate=spec == VALIDATE)
                continue
            slot = self.fresh()
            self.value(f["type"], depth, slot, None if spec is True else spec)
            slots.append(f"{field_name!r}: {slot}")
            if field_name == filter_on:
                self.emit(depth, f"if wanted is not None and {slot} not in wanted:")
                self.emit(depth + 1, "return None, pos")
        if not self.skipping:
            self.emit(depth, f"{target} = {{{', '.join(slots)}}}")
        self.active.discard(name)

    def skip(self, schema: Any, depth: int, *, validate: bool = False) -> None:
        # Inline like the values themselves: a call per value (prefix.skipper) costs more than decoding it here.
        if self.skipping:  # already inside a skipped value: keep its mode
            self.value(schema, depth, "_")
            return
        self.skipping, self.validating = True, validate
        try:
            self.value(schema, depth, "_")
        finally:
            self.skipping = self.validating = False

    def blocks(self, schema: dict[str, Any], depth: int, target: str) -> None:
        is_map = schema["type"] == "map"
        count, item, key = self.fresh("c"), self.fresh(), self.fresh("k")
        if not self.skipping:
            self.emit(depth, f"{target} = {{}}" if is_map else f"{target} = []")
        self.emit(depth, "while True:")
        self.long(depth + 1, count)
        self.emit(depth + 1, f"if {count} == 0:")
        self.emit(depth + 2, "break")
        self.emit(depth + 1, f"if {count} < 0:")  # a negative count is followed by the block's byte size
        self.emit(depth + 2, f"{count} = -{count}")
        self.long(depth + 2, "_")
        # Every item takes at least one byte in DataHub's schemas; a larger count is corruption.
        self.emit(depth + 1, f"if {count} > size - pos:")
        self.emit(depth + 2, f'raise BadAvro("block of %d items in %d bytes" % ({count}, size - pos))')
        self.emit(depth + 1, f"for _ in range({count}):")
        if is_map:
            self.primitive("string", depth + 2, key)
        self.value(schema["values"] if is_map else schema["items"], depth + 2, item)
        if not self.skipping:
            self.emit(depth + 2, f"{target}[{key}] = {item}" if is_map else f"{target}.append({item})")


def compile_record_reader(writer: dict[str, Any], keep: frozenset[str] | None = None) -> RecordReader:
    """Compile the reader of a fastavro-parsed record schema.

    The reader takes ``(buf, pos)`` — the whole frame and the offset of the Avro body — and returns the record
    (as fastavro would) and the position after it. With ``keep``, top-level fields outside it are skipped and
    left out of the dict. Raises ValueError for schemas it leaves to fastavro (logical types, recursive types).
    """
    if writer.get("type") != "record":
        raise ValueError("not a record schema")
    emitter = _Emitter(writer.get("__named_schemas", {}))
    emitter.emit(0, "def read_record(buf, pos):")
    emitter.emit(1, "size = len(buf)")
    emitter.record(writer, 1, "record", keep)
    emitter.emit(1, "return record, pos")
    exec(compile("\n".join(emitter.lines), "<pareis record reader>", "exec"), emitter.namespace)  # see docstring
    reader: RecordReader = emitter.namespace["read_record"]
    return reader


def compile_kept_reader(writer: dict[str, Any], keep: Mapping[str, Any], filter_on: str) -> KeptReader:
    """Compile a filtering reader of a fastavro-parsed record schema: ``keep`` says which values to build
    (see :data:`Keep`), ``filter_on`` names a top-level string field (kept by ``keep``).

    The reader takes ``(buf, pos, wanted)`` and returns ``(None, position after filter_on)`` as soon as that
    field's value is not in ``wanted`` (None: keep everything), else the record (only the kept fields) and the
    position after it. Raises ValueError for schemas it leaves to fastavro, or when ``filter_on`` is not a kept
    field of the record.
    """
    if writer.get("type") != "record":
        raise ValueError("not a record schema")
    if keep.get(filter_on) is not True or filter_on not in {str(f["name"]) for f in writer["fields"]}:
        raise ValueError(f"{filter_on!r} is not a kept field of the record")
    emitter = _Emitter(writer.get("__named_schemas", {}))
    emitter.emit(0, "def read_kept(buf, pos, wanted):")
    emitter.emit(1, "size = len(buf)")
    emitter.record(writer, 1, "record", keep, filter_on)
    emitter.emit(1, "return record, pos")
    exec(compile("\n".join(emitter.lines), "<pareis kept reader>", "exec"), emitter.namespace)  # see docstring
    reader: KeptReader = emitter.namespace["read_kept"]
    return reader
