"""The graph methods of spec/000 section 6 over a :class:`GraphView`: similar_to (5),
impact_analysis (6), trace_path (9), explore_smart (10) and edge_type_boost (12).

All of them are vectorised over the CSR arrays of :class:`~kgos.index.graph.GraphIndex` (BFS by
frontier gathers, Jaccard as one gather of the neighbours' rows); Python only loops over BFS levels
and over the few nodes a result lists. They take row numbers and return result records, so the
benchmark runs them on a synthetic view without a store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..index.graph import BFSTree
from .results import (
    AlternativesResult,
    BoostResult,
    ExplicitAlternative,
    ExplorationLevel,
    ExplorationTree,
    ExploredNode,
    ImpactedNode,
    ImpactResult,
    NodeRef,
    PathResult,
    PathStep,
    SimilarRow,
)
from .view import PER_LEVEL_DEFAULT, GraphView

SIMILAR_WEIGHTS = (0.70, 0.20, 0.10)  # Jaccard, type match, name overlap (spec/000 method 5)
EXPLORE_WEIGHTS = (0.6, 0.4)  # degree centrality, edge diversity (method 10)
HUB_FACTOR = 2.0  # hub: degree > 2 x the level's mean degree
DENSE_TOUCH_RATIO = 8  # similar_rows: dense arrays once its candidates reach n / 8 rows
_BFS_DIRECTION = {"forward": "outgoing", "backward": "incoming", "both": "both"}


# -- method 5 ----------------------------------------------------------------------------------------
def similarity_scores(view: GraphView, row: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(score, jaccard, type_match, name_overlap) of ``row`` against every node, as dense arrays.

    Jaccard over undirected neighbour sets (``GraphIndex.jaccard_all``); name overlap is the Jaccard
    of the two names' word sets, |A n B| from a gather of the posting lists of ``row``'s words.
    """
    jac = view.graph.jaccard_all(row)
    same_type = (view.node_types == view.node_types[row]).astype(np.float64)
    names = name_overlap(view, row)
    wj, wt, wn = SIMILAR_WEIGHTS
    return wj * jac + wt * same_type + wn * names, jac, same_type, names


def name_overlap(view: GraphView, row: int) -> np.ndarray:
    """shared words / all distinct words of the two names, for every node (float64, n)."""
    words, sizes, postings = _name_postings(view, row)
    inter = np.zeros(view.n)
    if words.size:
        rows = np.concatenate([postings.indices[postings.indptr[w]:postings.indptr[w + 1]] for w in words])
        inter = np.bincount(rows, minlength=view.n).astype(np.float64)
    union = sizes[row] + sizes - inter
    return np.divide(inter, union, out=np.zeros(view.n), where=union > 0)


def _name_postings(view: GraphView, row: int) -> tuple[np.ndarray, np.ndarray, Any]:
    """(``row``'s name words, words per name, word -> rows postings), the last two cached per view."""
    tokens = view.name_tokens()
    sizes = view.cached("name_sizes", lambda: np.diff(tokens.indptr).astype(np.float64))
    postings = view.cached("name_postings", lambda: tokens.T.tocsr())
    return tokens.indices[tokens.indptr[row]:tokens.indptr[row + 1]], sizes, postings


def name_overlap_of(view: GraphView, row: int) -> tuple[np.ndarray, np.ndarray]:
    """``name_overlap`` on the nodes sharing a name word with ``row`` (elsewhere it is 0):
    (sorted rows, overlap), from a gather of the posting lists of ``row``'s words."""
    words, sizes, postings = _name_postings(view, row)
    if not words.size:
        return np.zeros(0, np.int64), np.zeros(0)
    hits = np.sort(np.concatenate([postings.indices[postings.indptr[w]:postings.indptr[w + 1]] for w in words]))
    starts = np.flatnonzero(np.r_[True, hits[1:] != hits[:-1]])
    cands, inter = hits[starts].astype(np.int64), np.diff(np.r_[starts, hits.size]).astype(np.float64)
    union = sizes[row] + sizes[cands] - inter
    return cands, np.divide(inter, union, out=np.zeros(cands.size), where=union > 0)


