"""The incident key of a dataset (DESIGN §1, §2.1): siblings are the same data, so they share one incident.

A dataset's sibling class is the closure of ``siblings`` in both directions; its incident key is the class's
canonical member (the smallest non-dbt member, else the smallest), so that the dbt node and its warehouse table
raise one incident, keyed (and partitioned) by the table.
"""

from __future__ import annotations

from collections.abc import Iterable

from pareis.core.graph import LineageView, siblings_of, union

DBT_PREFIX = "urn:li:dataset:(urn:li:dataPlatform:dbt,"


def sibling_classes(view: LineageView, datasets: Iterable[str]) -> dict[str, frozenset[str]]:
    """Each dataset's sibling class (itself included): the closure of ``siblings`` in both directions."""
    start = set(datasets)
    adjacency: dict[str, frozenset[str]] = {}
    frontier = set(start)
    while frontier:
        found = siblings_of(view, frontier)
        adjacency.update(found)
        frontier = union(found) - adjacency.keys()
    out: dict[str, frozenset[str]] = {}
    for dataset in sorted(start):
        if dataset in out:
            continue
        members = {dataset}
        todo = [dataset]
        while todo:
            for other in adjacency.get(todo.pop(), ()):
                if other not in members:
                    members.add(other)
                    todo.append(other)
        group = frozenset(members)
        for member in members:
            out[member] = group
    return {d: out[d] for d in start}


def canonical(members: Iterable[str]) -> str:
    """The incident key of a sibling class: the smallest non-dbt member, else the smallest member."""
    return min(members, key=lambda urn: (urn.startswith(DBT_PREFIX), urn))


def incident_keys(view: LineageView, datasets: Iterable[str]) -> dict[str, str]:
    """The incident key of each dataset (see the module docstring)."""
    return {d: canonical(members) for d, members in sibling_classes(view, datasets).items()}
