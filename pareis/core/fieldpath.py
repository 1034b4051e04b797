"""Column URNs and field paths: one canonical spelling, so that columns from every producer join.

A column is ``urn:li:schemaField:(<parent urn>,<field path>)``. Producers spell the same column differently:
v2 typed paths (``[version=2.0].[type=Order].[type=string].id``) or simple ones (``id``); reserved characters
percent-encoded (``a%2Cb``, as DataHub's builders do) or not. The **canonical form** used everywhere in Pareis:

* the field path is decoded (only ``%2C %28 %29 %E2%90%9F``, any hex case — the sequences DataHub encodes),
* then reduced to its simple form (every ``[…]`` token of a v2 path dropped, exactly as
  ``datahub.utilities.urns.field_paths.get_simple_field_path_from_v2_field_path`` does),
* then ``,`` ``(`` ``)`` ``␟`` are re-encoded, so the result equals ``make_schema_field_urn(parent, simple_path)``.

The parent URN is kept as given. Consequence of DataHub's scheme (``%`` itself is never encoded): a field whose
name literally contains ``%2C`` is indistinguishable from one containing ``,``.

Pure functions; errors are :class:`ValueError` with the offending URN.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable
from itertools import repeat

COLUMN_PREFIX = "urn:li:schemaField:("
_ENCODE = {",": "%2C", "(": "%28", ")": "%29", "␟": "%E2%90%9F"}
_DECODE = re.compile(r"%(?:2C|28|29|E2%90%9F)", re.IGNORECASE)
_DECODED = {"%2C": ",", "%28": "(", "%29": ")", "%E2%90%9F": "␟"}


def simple_field_path(path: str) -> str:
    """The simple dotted form of a v1 or v2 field path (v1 paths are returned unchanged)."""
    if not path.startswith("[version=2.0]"):
        return path
    return ".".join(t for t in path.split(".") if not (t.startswith("[") or t.endswith("]")))


def decode_field_path(path: str) -> str:
    """Undo DataHub's percent-encoding of the reserved URN characters (and nothing else)."""
    if "%" not in path:
        return path
    return _DECODE.sub(lambda m: _DECODED[m.group(0).upper()], path)


def encode_field_path(path: str) -> str:
    """Percent-encode the reserved URN characters, as ``UrnEncoder.encode_string`` does."""
    if not any(c in path for c in _ENCODE):
        return path
    return "".join(_ENCODE.get(c, c) for c in path)


def normal_field_path(path: str) -> str:
    """A field path as found anywhere (schema, URN, assertion) → decoded simple form; may be empty."""
    return simple_field_path(decode_field_path(path))


def column_urn(parent: str, field_path: str) -> str:
    """The canonical column URN of ``field_path`` (any spelling) in ``parent``.

    Raises :class:`ValueError` if the parent is not a URN or the normalised path is empty.
    """
    if not parent.startswith("urn:li:"):
        raise ValueError(f"column parent is not a URN: {parent!r}")
    simple = normal_field_path(field_path)
    if not simple:
        raise ValueError(f"empty field path {field_path!r} in {parent}")
    return f"{COLUMN_PREFIX}{parent},{encode_field_path(simple)})"


def is_column(urn: str) -> bool:
    return urn.startswith(COLUMN_PREFIX)


def entity_type(urn: str) -> str:
    """``urn:li:<type>:…`` → ``<type>``; raises :class:`ValueError` for anything else."""
    parts = urn.split(":", 3)
    if len(parts) < 4 or parts[0] != "urn" or parts[1] != "li" or not parts[2]:
        raise ValueError(f"not a URN: {urn!r}")
    return parts[2]


def _urn_end(text: str, start: int) -> int:
    """Index just past the URN beginning at ``text[start]`` (its key may be a parenthesised tuple)."""
    head = text.find(":", start + len("urn:li:"))  # the colon after the entity type
    if head < 0:
        raise ValueError(f"not a URN: {text[start:]!r}")
    i = head + 1
    if i < len(text) and text[i] == "(":
        # From parenthesis to parenthesis (str.find, not a loop over every character: every walk parses columns).
        depth, j = 0, i
        while True:
            close = text.find(")", j)
            if close < 0:
                raise ValueError(f"unbalanced parentheses in URN: {text[start:]!r}")
            opening = text.find("(", j, close)
            if opening >= 0:
                depth += 1
                j = opening + 1
                continue
            depth -= 1
            j = close + 1
            if depth == 0:
                return j
    comma = text.find(",", i)
    return len(text) if comma < 0 else comma