def similar_rows(view: GraphView, row: int, k: int) -> tuple[SimilarRow, ...]:
    """The k most similar other nodes (ties: lower row first); zero scores are left out.

    Nodes sharing a neighbour or a name word are scored in full; every other node scores 0.20 if of
    ``row``'s type (else 0), so only the lowest-numbered few of those can enter the top k. That
    costs the two-hop neighbourhood and the name words' postings, not n; when those touch more
    than an eighth of the graph (a very common name word), dense arrays are cheaper."""
    jac_rows, jac = view.graph.jaccard_of(row)
    words, _, postings = _name_postings(view, row)
    touched = jac_rows.size + int(sum(postings.indptr[w + 1] - postings.indptr[w] for w in words))
    if touched * DENSE_TOUCH_RATIO > view.n:
        return _similar_dense(view, row, k)
    name_rows, names = name_overlap_of(view, row)
    scored = np.union1d(jac_rows, name_rows)
    fill = _same_type_rows(view, row, k + scored.size + 1)
    cands = np.concatenate([scored, fill[~np.isin(fill, scored)]])
    cands = cands[cands != row]
    parts = (_spread(jac_rows, jac, cands), (view.node_types[cands] == view.node_types[row]).astype(np.float64),
             _spread(name_rows, names, cands))
    wj, wt, wn = SIMILAR_WEIGHTS
    score = wj * parts[0] + wt * parts[1] + wn * parts[2]
    return tuple(SimilarRow(view.ref(cands[i]), float(score[i]), *(float(p[i]) for p in parts))
                 for i in _top_positions(score, cands, k))


def _similar_dense(view: GraphView, row: int, k: int) -> tuple[SimilarRow, ...]:
    score, jac, same, names = similarity_scores(view, row)
    score[row] = 0.0
    top = top_k(score, k)
    return tuple(SimilarRow(view.ref(i), float(score[i]), float(jac[i]), float(same[i]), float(names[i])) for i in top)


def _same_type_rows(view: GraphView, row: int, limit: int) -> np.ndarray:
    """The ``limit`` lowest rows of ``row``'s node type (the rows of each type are cached per view)."""
    t = int(view.node_types[row])
    by_type = view.cached("rows_by_type", dict)
    if t not in by_type:
        with view._lock:
            by_type.setdefault(t, np.flatnonzero(view.node_types == t))
    return by_type[t][:limit].astype(np.int64)


