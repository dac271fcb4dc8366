"""The neighbourhood of a node as a drawable subgraph (what the studio's graph explorer shows), and
a KG's degree histogram (its stats charts).

``neighborhood`` walks the view's CSR adjacency breadth first (edges in both directions), keeps
whole BFS levels while they fit in ``max_nodes`` and then the best-connected nodes of the level that
does not, and returns every edge among the kept nodes (up to ``max_edges``). Caps are part of the
answer: a request above ``MAX_NODES``/``MAX_EDGES`` is served at the cap, and ``message`` says what
was left out, so a client can show it instead of guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from .results import Record
from .view import MAX_DEPTH, GraphView, resolve

if TYPE_CHECKING:
    from ..store.base import GraphStore

MAX_NODES = 10_000  # nodes one response may hold: with their edges, ~20,000 drawn elements
MAX_EDGES = 20_000


@dataclass(frozen=True)
class GraphNode(Record):
    """A node of a drawn subgraph: ``depth`` hops from the centre, ``degree`` in the whole KG."""

    id: str
    name: str
    type: str
    depth: int
    degree: int


@dataclass(frozen=True)
class GraphEdge(Record):
    """A directed edge between two nodes of the subgraph."""

    source: str
    target: str
    type: str
    weight: float


@dataclass(frozen=True)
class Neighborhood(Record):
    """Nodes within ``depth`` hops of ``center`` and the edges among them. ``nodes`` and ``edges``
    hold one JSON record each (the fields of ``GraphNode`` / ``GraphEdge``: a drawable subgraph has
    thousands, built straight as dicts). ``reachable``: nodes the BFS reached (before the node cap);
    ``truncated``: some nodes or edges were left out, ``message`` says which and why (also when a
    requested cap was lowered to the server's)."""

    center: str
    depth: int
    max_nodes: int
    nodes: tuple[Mapping[str, Any], ...]
    edges: tuple[Mapping[str, Any], ...]
    reachable: int
    truncated: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"center": self.center, "depth": self.depth, "max_nodes": self.max_nodes, "nodes": list(self.nodes),
                "edges": list(self.edges), "reachable": self.reachable, "truncated": self.truncated,
                "message": self.message}


@dataclass(frozen=True)
class DegreeHistogram(Record):
    """How many nodes have a total degree in each bin: ``bins[i]`` is the lowest degree of bin i
    (powers of two after 0, 1: 0, 1, 2-3, 4-7, ...), ``counts[i]`` its number of nodes."""

    bins: tuple[int, ...]
    counts: tuple[int, ...]


def neighborhood(store: GraphStore, view: GraphView, node: str | None = None, depth: int = 2, max_nodes: int = 500,
                 max_edges: int = MAX_EDGES) -> Neighborhood:
    """The subgraph around ``node`` (an id or unambiguous name; None: the KG's best-connected node)."""
    if not 0 <= depth <= MAX_DEPTH:
        raise InvalidArgument(f"depth must be 0-{MAX_DEPTH}, not {depth}")
    if max_nodes < 1 or max_edges < 0:
        raise InvalidArgument("max_nodes must be at least 1 and max_edges at least 0")
    if view.n == 0:
        raise InvalidArgument("the KG has no nodes to show")
    notes = []
    if max_nodes > MAX_NODES:
        notes.append(f"max_nodes {max_nodes:,} is above the server's cap of {MAX_NODES:,}: showing at most {MAX_NODES:,}")
        max_nodes = MAX_NODES
    max_edges = min(max_edges, MAX_EDGES)
    degree = _total_degree(view)
    start = int(np.argmax(degree)) if node is None else view.row(resolve(store, node).id)
    levels = view.graph.bfs_levels(start, "both", depth)
    rows, depths = _keep(levels, degree, max_nodes)
    reachable = sum(int(level.size) for level in levels)
    if rows.size < reachable:
        notes.append(f"{reachable:,} nodes are within {depth} hops; showing the {rows.size:,} nearest "
                     f"(best connected first): raise max_nodes or lower depth to see others")
    edges, total_edges = _edges_among(view, rows, max_edges)
    if len(edges) < total_edges:
        notes.append(f"{total_edges:,} edges join the shown nodes; showing {len(edges):,} (the cap)")
    ids, names, types = view.node_ids, view.names, view.type_names
    nodes = tuple({"id": ids[r], "name": names[r], "type": types[c], "depth": d, "degree": g} for r, c, d, g in
                  zip(rows.tolist(), view.node_types[rows].tolist(), depths.tolist(), degree[rows].tolist()))
    return Neighborhood(view.node_ids[start], depth, max_nodes, nodes, edges, reachable, bool(notes), "; ".join(notes))