@functools.lru_cache(maxsize=1 << 16)
def split_column(urn: str) -> tuple[str, str]:
    """``urn:li:schemaField:(parent,path)`` → (parent, normalised simple path). Raises :class:`ValueError`.

    Memoised: walks parse the same columns over and over.
    """
    if not (urn.startswith(COLUMN_PREFIX) and urn.endswith(")")):
        raise ValueError(f"not a schemaField URN: {urn!r}")
    inner = urn[len(COLUMN_PREFIX) : -1]
    if not inner.startswith("urn:li:"):
        raise ValueError(f"schemaField URN without a parent URN: {urn!r}")
    end = _urn_end(inner, 0)
    if end >= len(inner) or inner[end] != ",":
        raise ValueError(f"schemaField URN without a field path: {urn!r}")
    path = normal_field_path(inner[end + 1 :])
    if not path:
        raise ValueError(f"schemaField URN with an empty field path: {urn!r}")
    return inner[:end], path


def own_head(parent: str) -> str | None:
    """``urn:li:schemaField:(<parent>,`` when :func:`split_column` reads ``parent`` whole as the parent of a column
    spelled so, else None. What decides it is ``parent`` alone: :func:`_urn_end` stops at the comma after it (or
    at the parenthesis closing its key) before it reads the path."""
    if not parent.startswith("urn:li:"):
        return None
    try:
        whole = _urn_end(parent + ",", 0) == len(parent)
    except ValueError:
        return None
    return f"{COLUMN_PREFIX}{parent}," if whole else None


