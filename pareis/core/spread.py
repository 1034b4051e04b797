"""How bad data spreads down (or up) the column graph (DESIGN §2.1, §2.2): along lineage, sibling twins and
containment, remembering how much of each column is bad.

:class:`Spread` is the walk of the blast radius (:mod:`pareis.core.blast`, both its walks) and of the exposure of
columns (:mod:`pareis.core.exposure`, :mod:`pareis.core.exposure_index`: what a wholly bad column reaches). Its
states are pairs (column, part): part ``""`` when all of the column is bad, ``".x.y"`` when only its nested field
``x.y`` is. The rules, from a state (c, b):

* lineage (``step``) and sibling twins: the same part of each neighbour, (n, b);
* a struct ``s`` enclosing ``c`` at ``rest`` (``c`` = ``s`` + ``rest``): (s, rest + b) — a bad nested field
  makes its structs partly bad;
* a partly bad ``c`` (b not ``""``): the field at b inside it, wholly, when it exists (:meth:`Containment.inside`);
* a wholly bad ``c``: every column nested in it, wholly.

So a failing ``service.type`` reaches a view's ``service`` copied from its table's ``service`` (and the view's
``service.type``), but not the table's ``service.provider``. :meth:`Spread.graph` gives the states as a graph (each
state's successors), for the sums of :func:`pareis.core.closures.closed_union`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

from pareis.core.containment import Containment
from pareis.core.fieldpath import index_parent
from pareis.core.graph import LineageView, sibling_columns

Step = Callable[[set[str]], Mapping[str, frozenset[str]]]


_EMPTY: frozenset[str] = frozenset()
_WHOLE = {""}


def state_key(column: str, part: str) -> str:
    """The node of state (``column``, ``part``) in :meth:`Spread.graph`: the column itself for the whole of it."""
    return column if not part else f"{column}\x00{part}"


class Spread:
    """A walk of columns along lineage (``step``), siblings and containment (see the module docstring):
    ``state[c]`` holds the parts of ``c`` found bad. ``within``, when given, bounds the walk to those columns."""

    def __init__(
        self, view: LineageView, contained: Containment, step: Step, *, within: Collection[str] | None = None
    ) -> None:
        self.view = view
        self.contained = contained
        self.step = step
        self.within = within
        self.state: dict[str, set[str]] = {}
        self.hops: dict[str, frozenset[str]] = {}
        self.twins: dict[str, frozenset[str]] = {}
        self.up: dict[str, list[tuple[str, str]]] = {}
        self._parents: dict[str, str] = {}
        self._next: dict[str, frozenset[str]] = {}
        """Column → its lineage neighbours and twins (``hops`` and ``twins`` together)."""
        self._nested: dict[str, frozenset[str]] = {}
        self._whole: set[str] = set()
        """The columns wholly bad (``""`` in their state)."""

    def run(self, start: Mapping[str, set[str]]) -> None:
        """Spread from ``start`` (column → its bad parts), adding to :attr:`state`."""
        # Wholly bad columns travel as a plain set (most of any walk: a flat schema knows no other part), partly bad
        # ones with their parts.
        whole = {c for c, parts in start.items() if "" in parts}
        partial = {c: {p for p in parts if p} for c, parts in start.items()}
        partial = {c: parts for c, parts in partial.items() if parts}
        while whole or partial:
            if self.within is not None:
                whole.intersection_update(self.within)
                partial = {c: parts for c, parts in partial.items() if c in self.within}
            new_whole = whole - self._whole
            new_parts = {}
            for c, parts in partial.items():
                fresh = parts - self.state.get(c, _EMPTY)
                if fresh:
                    new_parts[c] = fresh
            if not new_whole and not new_parts:
                return
            self._whole |= new_whole
            for c in new_whole:
                self.state.setdefault(c, set()).add("")
            for c, parts in new_parts.items():
                self.state.setdefault(c, set()).update(parts)
            frontier = new_whole.union(new_parts)
            todo = frontier - self.hops.keys()
            if todo:
                self.hops.update(self.step(todo))
                self.twins.update(sibling_columns(self.view, todo))
                self.up.update(self.contained.enclosing(todo))
                for c in todo:
                    self._next[c] = self.hops[c] | self.twins[c]
            self.contained.load({self._parent(c) for c in frontier})  # one batch for the containment reads below
            self._nested.update(self.contained.nested(new_whole - self._nested.keys()))
            whole, partial = set(), {}
            for c in new_whole:
                whole |= self._next[c]
                if self.up[c] or self._nested[c]:
                    for n, part in self._contained(c, ""):
                        self._add(whole, partial, n, part)
            for c, parts in new_parts.items():
                for bad in parts:
                    for n in self._next[c]:
                        partial.setdefault(n, set()).add(bad)
                    for n, part in self._contained(c, bad):
                        self._add(whole, partial, n, part)

    @staticmethod
    def _add(whole: set[str], partial: dict[str, set[str]], column: str, part: str) -> None:
        if part:
            partial.setdefault(column, set()).add(part)
        else:
            whole.add(column)

    def _parent(self, c: str) -> str:
        found = self._parents.get(c)
        if found is None:
            found = self._parents[c] = index_parent(c)
        return found

    @property
    def parents(self) -> Mapping[str, str]:
        """Every column reached → its dataset."""
        return self._parents

    def _contained(self, c: str, bad: str) -> Iterator[tuple[str, str]]:
        """The states (c, bad) leads to through containment (the rules of the module docstring; lineage and twins
        lead to the same part of each neighbour)."""
        for struct, rest in self.up[c]:
            yield struct, rest + bad
        if bad:
            inner = self.contained.inside(c, bad)
            if inner is not None:
                yield inner, ""
        else:
            for n in self._nested[c]:
                yield n, ""

    def graph(self) -> dict[str, frozenset[str]]:
        """Every state reached (:func:`state_key`) → the states it leads to (within the bounds)."""
        out: dict[str, frozenset[str]] = {}
        within = self.within
        for c, parts in self.state.items():
            hops = self._next[c]
            if within is not None:
                hops = hops.intersection(within)
            if parts == _WHOLE and not self.up[c] and not self._nested[c]:
                out[c] = hops  # the usual column: no containment
                continue
            for bad in parts:
                contained = [state_key(n, part) for n, part in self._contained(c, bad) if within is None or n in within]
                if bad:
                    out[state_key(c, bad)] = frozenset(state_key(n, bad) for n in hops).union(contained)
                else:
                    out[c] = hops.union(contained) if contained else hops
        return out

    def on_states(self, values: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
        """``values`` (per column) on every state of its column: what :func:`~pareis.core.closures.closed_union`
        sums over :meth:`graph`."""
        return {state_key(c, part): values[c] for c, parts in self.state.items() if values.get(c) for part in parts}

    def origin_parents(self, columns: Iterable[str]) -> dict[str, frozenset[str]]:
        """Lineage parents of each column for re-rooting, a struct enclosing it standing in for a nested field
        that has none of its own (its data came with the struct)."""
        out: dict[str, frozenset[str]] = {}
        for c in columns:
            parents = self.hops[c]
            if not parents:
                parents = frozenset(s for s, _ in self.up.get(c, ()) if self.hops.get(s))
            out[c] = parents
        return out
