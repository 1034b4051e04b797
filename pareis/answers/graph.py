"""The blast radius as a graph (DESIGN §2.2): the nodes of a :class:`~pareis.core.impact.BlastRadius` and the
lineage edges between them, laid out in layers, for Mission Control's interactive view.

Nodes: every affected column (``role`` ``failing`` for the failing columns F, ``origin`` for the origins O,
``affected`` for the rest of A), every poisoned feature and every affected model (``severity`` its own). Edges are
the index's own relations restricted to those nodes: column → column (column lineage), column → feature (a feature's
source column, or the column of its source dataset named like the feature — the same-name convention of §2.1) and
feature → model. Layers: a column's depth is its longest column-edge distance from an origin; features sit one layer
past the deepest column, models one past the features; within a layer nodes are sorted by id.

Past ``collapse_over`` columns the graph is collapsed by dataset: one node per dataset standing for its affected
columns (``count``; ``role`` the strongest of its columns, ``layer`` the shallowest), column edges mapped to dataset
edges, self-loops dropped; past ``collapse_over`` datasets as well, by schema (platform and the dataset name without
its last segment). So a 10,000-column blast stays readable, small to send and quick to draw. The JSON (nodes and
edges sorted) is the contract.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pareis.core.graph import LineageView
    from pareis.core.impact import BlastRadius

COLLAPSE_OVER = 150
"""Default: past this many affected columns, columns are drawn as one node per dataset."""

_ROLE_RANK = {"failing": 0, "origin": 1, "affected": 2}
_DATASET = "urn:li:dataset:(urn:li:dataPlatform:"


@dataclass(frozen=True)
class Node:
    id: str
    kind: str  # column | dataset | schema | feature | model
    label: str
    role: str  # failing | origin | affected | feature | model
    layer: int
    severity: str | None = None  # models: their severity
    count: int = 1  # dataset and schema nodes: how many affected columns they stand for
    dataset: str | None = None  # columns: their dataset

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "dataset": self.dataset,
            "id": self.id,
            "kind": self.kind,
            "label": self.label,
            "layer": self.layer,
            "role": self.role,
            "severity": self.severity,
        }


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    rel: str  # column | sibling | feature_source | feature_model

    def to_json(self) -> dict[str, Any]:
        return {"rel": self.rel, "source": self.source, "target": self.target}


@dataclass(frozen=True)
class BlastGraph:
    """The drawable blast radius; ``level``: what a node of the data stands for (column, dataset or schema)."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    level: str
    columns: int

    @property
    def collapsed(self) -> bool:
        return self.level != "column"

    def to_json(self) -> dict[str, Any]:
        return {
            "collapsed": self.collapsed,
            "level": self.level,
            "columns": self.columns,
            "edges": [e.to_json() for e in self.edges],
            "nodes": [n.to_json() for n in self.nodes],
        }


def blast_graph(view: LineageView, radius: BlastRadius, *, collapse_over: int = COLLAPSE_OVER) -> BlastGraph:
    """The graph of ``radius`` over the lineage ``view`` it was computed from (see the module docstring)."""
    from pareis.core.fieldpath import parent_of, path_of
    from pareis.core.graph import Query, Rel, siblings_of

    columns = set(radius.columns) | set(radius.failing_columns) | set(radius.origin_columns)
    features = set(radius.features)
    models = {m.urn: m for m in radius.models}
    col_fwd, sources, feat_models = view.lookup(
        [
            Query(Rel.COLUMN, sorted(columns)),
            Query(Rel.FEATURE_SOURCE, sorted(features), True),
            Query(Rel.FEATURE_MODEL, sorted(features)),
        ]
    )
    column_edges = {(c, t) for c in columns for t in col_fwd.get(c, ()) if t in columns and t != c}
    by_dataset: dict[str, list[str]] = {}
    for c in sorted(columns):
        by_dataset.setdefault(parent_of(c), []).append(c)
    feature_edges: set[tuple[str, str]] = set()
    for f in sorted(features):
        for source in sources.get(f, ()):
            if source in columns:
                feature_edges.add((source, f))
            elif source in by_dataset:  # a dataset source: its column named like the feature (§2.1)
                name = _feature_name(f).casefold()
                feature_edges.update((c, f) for c in by_dataset[source] if path_of(c).casefold() == name)
    model_edges = {(f, m) for f in features for m in feat_models.get(f, ()) if m in models}
    # Siblings are the same data (§2.1): link a column to the same-name column of a sibling dataset.
    sibling_edges: set[tuple[str, str]] = set()
    for dataset, others in siblings_of(view, by_dataset).items():
        for other in others & by_dataset.keys():
            names = {path_of(c): c for c in by_dataset[other]}
            sibling_edges |= {
                (c, names[path_of(c)]) for c in by_dataset[dataset] if path_of(c) in names and c < names[path_of(c)]
            }

    depth = _depths(columns, column_edges)
    top = max(depth.values(), default=-1)
    roles = {c: _role(c, radius) for c in columns}
    level = "column" if len(columns) <= collapse_over else "dataset" if len(by_dataset) <= collapse_over else "schema"
    nodes: list[Node] = []
    edges: set[Edge] = set()
    if level == "column":
        for c in sorted(columns):
            label = f"{_dataset_name(parent_of(c))}.{path_of(c)}"
            nodes.append(Node(c, "column", label, roles[c], depth[c], dataset=parent_of(c)))
        edges |= {Edge(a, b, "column") for a, b in column_edges}
        edges |= {Edge(a, b, "sibling") for a, b in sibling_edges}
        edges |= {Edge(c, f, "feature_source") for c, f in feature_edges}
    else:
        # One node per dataset, or past the threshold of datasets too, per schema (the dataset name's prefix).
        group_of = {c: parent_of(c) if level == "dataset" else _schema_of(parent_of(c)) for c in columns}
        members: dict[str, list[str]] = {}
        for c in sorted(columns):
            members.setdefault(group_of[c], []).append(c)
        for group, cols in members.items():
            role = min((roles[c] for c in cols), key=_ROLE_RANK.__getitem__)
            layer = min(depth[c] for c in cols)
            label = _dataset_name(group) if level == "dataset" else _schema_name(group)
            if level == "schema":
                label += f" · {len({parent_of(c) for c in cols}):,} datasets"
            nodes.append(Node(group, level, label, role, layer, count=len(cols)))
        edges |= {Edge(group_of[a], group_of[b], "column") for a, b in column_edges if group_of[a] != group_of[b]}
        edges |= {Edge(group_of[c], f, "feature_source") for c, f in feature_edges}
    nodes += [Node(f, "feature", _feature_name(f), "feature", top + 1) for f in sorted(features)]
    nodes += [
        Node(urn, "model", _tail(urn), "model", top + 2, severity=m.severity.value) for urn, m in sorted(models.items())
    ]
    edges |= {Edge(f, m, "feature_model") for f, m in model_edges}
    return BlastGraph(
        tuple(sorted(nodes, key=lambda n: (n.layer, n.id))),
        tuple(sorted(edges, key=lambda e: (e.source, e.target, e.rel))),
        level,
        len(columns),
    )


