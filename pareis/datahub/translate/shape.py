"""Typed reads of raw aspect JSON (Pegasus JSON as on the wire) that fail as Poison with the path at fault.

Missing optional keys and JSON ``null`` both read as absent (``pre_json_transform`` drops nulls, other writers
may not). Wrong types, missing required keys and unparsable URNs raise
:class:`~pareis.errors.DecodeError` with reason ``aspect-shape``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from pareis.contracts.lineage import Facts
from pareis.core.fieldpath import COLUMN_PREFIX, canonical_column, column_urn, is_column, split_column
from pareis.errors import DecodeError

REASON = "aspect-shape"

_PLAIN_PATH = r"[^%,()\u241f]+"
"""A field path that is its own canonical form when it does not start with ``[version=2.0]``: nothing to decode
(no ``%``), nothing to encode (no reserved character), not empty."""
_CANONICAL_COLUMN = re.compile(
    r"urn:li:schemaField:\((urn:li:[^:,()]+:\((?:[^()]++|\([^()]*+\))*+\)|urn:li:[^:,()]+:[^,()]+),"
    + _PLAIN_PATH
    + r"\)\Z"
)
"""A column URN already in canonical form whose parent (group 1) is a URN with a key nested at most two parentheses
deep, or without parentheses: exactly what :func:`pareis.core.fieldpath.split_column` would split off, so
:meth:`Shape.column_parts` may skip the general parser for it."""
_PLAIN = re.compile(_PLAIN_PATH + r"\Z")
_V2 = "[version=2.0]"


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
        values = self._list(parent, key, where, required)
        for i, v in enumerate(values):
            if not isinstance(v, Mapping):
                self.obj(v, f"{_at(where, key)}[{i}]")  # raises, naming the element
        return list(values)

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
        """The URNs in ``parent[key]``, as a new list."""
        values = self._list(parent, key, where, required)
        for i, v in enumerate(values):
            if not (v.__class__ is str and v.startswith("urn:li:")):
                self.urn(v, f"{_at(where, key)}[{i}]")  # raises unless a str subclass holding a URN
        return list(values)

    def edge_targets(self, parent: Mapping[str, Any], key: str, where: str) -> list[str]:
        """``destinationUrn`` of every ``Edge`` in ``parent[key]``."""
        return [
            self.urn(e.get("destinationUrn"), f"{_at(where, key)}[{i}].destinationUrn")
            for i, e in enumerate(self.objs(parent, key, where))
        ]

    def column(self, urn: str, where: str) -> str:
        """The canonical form of a schemaField URN."""
        return self.column_parts(urn, where)[0]

    def column_parts(self, urn: str, where: str) -> tuple[str, str]:
        """(canonical form, parent URN) of a schemaField URN: ``canonical_column`` and ``parent_of``.

        Fast path: a URN already canonical, with a plainly nested parent, is returned as is, without the general
        parser (nor its bounded memo, which a whole-index build would only churn).
        """
        parent = canonical_parent(urn)
        if parent is not None:
            return urn, parent
        try:
            return canonical_column(urn), split_column(urn)[0]
        except ValueError as error:
            self.fail(where, str(error))

    def column_in(self, dataset: str, path: str, where: str) -> str:
        """The canonical column ``path`` (any spelling) of ``dataset``."""
        if dataset.startswith("urn:li:") and is_plain_path(path):
            return f"{COLUMN_PREFIX}{dataset},{path})"
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


def canonical_parent(urn: str) -> str | None:
    """The parent of ``urn`` if it is a column URN already canonical with a plainly nested parent (see
    :data:`_CANONICAL_COLUMN`); None when it needs the general parser (which may find it canonical all the same)."""
    m = _CANONICAL_COLUMN.match(urn)
    if m is None or urn.startswith(_V2, m.end(1) + 1):
        return None
    return m.group(1)


def is_plain_path(path: str) -> bool:
    """Whether ``path`` is its own normal, encoded form (``column_urn(parent, path)`` ends in ``,path)``)."""
    return _PLAIN.match(path) is not None and not path.startswith(_V2)


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


Handler = Callable[[Shape, str, Mapping[str, Any]], Facts]
"""The translation of one aspect: (the reader, the entity's URN, the aspect's JSON) → the facts it states."""
