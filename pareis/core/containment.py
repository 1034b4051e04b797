"""Nested fields (DESIGN §2.1): a field path ``a.b`` is contained in ``a``.

A struct column and its nested fields are separate columns of one dataset (``service``, ``service.type``,
``service.provider.id`` once v2 paths are simplified, :mod:`pareis.core.fieldpath`). A poisoned nested field
poisons the structs enclosing it, and a poisoned struct poisons its nested fields. :class:`Containment` answers,
for a frontier of columns, which columns enclose them and which they contain, from the datasets' known schemas:

* with a known schema, only the columns it lists count (so a flat name that happens to contain a dot is not split
  into a struct that does not exist);
* with an unknown schema, the enclosing struct is spelled from the path (as siblings' columns are) and nothing is
  known to be nested.

Instances remember schemas, so one walk reads each dataset's schema once, and only its outline when it is flat
(:class:`~pareis.core.graph.Outline`: no column of it is nested or encloses one); such a schema is read whole only for
a dotted column that lineage names in it, whose enclosing struct it may hold.
"""

from __future__ import annotations

from collections.abc import Iterable

from pareis.core.fieldpath import column_urn, dotted_paths, index_parent, index_path
from pareis.core.graph import LineageView, Memo, columns_of

_NONE: frozenset[str] = frozenset()


class Containment:
    """Containment of the columns of the datasets ``view`` knows."""

    def __init__(self, view: LineageView) -> None:
        self._view = view
        self._schemas: dict[str, frozenset[str]] = {}
        """Each dataset's schema, empty when unknown or flat (then the dataset is in ``_flat``)."""
        self._flat: set[str] = set()
        self._nested: dict[str, dict[str, set[str]]] = {}

    def load(self, datasets: Iterable[str]) -> None:
        """Read the outlines of the schemas of ``datasets`` not read yet (the whole schema when not flat), in one
        batch."""
        todo = sorted({d for d in datasets if d not in self._schemas})
        if not todo:
            return
        for d, outline in self._view.outlines(todo).items():
            self._schemas[d] = outline.columns
            if outline.flat:
                self._flat.add(d)
                self._nested[d] = {}
            else:
                self._index(d)

    def _whole(self, datasets: Iterable[str]) -> None:
        """Read the whole schema of each of ``datasets`` (loaded) known only to be flat."""
        todo = sorted({d for d in datasets if d in self._flat})
        if todo:
            for d, cols in columns_of(self._view, todo).items():
                self._flat.discard(d)
                self._schemas[d] = frozenset(cols)
                self._index(d)

    def _index(self, d: str) -> None:
        cols = self._schemas[d]
        memo = self._view if isinstance(self._view, Memo) else None
        index: dict[str, set[str]] = {}
        for c, path in (memo.dotted_paths(d, cols) if memo is not None else dotted_paths(d, cols)).items():
            dot = path.find(".")
            while dot > 0:
                index.setdefault(path[:dot], set()).add(c)
                dot = path.find(".", dot + 1)
        self._nested[d] = index

    def enclosing(self, columns: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
        """For each column, every struct enclosing it and the rest of its path inside that struct: for
        ``a.b.c``, ``[(a.b, ".c"), (a, ".b.c")]`` (the structs that exist, see the module docstring)."""
        cols = sorted(set(columns))
        dotted = [c for c in cols if "." in index_path(c)]
        self.load(index_parent(c) for c in dotted)
        # A dotted column is in no flat schema, but a struct enclosing it may be: those schemas are read whole.
        self._whole(index_parent(c) for c in dotted)
        out: dict[str, list[tuple[str, str]]] = {c: [] for c in cols}
        for c in dotted:
            parent, path = index_parent(c), index_path(c)
            schema = self._schemas[parent]
            dot = path.rfind(".")
            while dot > 0:
                struct = column_urn(parent, path[:dot])
                if not schema or struct in schema:
                    out[c].append((struct, path[dot:]))
                dot = path.rfind(".", 0, dot)
        return out

    def nested(self, columns: Iterable[str]) -> dict[str, frozenset[str]]:
        """For each column, the known columns nested in it at any depth (none for a leaf or an unknown schema)."""
        parents = {c: index_parent(c) for c in columns}
        self.load(parents.values())
        out: dict[str, frozenset[str]] = {}
        for c, parent in parents.items():
            index = self._nested[parent]
            found = index.get(index_path(c)) if index else None  # a flat schema nests nothing
            out[c] = frozenset(found) if found else _NONE
        return out

    def inside(self, struct: str, rest: str) -> str | None:
        """The column at ``rest`` (``".b.c"``) inside ``struct``: the known one, or spelled when the schema of its
        dataset is unknown; None when the schema is known and lacks it. ``struct`` must have been asked about."""
        parent = index_parent(struct)
        self.load([parent])
        found = column_urn(parent, index_path(struct) + rest)
        schema = self._schemas[parent]
        if parent in self._flat:
            return None  # a dotted path: in no flat schema
        return found if not schema or found in schema else None
