"""Typed reads of raw aspect JSON (Pegasus JSON as on the wire) that fail as Poison with the path at fault.

Missing optional keys and JSON ``null`` both read as absent (``pre_json_transform`` drops nulls, other writers
may not). Wrong types, missing required keys and unparsable URNs raise
:class:`~pareis.errors.DecodeError` with reason ``aspect-shape``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from pareis.core.fieldpath import canonical_column, column_urn, is_column
from pareis.errors import DecodeError

REASON = "aspect-shape"


class Shape:
    """Reads of one aspect value; every error names the entity, the aspect and the JSON path."""

    def __init__(self, entity: str, aspect: str) -> None:
        self.entity = entity
        self.aspect = aspect

    def fail(self, where: str, problem: str) -> NoReturn:
        raise DecodeError(REASON, f"{self.aspect} of {self.entity}: {where or '<root>'}: {problem}")

    def obj(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            self.fail(where, f"expected an object, got {type(value).__name__}")
        return value

    def opt_obj(self, parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any] | None:
        value = parent.get(key)
        return None if value is None else self.obj(value, _at(where, key))

    def objs(
        self, parent: Mapping[str, Any], key: str, where: str, *, required: bool = False
    ) -> list[Mapping[str, Any]]:
        return [self.obj(v, f"{_at(where, key)}[{i}]") for i, v in enumerate(self._list(parent, key, where, required))]

    def req_str(self, parent: Mapping[str, Any], key: str, where: str) -> str:
        value = self.opt_str(parent, key, where)
        if value is None:
            self.fail(_at(where, key), "required string missing")
        return value

    def opt_str(self, parent: Mapping[str, Any], key: str, where: str) -> str | None:
        value = parent.get(key)
        if value is not None and not isinstance(value, str):
            self.fail(_at(where, key), f"expected a string, got {type(value).__name__}")
        return value

    def opt_int(self, parent: Mapping[str, Any], key: str, where: str) -> int | None:
        value = parent.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            self.fail(_at(where, key), f"expected an integer, got {value!r}")
        return int(value)

    def opt_bool(self, parent: Mapping[str, Any], key: str, where: str) -> bool | None:
        value = parent.get(key)
        if value is not None and not isinstance(value, bool):
            self.fail(_at(where, key), f"expected a boolean, got {value!r}")
        return value

    def time_of(self, parent: Mapping[str, Any], key: str, where: str) -> int | None:
        """``parent[key].time`` of an AuditStamp / TimeStamp / MetadataAttribution, if present."""
        stamp = self.opt_obj(parent, key, where)
        return None if stamp is None else self.opt_int(stamp, "time", _at(where, key))

    def urn(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value.startswith("urn:li:"):
            self.fail(where, f"expected a URN, got {value!r}")
        return value

    def urns(self, parent: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> list[str]:
        return [self.urn(v, f"{_at(where, key)}[{i}]") for i, v in enumerate(self._list(parent, key, where, required))]

    def edge_targets(self, parent: Mapping[str, Any], key: str, where: str) -> list[str]:
        """``destinationUrn`` of every ``Edge`` in ``parent[key]``."""
        return [
            self.urn(e.get("destinationUrn"), f"{_at(where, key)}[{i}].destinationUrn")
            for i, e in enumerate(self.objs(parent, key, where))
        ]

    def column(self, urn: str, where: str) -> str:
        """The canonical form of a schemaField URN."""
        try:
            return canonical_column(urn)
        except ValueError as error:
            self.fail(where, str(error))

    def column_in(self, dataset: str, path: str, where: str) -> str:
        """The canonical column ``path`` (any spelling) of ``dataset``."""
        try:
            return column_urn(dataset, path)
        except ValueError as error:
            self.fail(where, str(error))

    def is_column(self, urn: str) -> bool:
        return is_column(urn)

    def _list(self, parent: Mapping[str, Any], key: str, where: str, required: bool) -> list[Any]:
        value = parent.get(key)
        if value is None:
            if required:
                self.fail(_at(where, key), "required array missing")
            return []
        if not isinstance(value, list):
            self.fail(_at(where, key), f"expected an array, got {type(value).__name__}")
        return value


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