def _role(column: str, radius: BlastRadius) -> str:
    if column in radius.failing_columns:
        return "failing"
    if column in radius.origin_columns:
        return "origin"
    return "affected"


def _depths(columns: Iterable[str], edges: set[tuple[str, str]]) -> dict[str, int]:
    """Longest distance from a column without an upstream in ``edges``; cycles are cut at the first revisit."""
    ups: dict[str, set[str]] = {}
    for a, b in edges:
        ups.setdefault(b, set()).add(a)
    depth: dict[str, int] = {}
    for start in sorted(columns):
        if start in depth:
            continue
        # Iterative DFS: a node's depth is 1 + the deepest of its upstreams; on the path back edges count 0.
        stack: list[tuple[str, bool]] = [(start, False)]
        on_path: set[str] = set()
        while stack:
            node, done = stack.pop()
            if done:
                on_path.discard(node)
                depth[node] = max((depth.get(u, 0) + 1 for u in ups.get(node, ()) if u not in on_path), default=0)
                continue
            if node in depth or node in on_path:
                continue
            on_path.add(node)
            stack.append((node, True))
            stack.extend((u, False) for u in sorted(ups.get(node, ())) if u not in depth and u not in on_path)
    return depth


def _tail(urn: str) -> str:
    """The readable tail of a URN: the name in ``(platform,name,ENV)``, else what follows the last colon."""
    if urn.endswith(")") and "," in urn:
        parts = urn[urn.index("(") + 1 : -1].split(",")
        return parts[1] if len(parts) > 2 else parts[-1]
    return urn.rsplit(":", 1)[-1]


def _dataset_name(urn: str) -> str:
    """``urn:li:dataset:(urn:li:dataPlatform:dbt,retail.analytics.x,PROD)`` → ``x (dbt)``."""
    if urn.startswith(_DATASET) and urn.count(",") >= 2:
        platform, name = urn[len(_DATASET) : -1].split(",")[:2]
        return f"{name.rsplit('.', 1)[-1]} ({platform})"
    return _tail(urn)


def _schema_of(dataset: str) -> str:
    """The schema a dataset belongs to, as a pseudo-URN: ``(platform, name without its last segment)``."""
    if dataset.startswith(_DATASET) and dataset.count(",") >= 2:
        platform, name = dataset[len(_DATASET) : -1].split(",")[:2]
        return f"schema:{platform}:{name.rsplit('.', 1)[0] if '.' in name else ''}"
    return "schema::"


def _schema_name(schema: str) -> str:
    """``schema:postgres:bench.schema_003`` → ``bench.schema_003 (postgres)``."""
    _, platform, name = schema.split(":", 2)
    return f"{name or '(no schema)'} ({platform})"


def _feature_name(urn: str) -> str:
    """``urn:li:mlFeature:(namespace,name)`` → ``name``."""
    if urn.endswith(")") and "," in urn:
        return urn[urn.index("(") + 1 : -1].split(",")[-1]
    return urn.rsplit(":", 1)[-1]


def counts(graph: BlastGraph) -> Mapping[str, int]:
    """How many nodes of each kind (for headers and tests)."""
    out: dict[str, int] = {}
    for n in graph.nodes:
        out[n.kind] = out.get(n.kind, 0) + 1
    return dict(sorted(out.items()))
