"""Summary statistics of a KG: counts by type, degree distributions, components, density.

Everything is computed from ``graph_arrays()`` with ``np.bincount`` and ``scipy.sparse.csgraph``,
so it stays fast on graphs of millions of edges.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.sparse.csgraph import connected_components

from .arrays import GraphArrays
from .base import GraphStore
from .validation import load_arrays, orphan_mask


@dataclass(frozen=True)
class DegreeSummary:
    """Distribution of one degree (in, out or total) over all nodes; all zeros for an empty KG."""

    min: int
    max: int
    mean: float
    median: float
    p90: float
    p99: float

    @classmethod
    def of(cls, degrees: np.ndarray) -> DegreeSummary:
        if degrees.size == 0:
            return cls(0, 0, 0.0, 0.0, 0.0, 0.0)
        median, p90, p99 = np.percentile(degrees, [50, 90, 99])
        return cls(min=int(degrees.min()), max=int(degrees.max()), mean=float(degrees.mean()),
                   median=float(median), p90=float(p90), p99=float(p99))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class KGStats:
    """What ``kgos kg stats`` shows.

    ``nodes`` and ``edges`` are the plain totals stored in the KG. Degrees count every edge at both
    ends (a self loop adds one to the node's in- and out-degree; parallel edges each count).
    ``orphans`` are nodes with no edge to or from another node (validation rule 6); ``components``
    are weakly connected components (an orphan is one on its own); ``density`` is
    edges / (nodes * (nodes - 1)), the directed-graph definition. Edges with a missing end (rule 3)
    are in ``edges`` but nowhere else.
    """

    db_id: str
    nodes: int
    edges: int
    node_types: dict[str, int]
    edge_types: dict[str, int]
    in_degree: DegreeSummary
    out_degree: DegreeSummary
    total_degree: DegreeSummary
    orphans: int
    self_loops: int
    components: int
    largest_component: int
    density: float

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for key in ("in_degree", "out_degree", "total_degree"):
            d[key] = d[key].to_dict()
        d["node_types"], d["edge_types"] = dict(self.node_types), dict(self.edge_types)
        return d


def kg_stats(store: GraphStore) -> KGStats:
    """Compute ``KGStats`` for ``store``."""
    with store.read_transaction():  # the arrays and the edge count of one state of the KG
        a = load_arrays(store)
        edges = store.edge_count()  # every stored edge, even one rule 3 would flag
    in_deg = np.bincount(a.dst, minlength=a.n_nodes)
    out_deg = np.bincount(a.src, minlength=a.n_nodes)
    n_components, largest = weak_components(a)
    return KGStats(
        db_id=store.db_id, nodes=a.n_nodes, edges=edges,
        node_types=type_counts(a.node_types, a.node_type_names),
        edge_types=type_counts(a.type_code, a.types),
        in_degree=DegreeSummary.of(in_deg), out_degree=DegreeSummary.of(out_deg),
        total_degree=DegreeSummary.of(in_deg + out_deg),
        orphans=int(orphan_mask(a).sum()), self_loops=int((a.src == a.dst).sum()),
        components=n_components, largest_component=largest, density=density(a.n_nodes, a.n_edges))


def type_counts(codes: np.ndarray, names: tuple[str, ...]) -> dict[str, int]:
    """``{type name: count}``, most frequent first (ties by name, so output is stable)."""
    counts = np.bincount(codes, minlength=len(names))
    order = sorted(range(len(names)), key=lambda i: (-counts[i], names[i]))
    return {names[i]: int(counts[i]) for i in order if counts[i]}


def weak_components(a: GraphArrays) -> tuple[int, int]:
    """(number of weakly connected components, size of the largest); (0, 0) for no nodes."""
    if a.n_nodes == 0:
        return 0, 0
    n, labels = connected_components(a.adjacency(), directed=True, connection="weak")
    return int(n), int(np.bincount(labels).max())


def density(nodes: int, edges: int) -> float:
    """Directed density: edges over the n * (n - 1) possible ordered pairs; 0 below two nodes."""
    return edges / (nodes * (nodes - 1)) if nodes > 1 else 0.0


__all__ = ["DegreeSummary", "KGStats", "density", "kg_stats", "type_counts", "weak_components"]