def _spread(rows: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``values`` (given for the sorted ``rows``) at the rows ``at``, 0 where a row has none."""
    if not rows.size:
        return np.zeros(at.size)
    pos = np.minimum(np.searchsorted(rows, at), rows.size - 1)
    return np.where(rows[pos] == at, values[pos], 0.0)


def _top_positions(score: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k best positive scores, ties by row (as ``top_k`` over dense scores)."""
    nz = np.flatnonzero(score > 0)
    return nz[np.lexsort((rows[nz], -score[nz]))][:k]


def top_k(score: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest positive scores, best first, ties by index (argpartition + sort)."""
    nz = np.flatnonzero(score > 0)
    if nz.size > k:
        kth = np.partition(score[nz], nz.size - k)[nz.size - k]
        nz = nz[score[nz] >= kth]  # keeps every tie at the cut, so ties resolve by index below
    order = np.lexsort((nz, -score[nz]))
    return nz[order][:k]


def alternatives(view: GraphView, row: int, k: int) -> AlternativesResult:
    """Declared alternatives (alternative_to / similar_to edges, either way), then the most similar
    other nodes by method 5, and the nodes it conflicts with."""
    nb = view.graph.neighbors_of(np.array([row]), "both", edge_types=["alternative_to", "similar_to"])
    explicit, seen = [], {row}
    for node, etype, out in zip(nb.node.tolist(), nb.edge_type.tolist(), nb.src_side.tolist()):
        if node not in seen:
            seen.add(node)
            explicit.append(ExplicitAlternative(view.ref(node), view.graph.types[etype], "outgoing" if out else "incoming"))
    structural = tuple(r for r in similar_rows(view, row, k + len(seen)) if view.index[r.node.id] not in seen)[:k]
    clash = view.graph.neighbors_of(np.array([row]), "both", edge_types=["conflicts_with"]).node
    return AlternativesResult(view.ref(row), tuple(explicit), structural,
                              tuple(view.ref(c) for c in dict.fromkeys(clash.tolist())))


# -- method 6 ----------------------------------------------------------------------------------------
def criticality(view: GraphView) -> np.ndarray:
    """Degree centrality scaled so the graph's biggest hub has 1.0 (raw centrality is ~1e-5 on big
    graphs, which would make every risk unreadably small without changing any ranking)."""
    def compute() -> np.ndarray:
        dc = view.graph.degree_centrality()
        top = float(dc.max()) if dc.size else 0.0
        return dc / top if top > 0 else dc
    return view.cached("criticality", compute)


def impact(view: GraphView, row: int, direction: str, max_depth: int, per_depth: int = PER_LEVEL_DEFAULT,
           notes: tuple[str, ...] = ()) -> ImpactResult:
    """spec/000 method 6: BFS up to ``max_depth`` hops; risk = 1/depth x edge weight x criticality."""
    tree = view.graph.bfs_parents(row, _BFS_DIRECTION[direction], max_depth)
    depth = tree.depth.astype(np.float64)
    risk = np.zeros(tree.node.size)
    if tree.node.size > 1:
        risk[1:] = tree.weight[1:] * criticality(view)[tree.node[1:]] / depth[1:]
    by_depth, counts, truncated = _risk_by_depth(view, tree, risk, per_depth)
    used = tree.edge_type[1:]
    type_counts = np.bincount(used, minlength=len(view.graph.types)) if used.size else np.zeros(0, np.int64)
    traversed = {view.graph.types[t]: int(c) for t, c in enumerate(type_counts) if c}
    return ImpactResult(node=view.ref(row), direction=direction, max_depth=max_depth,
                        total_impacted=int(tree.node.size - 1), counts_by_depth=counts, risk_by_depth=by_depth,
                        critical_path=tuple(view.ref(r) for r in critical_path(tree, risk)),
                        edge_types_traversed=dict(sorted(traversed.items(), key=lambda kv: (-kv[1], kv[0]))),
                        truncated=truncated, notes=notes)


def _risk_by_depth(view: GraphView, tree: BFSTree, risk: np.ndarray,
                   per_depth: int) -> tuple[dict[int, tuple[ImpactedNode, ...]], dict[int, int], bool]:
    crit = criticality(view)
    out: dict[int, tuple[ImpactedNode, ...]] = {}
    counts: dict[int, int] = {}
    truncated = False
    for d in range(1, int(tree.depth.max()) + 1 if tree.depth.size else 1):
        idx = np.flatnonzero(tree.depth == d)
        counts[d] = int(idx.size)
        truncated |= idx.size > per_depth
        idx = idx[np.lexsort((tree.node[idx], -risk[idx]))][:per_depth]
        out[d] = tuple(ImpactedNode(
            node=view.ref(tree.node[i]), depth=d, risk=float(risk[i]), parent=view.node_ids[int(tree.parent[i])],
            edge_type=view.graph.types[int(tree.edge_type[i])], direction="forward" if tree.forward[i] else "backward",
            weight=float(tree.weight[i]), criticality=float(crit[tree.node[i]])) for i in idx)
    return out, counts, truncated


def critical_path(tree: BFSTree, risk: np.ndarray) -> list[int]:
    """Root to the node with the highest cumulative risk along its BFS-tree path (a leaf, since risks
    are >= 0; ties: the shallower, then lower row). Cumulative sums are built level by level."""
    if tree.node.size <= 1:
        return [int(tree.node[0])] if tree.node.size else []
    pos = np.full(int(tree.node.max()) + 1, -1, np.int64)
    pos[tree.node] = np.arange(tree.node.size)
    cum = risk.copy()
    for d in range(1, int(tree.depth.max()) + 1):
        idx = np.flatnonzero(tree.depth == d)
        cum[idx] += cum[pos[tree.parent[idx]]]
    best = int(np.lexsort((tree.node, tree.depth, -cum))[0])
    path = [int(tree.node[best])]
    while tree.parent[best] >= 0:
        best = int(pos[tree.parent[best]])
        path.append(int(tree.node[best]))
    return path[::-1]


# -- method 9 ----------------------------------------------------------------------------------------
def trace(view: GraphView, a: int, b: int, max_depth: int, notes: tuple[str, ...] = ()) -> PathResult:
    """spec/000 method 9: shortest path by bidirectional BFS, ignoring edge direction (each step
    records whether its edge points along the path); no path within max_depth -> found False."""
    found = view.graph.shortest_path(a, b, max_depth=max_depth, direction="both")
    if found is None:
        return PathResult(view.ref(a), view.ref(b), False, None, (), max_depth,
                          notes + (f"no path of at most {max_depth} edges",))
    steps = tuple(PathStep(view.ref(node), etype, direction) for node, etype, direction in found)
    return PathResult(view.ref(a), view.ref(b), True, len(steps) - 1, steps, max_depth, notes)


# -- method 10 ---------------------------------------------------------------------------------------
def explore(view: GraphView, row: int, depth: int, per_level: int = PER_LEVEL_DEFAULT,
            notes: tuple[str, ...] = ()) -> ExplorationTree:
    """spec/000 method 10: BFS levels, each ranked by 0.6 x degree centrality + 0.4 x edge-type
    diversity (both scaled by the level's maximum, since raw centrality is tiny next to a count of
    types), hubs = degree > 2 x the level's mean degree."""
    tree = view.graph.bfs_parents(row, "both", depth)
    dc = view.graph.degree_centrality()
    degree = view.cached("simple_degree", lambda: np.rint(dc * max(view.n - 1, 1)).astype(np.int64))
    levels, hubs, truncated = [], [], False
    for d in range(int(tree.depth.max()) + 1):
        idx = np.flatnonzero(tree.depth == d)
        level, level_hubs = _level(view, tree, idx, d, dc, degree, per_level)
        truncated |= idx.size > per_level
        levels.append(level)
        hubs += level_hubs
    return ExplorationTree(root=view.ref(row), depth=depth, levels=tuple(levels), hubs=tuple(hubs),
                           truncated=truncated, notes=notes)


def _level(view: GraphView, tree: BFSTree, idx: np.ndarray, d: int, dc: np.ndarray, degree: np.ndarray,
           per_level: int) -> tuple[ExplorationLevel, list[NodeRef]]:
    nodes = tree.node[idx]
    deg = degree[nodes]
    diversity = view.graph.edge_type_diversity(nodes)
    rank = EXPLORE_WEIGHTS[0] * _scaled(dc[nodes]) + EXPLORE_WEIGHTS[1] * _scaled(diversity.astype(np.float64))
    mean = float(deg.mean()) if deg.size else 0.0
    is_hub = (deg > HUB_FACTOR * mean) if d > 0 else np.zeros(nodes.size, bool)
    order = np.lexsort((nodes, -rank))
    listed = order[:per_level]
    explored = tuple(_explored(view, tree, idx[j], d, int(deg[j]), float(dc[nodes[j]]), int(diversity[j]),
                               float(rank[j]), bool(is_hub[j])) for j in listed)
    hubs = [view.ref(nodes[j]) for j in order if is_hub[j]]
    return ExplorationLevel(depth=d, count=int(nodes.size), mean_degree=mean, nodes=explored), hubs


def _explored(view: GraphView, tree: BFSTree, i: int, d: int, deg: int, dc: float, diversity: int, rank: float,
              hub: bool) -> ExploredNode:
    parent = int(tree.parent[i])
    return ExploredNode(node=view.ref(tree.node[i]), depth=d, parent=view.node_ids[parent] if parent >= 0 else None,
                        edge_type=view.graph.types[int(tree.edge_type[i])] if parent >= 0 else None,
                        direction=("forward" if tree.forward[i] else "backward") if parent >= 0 else None,
                        degree=deg, degree_centrality=dc, edge_diversity=diversity, rank_score=rank, is_hub=hub)


def _scaled(x: np.ndarray) -> np.ndarray:
    top = float(x.max()) if x.size else 0.0
    return x / top if top > 0 else np.zeros_like(x, dtype=np.float64)


# -- method 12 ---------------------------------------------------------------------------------------
def boost(view: GraphView, rows: Sequence[int], boost_types: Iterable[str] | None, limit: int) -> BoostResult:
    """spec/000 method 12: +0.5 per outgoing edge seed -> v, +0.3 per incoming v -> seed, over
    ``boost_types`` only (None: every type), normalised to a maximum of 1.0."""
    types = tuple(boost_types) if boost_types is not None else None
    cands, scores = view.graph.edge_type_boost(np.asarray(rows, np.int64), types)
    return BoostResult(seeds=tuple(view.node_ids[r] for r in rows), boost_types=types,
                       scores=tuple((view.ref(c), float(s)) for c, s in zip(cands[:limit], scores[:limit])))
