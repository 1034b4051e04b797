"""The elements of a JSON array in a file, one at a time, in bounded memory.

A small file is parsed whole with orjson (the fastest way). A larger one is read in chunks and each element decoded
on its own with the standard library's C scanner (``JSONDecoder.raw_decode``), so memory holds one chunk and one
element at a time, never the whole document: what makes a multi-hundred-megabyte ``--metadata`` file readable at all.

Errors are :class:`JsonArrayError` (a ValueError) naming the byte offset or element index at fault.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

WHOLE_BELOW = 32 << 20
"""Files smaller than this (bytes) are parsed whole."""
CHUNK = 4 << 20
"""Characters read at a time when streaming."""

_WHITESPACE = " \t\r\n"


class JsonArrayError(ValueError):
    """The file is not a JSON array (of objects), or not valid JSON."""


def array_elements(path: Path, *, whole_below: int = WHOLE_BELOW, chunk: int = CHUNK) -> Iterator[Any]:
    """Every element of the JSON array stored in ``path``, in order (a UTF-8 BOM is allowed)."""
    with path.open("rb") as f:
        if path.stat().st_size < whole_below:
            data = f.read()
            try:
                document = orjson.loads(data[3:] if data.startswith(codecs.BOM_UTF8) else data)
            except orjson.JSONDecodeError as exc:
                raise JsonArrayError(f"not JSON: {exc}") from exc
            if not isinstance(document, list):
                raise JsonArrayError(f"expected a JSON array, got {type(document).__name__}")
            yield from document
        else:
            yield from _stream(f, chunk)


def _stream(f: BinaryIO, chunk: int) -> Iterator[Any]:
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    scan = json.JSONDecoder().raw_decode
    buf = ""
    pos = 0
    eof = False
    consumed = 0  # characters dropped from the front of ``buf`` so far, for error offsets

    def more(size: int) -> bool:
        nonlocal buf, pos, eof, consumed
        if eof:
            return False
        raw = f.read(size)
        try:
            text = decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise JsonArrayError(f"not UTF-8 near character {consumed + len(buf)}: {exc}") from exc
        eof = not raw
        consumed += pos
        buf = buf[pos:] + text
        pos = 0
        return bool(raw) or bool(text)

    def skip_space() -> None:
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in _WHITESPACE:
                pos += 1
            if pos < len(buf) or not more(chunk):
                return

    def fail(problem: str) -> JsonArrayError:
        return JsonArrayError(f"{problem} at character {consumed + pos}")

    more(chunk)
    skip_space()
    if pos >= len(buf) or buf[pos] != "[":
        raise fail("expected a JSON array")
    pos += 1
    skip_space()
    if pos < len(buf) and buf[pos] == "]":
        return
    size = chunk
    while True:
        skip_space()
        if pos >= len(buf):
            raise fail("unterminated array")
        try:
            value, end = scan(buf, pos)
        except RecursionError as exc:
            raise fail("nested too deeply") from exc
        except json.JSONDecodeError as exc:
            # An element cut by the end of the buffer: read more (doubling, for very large elements) and retry.
            if more(size):
                size *= 2
                continue
            raise fail(f"not JSON ({exc.msg})") from exc
        size = chunk
        pos = end
        yield value
        skip_space()
        if pos >= len(buf):
            raise fail("unterminated array")
        if buf[pos] == ",":
            pos += 1
        elif buf[pos] == "]":
            pos += 1
            skip_space()
            if pos < len(buf):
                raise fail("data after the array")
            return
        else:
            raise fail(f"expected ',' or ']', got {buf[pos]!r}")
