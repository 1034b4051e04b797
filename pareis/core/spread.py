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

from collections.abc import Callable, Collection, Iterable, Mapping

from pareis.core.containment import Containment
from pareis.core.fieldpath import index_parent
from pareis.core.graph import LineageView, sibling_columns

Step = Callable[[set[str]], Mapping[str, frozenset[str]]]


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
        self._nested: dict[str, frozenset[str]] = {}

    def run(self, start: Mapping[str, set[str]]) -> None:
        pending = {c: set(bad) for c, bad in start.items()}
        while pending:
            fresh = {c: parts - self.state.get(c, set()) for c, parts in pending.items()}
            new = {c: parts for c, parts in fresh.items() if parts}
            if not new:
                return
            for c, parts in new.items():
                self.state.setdefault(c, set()).update(parts)
            frontier = set(new)
            todo = frontier - self.hops.keys()
            if todo:
                self.hops.update(self.step(todo))
                self.twins.update(sibling_columns(self.view, todo))
                self.up.update(self.contained.enclosing(todo))
            self.contained.load({index_parent(c) for c in frontier})  # one batch for the containment reads below
            whole = {c for c in frontier if "" in new[c] and c not in self._nested}
            self._nested.update(self.contained.nested(whole))
            pending = {}
            for c in sorted(frontier):
                for bad in new[c]:
                    for n, part in self._successors(c, bad):
                        pending.setdefault(n, set()).add(part)
            if self.within is not None:
                pending = {n: parts for n, parts in pending.items() if n in self.within}

    def _successors(self, c: str, bad: str) -> Iterable[tuple[str, str]]:
        """The states (c, bad) leads to (the rules of the module docstring)."""
        for n in self.hops[c] | self.twins[c]:
            yield n, bad
        for struct, rest in self.up[c]:
            yield struct, rest + bad
        if bad:
            inner = self.contained.inside(c, bad)
            if inner is not None:
                yield inner, ""
        else:
            for n in self._nested[c]:
                yield n, ""

    def graph(self) -> dict[str, list[str]]:
        """Every state reached (:func:`state_key`) → the states it leads to (within the bounds)."""
        out: dict[str, list[str]] = {}
        within = self.within
        for c, parts in self.state.items():
            for bad in parts:
                out[state_key(c, bad)] = [
                    state_key(n, part) for n, part in self._successors(c, bad) if within is None or n in within
                ]
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
