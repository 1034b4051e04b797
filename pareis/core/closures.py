"""Reachability over a graph held in memory (node → successors): what one node reaches, and what every node
reaches summed at once. The walks over the lineage view (:mod:`pareis.core.graph`, :mod:`pareis.core.upstream`,
:mod:`pareis.core.exposure`) collect such a graph a frontier at a time, then answer from it with these."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import TypeVar

N = TypeVar("N", bound=Hashable)


def reach(node: N, step: Mapping[N, Iterable[N]], memo: dict[N, frozenset[N]]) -> frozenset[N]:
    """``node`` and everything reachable from it along ``step`` (node → successors), remembered in ``memo`` by
    start node; iterative, cycle-safe."""
    hit = memo.get(node)
    if hit is not None:
        return hit
    seen = {node}
    todo = [node]
    while todo:
        for n in step.get(todo.pop(), ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    out = frozenset(seen)
    memo[node] = out
    return out


def closed_union(step: Mapping[str, Iterable[str]], values: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """For every node of ``step`` (a graph: node → successors), the union of ``values`` over the node and everything
    reachable from it. Each strongly connected component is computed once, successors first (Tarjan's algorithm,
    iterative), so the cost is linear in the graph plus the unions, whatever the overlap of the reachable sets;
    cycle-safe. Nodes whose union is empty are left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: dict[str, frozenset[str]] = {}
    empty: frozenset[str] = frozenset()
    counter = 0
    # Traversal order does not change the result (unions commute), so nothing is sorted here.
    for root in step:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(step.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(step.get(nxt, ()))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    members.append(m)
                    if m == node:
                        break
                acc: set[str] = set()
                inside = set(members)
                for m in members:
                    acc |= values.get(m, empty)
                    for nxt in step.get(m, ()):
                        if nxt not in inside:
                            acc |= out.get(nxt, empty)
                if acc:
                    frozen = frozenset(acc)
                    for m in members:
                        out[m] = frozen
    return out
