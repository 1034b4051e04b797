"""DataHub's Avro schemas, vendored in ``schemas/datahub/`` and pinned to the acryl-datahub version in its README.

The *current* schemas (``MetadataChangeLog``, ``MetadataChangeProposal``, ``PlatformEvent``) are the reader shapes
Pareis decodes into and the writer shapes it encodes with. The ``v1/`` copies are DataHub's legacy writer schemas
(older GMS; ``SystemMetadata`` without ``schemaVersion``/``aspectCreated``/``aspectModified``), used only to read
messages written with them. :data:`INTERNAL_IDS` maps the fixed ids of DataHub's internal schema registry
(``SchemaIdOrdinal``) to these files.

Files are read and parsed on first use, never at import.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from fastavro import parse_schema
from fastavro.schema import to_parsing_canonical_form

PACKAGED: Final = "_schemas"
"""Where an installed copy holds the top-level ``schemas/`` tree (inside the package; the wheel build puts it there,
``setup.py``)."""


@functools.cache
def schema_root() -> Path:
    """The ``schemas/`` tree: the installed package's (``pareis/_schemas``, found through importlib.resources), else
    the source checkout's top-level ``schemas/`` (an editable install, the tests)."""
    packaged = Path(str(importlib.resources.files("pareis") / PACKAGED))
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "schemas"


def schema_dir() -> Path:
    """The vendored DataHub schemas, ``schemas/datahub``."""
    return schema_root() / "datahub"


MCL: Final = "MetadataChangeLog"
MCP: Final = "MetadataChangeProposal"
PLATFORM_EVENT: Final = "PlatformEvent"
KINDS: Final = (MCL, MCP, PLATFORM_EVENT)

CURRENT_FILES: Final = {
    MCL: "MetadataChangeLog.avsc",
    MCP: "MetadataChangeProposal.avsc",
    PLATFORM_EVENT: "PlatformEvent.avsc",
}
V1_MCL: Final = "v1/MetadataChangeLog.avsc"
V1_MCP: Final = "v1/MetadataChangeProposal.avsc"

# DataHub's SchemaIdOrdinal: 0–15 are the legacy (v1) ids, the "_FIX" ids 9–15 serve the same v1 schemas,
# 16–22 are the current ones. MCL-Timeseries has its own ids (3/12/19) with the MCL schema.
INTERNAL_IDS: Final[dict[int, str]] = {
    0: V1_MCP,
    2: V1_MCL,
    3: V1_MCL,
    4: CURRENT_FILES[PLATFORM_EVENT],
    9: V1_MCP,
    11: V1_MCL,
    12: V1_MCL,
    16: CURRENT_FILES[MCP],
    18: CURRENT_FILES[MCL],
    19: CURRENT_FILES[MCL],
}
INTERNAL_MCP_ID: Final = 16
INTERNAL_MCL_ID: Final = 18
INTERNAL_MCL_TIMESERIES_ID: Final = 19
INTERNAL_PLATFORM_EVENT_ID: Final = 4


@dataclass(frozen=True, slots=True)
class WriterSchema:
    """A writer schema as found under a schema id: its record name, JSON text form, and fastavro parse.

    ``kind`` is the unqualified record name (``MetadataChangeLog``, ``MetadataChangeProposal``, ``PlatformEvent``
    or anything else a registry may hold). ``canonical`` is Avro's Parsing Canonical Form, which decides whether
    the writer equals the current reader schema (then no resolution is needed).
    """

    schema_id: int
    kind: str
    json: dict[str, Any] = field(repr=False)
    parsed: dict[str, Any] = field(repr=False)
    canonical: str = field(repr=False)


def parse_writer(schema_id: int, schema: str | dict[str, Any]) -> WriterSchema:
    """Parse an Avro schema (text or JSON object) found under ``schema_id``.

    Raises ValueError (incl. fastavro's SchemaParseException) when the text is not a valid Avro schema.
    """
    obj = json.loads(schema) if isinstance(schema, str) else schema
    if not isinstance(obj, dict):
        raise ValueError(f"schema {schema_id} is not an Avro record schema")
    try:
        parsed = parse_schema(obj)
    except Exception as exc:  # fastavro raises SchemaParseException, UnknownType, KeyError, TypeError …
        raise ValueError(f"schema {schema_id} does not parse: {exc}") from exc
    if not isinstance(parsed, dict):
        raise ValueError(f"schema {schema_id} is not an Avro record schema")
    name = str(obj.get("name", ""))
    return WriterSchema(schema_id, name.rsplit(".", 1)[-1], obj, parsed, to_parsing_canonical_form(parsed))


@functools.cache
def text(relative: str) -> str:
    """The exact text of a vendored file, e.g. ``text("MetadataChangeLog.avsc")``."""
    return (schema_dir() / relative).read_text(encoding="utf-8")


@functools.cache
def vendored(relative: str, schema_id: int = -1) -> WriterSchema:
    """A vendored file, parsed (cached per file and id)."""
    return parse_writer(schema_id, text(relative))


def current(kind: str) -> WriterSchema:
    """The current schema of ``kind`` (the reader shape Pareis decodes into)."""
    return vendored(CURRENT_FILES[kind])
