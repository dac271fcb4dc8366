"""Graph analytics of the Flags Toolkit's critical-components and impact tools (spec/000 section 4):
degree, betweenness and PageRank rankings, bottlenecks, communities, orphan and gap reports.

Degree centrality and PageRank come from :class:`~kgos.index.graph.GraphIndex` (networkx's
definitions). Betweenness and articulation points come from igraph on the undirected simple
projection, computed once per KG version (cached on the view). Betweenness is exact up to
``EXACT_BETWEENNESS_NODES`` nodes and normalised as ``networkx.betweenness_centrality`` of the
undirected graph; above that it is estimated from ``SAMPLED_SOURCES`` random sources (seeded) and
scaled by n / sources (Brandes & Pich 2007), and the report says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components

from ..errors import InvalidArgument
from .autodims import SHAPE_DIMENSIONS
from .catalog import DIMENSIONS
from .nodesql import node_table
from .results import CentralityReport, Community, CommunityReport, GapReport, NodeRef, RankedNode
from .view import GraphView

if TYPE_CHECKING:
    from ..store.base import GraphStore

METRICS = ("degree", "betweenness", "pagerank", "combined")
EXACT_BETWEENNESS_NODES = 20_000
SAMPLED_SOURCES = 256
SEED = 42
ACTIONABLE_TYPES = ("feature", "tool", "technique", "pattern", "capability", "step", "model")


def undirected_edges(view: GraphView) -> np.ndarray:
    """(m, 2) array of distinct undirected pairs u < v (self loops dropped), cached."""
    def compute() -> np.ndarray:
        g = view.graph
        src = np.repeat(np.arange(view.n, dtype=np.int64), g.out_degree)
        dst = g.out.indices.astype(np.int64)
        lo, hi = np.minimum(src, dst), np.maximum(src, dst)
        keep = lo != hi
        key = np.unique(lo[keep] * view.n + hi[keep])
        return np.column_stack(np.divmod(key, view.n)) if key.size else np.zeros((0, 2), np.int64)
    return view.cached("undirected_edges", compute)


def igraph_of(view: GraphView) -> Any:
    def compute() -> Any:
        import igraph as ig
        return ig.Graph(n=view.n, edges=undirected_edges(view), directed=False)
    return view.cached("igraph", compute)


def betweenness(view: GraphView) -> tuple[np.ndarray, str]:
    """(normalised betweenness per row, how it was computed), once per KG version."""
    return view.cached("betweenness", lambda: _betweenness(view))


def _betweenness(view: GraphView) -> tuple[np.ndarray, str]:
    n = view.n
    if n < 3:
        return np.zeros(n), "exact"
    g = igraph_of(view)
    scale = 2.0 / ((n - 1) * (n - 2))  # networkx normalisation of an undirected graph
    if n <= EXACT_BETWEENNESS_NODES:
        return np.asarray(g.betweenness(directed=False), dtype=np.float64) * scale, "exact"
    sources = np.random.default_rng(SEED).choice(n, SAMPLED_SOURCES, replace=False)
    raw = np.asarray(g.betweenness(directed=False, sources=sources.tolist()), dtype=np.float64)
    # each source contributes its half of the pair count; n / k extrapolates to all sources
    return raw * (n / SAMPLED_SOURCES) * scale, f"sampled: {SAMPLED_SOURCES} random sources of {n:,}, scaled"


def degrees(view: GraphView) -> np.ndarray:
    return view.cached("simple_degree", lambda: np.rint(view.graph.degree_centrality() * max(view.n - 1, 1)).astype(np.int64))


def articulation_points(view: GraphView) -> np.ndarray:
    return view.cached("articulation", lambda: np.asarray(sorted(igraph_of(view).articulation_points()), np.int64))


def _scaled(x: np.ndarray) -> np.ndarray:
    top = float(x.max()) if x.size else 0.0
    return x / top if top > 0 else np.zeros_like(x, dtype=np.float64)


def centrality(view: GraphView, metric: str = "combined", k: int = 20) -> CentralityReport:
    """Top k by degree centrality, betweenness, PageRank, or their combination (the mean of the
    three, each scaled to a maximum of 1): the critical components to test first."""
    if metric not in METRICS:
        raise InvalidArgument(f"metric must be one of {', '.join(METRICS)}, not {metric!r}")
    dc = view.graph.degree_centrality()
    pr = view.graph.pagerank()
    bc, method = betweenness(view) if metric in ("betweenness", "combined") else (np.zeros(view.n), "not computed")
    score = {"degree": dc, "pagerank": pr, "betweenness": bc,
             "combined": (_scaled(dc) + _scaled(bc) + _scaled(pr)) / 3.0}[metric]
    notes = ("PageRank is 0 on graphs with fewer than 20 edges (spec/001 1.6)",) if view.graph.n_edges < 20 else ()
    return CentralityReport(metric, method, _ranked(view, score, k, bc, pr), notes)


def _ranked(view: GraphView, score: np.ndarray, k: int, bc: np.ndarray, pr: np.ndarray,
            rows: np.ndarray | None = None) -> tuple[RankedNode, ...]:
    rows = np.arange(view.n) if rows is None else rows
    order = rows[np.lexsort((rows, -score[rows]))][:k]
    deg, art = degrees(view), set(articulation_points(view).tolist()) if view.n else set()
    return tuple(RankedNode(i + 1, view.ref(r), float(score[r]), int(deg[r]), float(bc[r]), float(pr[r]), int(r) in art)
                 for i, r in enumerate(order))


def bottlenecks(view: GraphView, k: int = 20) -> CentralityReport:
    """Articulation points (nodes whose removal disconnects part of the graph), by betweenness."""
    bc, method = betweenness(view)
    rows = articulation_points(view)
    return CentralityReport("bottleneck", method, _ranked(view, bc, k, bc, view.graph.pagerank(), rows),
                            (f"{rows.size} articulation point(s) in all",))


def communities(view: GraphView, k: int = 20, top: int = 5) -> CommunityReport:
    """The communities of ``GraphIndex.communities`` (Leiden, spec/001 1.8), largest first, each
    with its most connected members, node types, and edges inside / leaving it."""
    labels = view.graph.communities().astype(np.int64)
    count = int(labels.max()) + 1 if labels.size else 0
    edges = undirected_edges(view)
    same = labels[edges[:, 0]] == labels[edges[:, 1]]
    internal = np.bincount(labels[edges[same, 0]], minlength=count)
    external = (np.bincount(labels[edges[~same, 0]], minlength=count) + np.bincount(labels[edges[~same, 1]], minlength=count))
    sizes = np.bincount(labels, minlength=count)
    order = np.lexsort((np.arange(count), -sizes))[:k]
    deg = degrees(view)
    found = tuple(_community(view, labels, int(c), int(sizes[c]), int(internal[c]), int(external[c]), deg, top)
                  for c in order)
    modularity = float(igraph_of(view).modularity(labels.tolist())) if edges.size else 0.0
    return CommunityReport(count, modularity, found)


def _community(view: GraphView, labels: np.ndarray, c: int, size: int, internal: int, external: int,
               deg: np.ndarray, top: int) -> Community:
    members = np.flatnonzero(labels == c)
    best = members[np.lexsort((members, -deg[members]))][:top]
    types = np.bincount(view.node_types[members], minlength=len(view.type_names))
    type_counts = {view.type_names[t]: int(n) for t, n in sorted(enumerate(types), key=lambda x: -x[1]) if n}
    return Community(c, size, tuple(view.ref(r) for r in best), type_counts, internal, external)


def gaps(view: GraphView, store: GraphStore, limit: int = 20) -> GapReport:
    """What the KG lacks: orphans, components cut off from the main one, limitations nobody has a
    workaround for, actionable nodes without any semantic dimension, nodes without a description."""
    deg = degrees(view)
    orphans = np.flatnonzero(deg == 0)
    n_comp, labels = _components(view)
    lims = _unmitigated(view)
    missing, n_missing, no_desc = _dimension_gaps(view, store, limit)
    return GapReport(orphans=tuple(view.ref(r) for r in orphans[:limit]), orphan_count=int(orphans.size),
                     components=n_comp, small_components=_small_components(view, labels, deg, limit),
                     unmitigated_limitations=tuple(view.ref(r) for r in lims[:limit]),
                     without_dimensions=missing, without_dimensions_count=n_missing,
                     without_description_count=no_desc)


def _components(view: GraphView) -> tuple[int, np.ndarray]:
    e = undirected_edges(view)
    adj = coo_array((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(view.n, view.n)).tocsr()
    n, labels = connected_components(adj, directed=False)
    return int(n), labels


def _small_components(view: GraphView, labels: np.ndarray, deg: np.ndarray, limit: int) -> tuple[tuple[NodeRef, ...], ...]:
    """Components other than the largest that have an edge (orphans are listed on their own)."""
    sizes = np.bincount(labels)
    if sizes.size <= 1:
        return ()
    main = int(np.argmax(sizes))
    connected = np.unique(labels[deg > 0])
    small = [int(c) for c in connected if c != main]
    small.sort(key=lambda c: (-sizes[c], c))
    return tuple(tuple(view.ref(r) for r in np.flatnonzero(labels == c)[:10]) for c in small[:limit])


def _unmitigated(view: GraphView) -> np.ndarray:
    """Targets of has_limitation with no workaround: none of their own (has_workaround out, fixes /
    solves in) and none on any node that has them."""
    g = view.graph
    types = g.types
    code = {t: i for i, t in enumerate(types)}
    if "has_limitation" not in code:
        return np.zeros(0, np.int64)
    src = np.repeat(np.arange(view.n), g.out_degree)
    lim_edges = g.out.etype == code["has_limitation"]
    has_work = np.zeros(view.n, bool)
    if "has_workaround" in code:
        has_work[src[g.out.etype == code["has_workaround"]]] = True
    for t in ("fixes", "solves"):
        if t in code:
            has_work[g.out.indices[g.out.etype == code[t]]] = True
    lims = np.unique(g.out.indices[lim_edges])
    covered = np.zeros(view.n, bool)
    covered[g.out.indices[lim_edges & has_work[src]]] = True  # an owner with a workaround covers it
    return lims[~has_work[lims] & ~covered[lims]].astype(np.int64)


def _dimension_gaps(view: GraphView, store: GraphStore, limit: int) -> tuple[tuple[NodeRef, ...], int, int]:
    """(actionable nodes without catalog dimensions (first ``limit``), their count, nodes without a
    description). The shape values every node gets at import (degree, neighbour types, description
    length) do not count: they say nothing about what the node is."""
    table = node_table(store)
    dims = [d for d in DIMENSIONS if d not in SHAPE_DIMENSIONS]
    if table is None or table.props is None:
        nodes = list(store.iter_nodes())
        missing = [n for n in nodes if n.type in ACTIONABLE_TYPES and not any(d in n.properties for d in dims)]
        return (tuple(NodeRef(n.id, n.name, n.type) for n in missing[:limit]), len(missing),
                sum(1 for n in nodes if not n.description))
    marks = ",".join("?" * len(dims))
    where = (f"{table.type} IN ({','.join('?' * len(ACTIONABLE_TYPES))}) AND NOT EXISTS "
             f"(SELECT 1 FROM json_each(coalesce({table.props}, '{{}}')) WHERE key IN ({marks}))")
    args = [*ACTIONABLE_TYPES, *dims]
    count = table.rows(f"SELECT count(*) {table.source} AND {where}", args)[0][0]
    ids = [r[0] for r in table.rows(f"SELECT {table.id} {table.source} AND {where} ORDER BY {table.order} "
                                            "LIMIT ?", [*args, limit])]
    no_desc = table.rows(f"SELECT count(*) {table.source} AND coalesce({table.description}, '') = ''")[0][0]
    return tuple(view.ref(view.index[i]) for i in ids if i in view.index), int(count), int(no_desc)