def _keep(levels: list[np.ndarray], degree: np.ndarray, max_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, their depth): whole levels while they fit, then the highest-degree rows of the next."""
    rows, depths, room = [], [], max_nodes
    for d, level in enumerate(levels):
        if room <= 0:
            break
        if level.size > room:
            level = level[np.argsort(-degree[level], kind="stable")[:room]]
        rows.append(level)
        depths.append(np.full(level.size, d, np.int32))
        room -= level.size
    return np.concatenate(rows), np.concatenate(depths)


def _edges_among(view: GraphView, rows: np.ndarray, max_edges: int) -> tuple[tuple[dict[str, Any], ...], int]:
    """Outgoing edges of ``rows`` whose target is in ``rows`` (the first ``max_edges``; their total)."""
    out = view.graph.out
    kept = np.zeros(view.n, bool)
    kept[rows] = True
    pos, counts = out.positions(rows)
    sources = np.repeat(rows, counts)
    inside = kept[out.indices[pos]]
    pos, sources = pos[inside], sources[inside]
    total = int(pos.size)
    pos, sources = pos[:max_edges], sources[:max_edges]
    types, ids = view.graph.types, view.node_ids
    weights = np.round(out.weight[pos].astype(np.float64), 6).tolist()
    edges = tuple({"source": ids[s], "target": ids[t], "type": types[c], "weight": w} for s, t, c, w in
                  zip(sources.tolist(), out.indices[pos].tolist(), out.etype[pos].tolist(), weights))
    return edges, total


def _total_degree(view: GraphView) -> np.ndarray:
    """In + out degree per row (parallel edges counted)."""
    return view.graph.out_degree.astype(np.int64) + view.graph.in_degree


def degree_histogram(view: GraphView) -> DegreeHistogram:
    """Total degree (in + out, parallel edges counted) binned by powers of two."""
    degree = _total_degree(view)
    top = int(degree.max()) if degree.size else 0
    bins = [0, 1]
    while bins[-1] * 2 <= top:
        bins.append(bins[-1] * 2)
    counts = np.bincount(np.searchsorted(bins, degree, side="right") - 1, minlength=len(bins))
    return DegreeHistogram(tuple(bins), tuple(int(c) for c in counts[:len(bins)]))


@dataclass(frozen=True)
class CommunityLink(Record):
    """Undirected edges between two communities of a ``CommunityMap`` (ids of ``Community``)."""

    source: int
    target: int
    edges: int


@dataclass(frozen=True)
class CommunityMap(Record):
    """The overview of a KG too large to draw node by node: its largest communities (Leiden, as
    ``analytics.communities``), each with its best-connected members, and how many edges join each
    pair of them. ``count``: communities in the whole KG; ``nodes``: nodes in the KG."""

    count: int
    nodes: int
    communities: tuple[Any, ...]
    links: tuple[CommunityLink, ...]


def community_map(view: GraphView, k: int = 40, top: int = 5) -> CommunityMap:
    """The ``k`` largest communities and the edge counts between them (edges in both directions,
    parallel edges once), for the explorer's overview of a large KG."""
    from .analytics import communities, undirected_edges

    report = communities(view, k=k, top=top)
    labels = view.graph.communities().astype(np.int64)
    shown = np.asarray([c.id for c in report.communities], dtype=np.int64)
    pairs = undirected_edges(view)
    links: tuple[CommunityLink, ...] = ()
    if pairs.size and shown.size:
        a, b = labels[pairs[:, 0]], labels[pairs[:, 1]]
        keep = (a != b) & np.isin(a, shown) & np.isin(b, shown)
        lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
        found, counts = np.unique(np.stack([lo, hi], axis=1), axis=0, return_counts=True) if lo.size else (np.empty((0, 2)), np.empty(0))
        links = tuple(CommunityLink(int(s), int(t), int(n)) for (s, t), n in zip(found, counts, strict=True))
    return CommunityMap(report.count, view.n, report.communities, links)
