"""Decoded DataHub records: a change-log entry (:class:`ChangeLog`), its header, and a :class:`PlatformEvent`.

Aspect values stay as the raw UTF-8 Pegasus JSON bytes found on the wire; parse them on demand with
:meth:`ChangeLog.aspect_json` (orjson), and build typed acryl-datahub objects only where needed with
:func:`pareis.datahub.wire.aspects.typed_aspect`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from pareis.errors import DecodeError, Origin


class Header(NamedTuple):
    """The four top-level fields a consumer filters on, read without decoding the rest of the message."""

    entity_type: str
    entity_urn: str | None
    change_type: str
    aspect_name: str | None


@dataclass(frozen=True, slots=True)
class ChangeLog:
    """One MetadataChangeLog (or MetadataChangeProposal: then ``previous_aspect`` and ``created`` are None).

    ``aspect``/``previous_aspect`` are the GenericAspect ``value`` bytes (Pegasus JSON, or a JSON Patch when
    ``content_type`` is ``application/json-patch+json``); None when absent (e.g. ``aspect`` on DELETE), and
    ``previous_aspect`` is always None when decoded with ``Decoder.decode_mcl(..., previous=False)`` (which skips
    the prior value). From ``Decoder.kept_mcl`` (the roles' decode) ``headers`` is None too and
    ``system_metadata``/``created`` hold only the keys the roles read.
    ``system_metadata``/``created``/``headers`` are plain dicts in the current schema's shape (fields a legacy
    writer lacked carry their defaults). ``schema_id`` is the writer schema id of the frame; ``origin`` (not part
    of equality) says where it was read.
    """

    entity_type: str
    entity_urn: str | None
    change_type: str
    aspect_name: str | None
    aspect: bytes | None
    previous_aspect: bytes | None
    system_metadata: dict[str, Any] | None
    created: dict[str, Any] | None
    headers: dict[str, str] | None
    schema_id: int
    content_type: str | None = None
    origin: Origin | None = field(default=None, compare=False)

    @property
    def header(self) -> Header:
        return Header(self.entity_type, self.entity_urn, self.change_type, self.aspect_name)

    def aspect_json(self) -> Any:
        """The aspect parsed with orjson (None when there is none); DecodeError("aspect-json") if malformed."""
        return self._parse(self.aspect, "aspect")

    def previous_aspect_json(self) -> Any:
        """The previous aspect value parsed with orjson (None when there is none)."""
        return self._parse(self.previous_aspect, "previousAspectValue")

    def _parse(self, value: bytes | None, what: str) -> Any:
        if value is None:
            return None
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise DecodeError(
                "aspect-json", f"{what} {self.aspect_name} of {self.entity_urn}: {exc}", self.origin
            ) from exc


@dataclass(frozen=True, slots=True)
class PlatformEvent:
    """One PlatformEvent: ``name`` is ``entityChangeEvent`` or ``relationshipChangeEvent`` (or newer names);
    ``payload`` is the raw JSON bytes of the event body."""

    name: str
    timestamp_ms: int
    payload: bytes
    content_type: str
    schema_id: int
    origin: Origin | None = field(default=None, compare=False)

    def payload_json(self) -> Any:
        """The payload parsed with orjson; DecodeError("aspect-json") if malformed."""
        try:
            return orjson.loads(self.payload)
        except orjson.JSONDecodeError as exc:
            raise DecodeError("aspect-json", f"payload of {self.name}: {exc}", self.origin) from exc