def split_schema(parent: str, columns: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """``parent``'s ``has_column`` neighbours read without parsing: (the columns not seen to be its own, the paths
    of its own whose path has a dot).

    Its own: spelled ``<own_head(parent)><path>)`` with ``path`` non-empty, already in normal form (no ``%``, not
    a v2 path); for those ``split_column(column) == (parent, path)``. A large blast reads 200,000+ schema columns,
    more than :func:`split_column`'s cache holds; this reads each with a few string comparisons instead. The others
    are left to :func:`split_column` (which may refuse them)."""
    head = own_head(parent)
    if head is None:
        return list(columns), {}
    if not isinstance(columns, Collection):
        columns = list(columns)
    if (
        all(map(str.startswith, columns, repeat(head)))
        and all(map(str.endswith, columns, repeat(")")))
        and head + ")" not in columns
    ):
        # The usual schema, checked a whole string at a time: every column is <head><path>) with a path; when
        # neither "%" nor a v2 path occurs anywhere and there are no more dots than the heads hold, no path has
        # a dot and every column is the parent's own.
        joined = "".join(columns)
        if "%" not in joined and _V2 not in joined and joined.count(".") == head.count(".") * len(columns):
            return [], {}
    cut, shortest = len(head), len(head) + 2
    foreign: list[str] = []
    dotted: dict[str, str] = {}
    for c in columns:
        if (
            c.startswith(head)
            and c.endswith(")")
            and len(c) >= shortest
            and c.find("%", cut) < 0
            and not c.startswith(_V2, cut)
        ):
            end = len(c) - 1
            if c.find(".", cut, end) >= 0:
                dotted[c] = c[cut:end]
        else:
            foreign.append(c)
    return foreign, dotted


def is_flat(parent: str, columns: Collection[str]) -> bool:
    """Whether ``columns`` (``parent``'s ``has_column`` neighbours) are a *flat* schema: at least one column, all of
    them read as ``parent``'s own and none with a dotted path (:func:`split_schema` finds none foreign and none
    dotted). Such paths are already normal and name no nested field, so nothing in the schema encloses or is nested
    in anything: containment needs only to know that it is there (:class:`~pareis.core.graph.Outline`)."""
    return bool(columns) and split_schema(parent, columns) == ([], {})


def dotted_paths(parent: str, columns: Iterable[str]) -> dict[str, str]:
    """``{column: path_of(column)}`` for the ``columns`` (``parent``'s ``has_column`` neighbours) whose path has a
    dot, its own read without parsing (:func:`split_schema`). Raises :class:`ValueError` for a column
    :func:`path_of` refuses."""
    foreign, dotted = split_schema(parent, columns)
    return with_foreign(dotted, foreign)


def with_foreign(dotted: dict[str, str], foreign: Iterable[str]) -> dict[str, str]:
    """``dotted`` and the dotted paths of the ``foreign`` columns (parsed)."""
    out = dict(dotted)
    for c in foreign:
        path = split_column(c)[1]
        if "." in path:
            out[c] = path
    return out


_V2 = "[version=2.0]"


def canonical_column(urn: str) -> str:
    """The canonical spelling of a column URN. Raises :class:`ValueError` if it is not one."""
    parent, path = split_column(urn)
    return f"{COLUMN_PREFIX}{parent},{encode_field_path(path)})"


def parent_of(column: str) -> str:
    """The dataset (parent) of a column URN."""
    return split_column(column)[0]


def path_of(column: str) -> str:
    """The decoded simple field path of a column URN."""
    return split_column(column)[1]


def _column_parts(column: str) -> tuple[str, str]:
    """(dataset, decoded path) of a column URN, as :func:`split_column` says, split at the last comma for the
    canonical URNs the index holds (a canonical path has no comma: it is percent-encoded), which is much cheaper
    than parsing the parent URN; any other spelling goes to the general parser."""
    if column.startswith(COLUMN_PREFIX) and column.endswith(")"):
        comma = column.rfind(",")
        if comma > len(COLUMN_PREFIX) and column.startswith("urn:li:", len(COLUMN_PREFIX)):
            path = column[comma + 1 : -1]
            if path and not path.startswith("[") and "(" not in path:
                return column[len(COLUMN_PREFIX) : comma], decode_field_path(path) if "%" in path else path
    return split_column(column)


column_parts = functools.lru_cache(maxsize=1 << 18)(_column_parts)
"""The cached :func:`_column_parts`: what the walks over the index parse columns with (a walk meets each column
several times)."""


def index_parent(column: str) -> str:
    """The dataset of a column URN as the index spells it (:func:`column_parts`)."""
    return column_parts(column)[0]


def index_path(column: str) -> str:
    """The decoded path of a column URN as the index spells it (:func:`column_parts`)."""
    return column_parts(column)[1]


def path_in(column: str, parent: str) -> str:
    """:func:`index_path` of ``column`` when the caller knows its :func:`index_parent` is ``parent`` (a schema's
    column, a column built from its dataset): a canonical path is sliced off the URN without parsing or caching
    it; any other spelling goes through :func:`index_path`."""
    path = column[len(COLUMN_PREFIX) + len(parent) + 1 : -1]
    if path and not path.startswith("[") and "(" not in path and "," not in path:
        return decode_field_path(path) if "%" in path else path
    return index_path(column)


def split_columns(columns: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``{column: column_parts(column)}`` for ``columns``, not through its cache: a survey's hundreds of thousands
    of distinct columns would only churn it. Raises as :func:`column_parts` does."""
    return {c: _column_parts(c) for c in columns}


def parents_of(columns: Iterable[str]) -> dict[str, str]:
    """``{column: column_parts(column)[0]}`` for ``columns`` (:func:`split_columns`)."""
    return {c: parts[0] for c, parts in split_columns(columns).items()}


def key_parts(urn: str) -> tuple[str, ...]:
    """The top-level comma-separated parts of a tuple key: ``urn:li:mlFeature:(ns,name)`` → ``("ns", "name")``.

    Nested URNs inside the key stay whole. A non-tuple key is one part.
    """
    entity_type(urn)
    key = urn.split(":", 3)[3]
    if not (key.startswith("(") and key.endswith(")")):
        return (key,)
    parts: list[str] = []
    depth, start = 0, 1
    for i, c in enumerate(key[1:-1], start=1):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(key[start:i])
            start = i + 1
    parts.append(key[start:-1])
    return tuple(parts)


def feature_name(feature: str) -> str:
    """The name of an ML feature: the last part of ``urn:li:mlFeature:(namespace,name)``, decoded."""
    return decode_field_path(key_parts(feature)[-1])
