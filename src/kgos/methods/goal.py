"""Method 2, ``want_to``: goal keywords, 5x intent verbs, then goal-relevant edges (spec/000 section 6).

text(v)  = max(BM25 with intent keywords x5, FTS5), each normalised to max 1 (spec/000 section 7)
graph(v) = two hops of goal-edge propagation from the best text matches (below), normalised
score    = text + GRAPH_WEIGHT x graph

Propagation follows the spec's enables / requires / optimizes edges and the other goal edges of
spec/001 1.7 and the cookbook KGs (contributes_to, reduces, solves, provides, implements, used_for,
supports), each with a weight per direction as seen from the matched node: ``X --enables--> goal``
gives X 1.0 (X enables the goal), ``goal --requires--> Y`` gives Y 0.6 (a prerequisite). The second
hop starts from the 20 best first-hop nodes and is damped by half.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..retrieval.hybrid import fts_signal, normalise, top_indices
from .language import goal_keywords, intent_weight, strip_prefix
from .results import GoalHit, NodeRef, PathStep, WantToResult
from .view import GraphView

if TYPE_CHECKING:
    from ..index.snapshot import Snapshot
    from ..store.base import GraphStore

SEEDS = 10
HOP2_SOURCES = 20
HOP2_DAMPING = 0.5
GRAPH_WEIGHT = 0.5
FTS_CANDIDATES = 200
# edge type -> (weight when the matched node is the edge's target, weight when it is the source)
GOAL_EDGES: dict[str, tuple[float, float]] = {
    "enables": (1.0, 0.5), "optimizes": (1.0, 0.5), "contributes_to": (0.9, 0.4), "solves": (0.9, 0.4),
    "reduces": (0.8, 0.4), "provides": (0.8, 0.5), "used_for": (0.8, 0.4), "implements": (0.7, 0.5),
    "supports": (0.7, 0.4), "fixes": (0.6, 0.3), "requires": (0.3, 0.6), "depends_on": (0.3, 0.5),
    "prerequisite_of": (0.6, 0.3),
}


@dataclass(frozen=True)
class Spread:
    """Nodes reached in one propagation hop, their summed score and their best incoming contribution."""

    nodes: np.ndarray
    score: np.ndarray
    parent: np.ndarray
    edge_type: np.ndarray
    forward: np.ndarray  # the edge points parent -> node


def edge_weights(view: GraphView, table: dict[str, tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(weight when the source row is the edge's source, ... its target) per edge type code."""
    as_source = np.array([table.get(t, (0.0, 0.0))[1] for t in view.graph.types], dtype=np.float64)
    as_target = np.array([table.get(t, (0.0, 0.0))[0] for t in view.graph.types], dtype=np.float64)
    return as_source, as_target


def spread(view: GraphView, rows: np.ndarray, values: np.ndarray, table: dict[str, tuple[float, float]]) -> Spread:
    """One hop: each edge of a source row passes value x weight(type, side) to the other end."""
    order = np.argsort(rows)
    rows, values = rows[order], values[order]
    nb = view.graph.neighbors_of(rows, "both", edge_types=list(table))
    w_src, w_tgt = edge_weights(view, table)
    contrib = values[np.searchsorted(rows, nb.origin)] * np.where(nb.src_side, w_src[nb.edge_type], w_tgt[nb.edge_type])
    keep = contrib > 0
    node, origin, contrib = nb.node[keep], nb.origin[keep], contrib[keep]
    etype, fwd = nb.edge_type[keep], nb.src_side[keep]
    nodes, inverse = np.unique(node, return_inverse=True)
    score = np.bincount(inverse, weights=contrib, minlength=nodes.size)
    best = np.lexsort((-contrib, node))  # by node, strongest contribution first
    first = best[np.r_[True, node[best][1:] != node[best][:-1]]] if best.size else best
    return Spread(nodes, score, origin[first], etype[first], fwd[first])


def text_signal(snap: Snapshot, store: GraphStore, text: str, weight: Any = None) -> np.ndarray:
    """max(BM25 (optionally weighted per token), FTS5), each normalised to max 1 (spec/000 section 7)."""
    bm25 = normalise(snap.text.scores(snap.text.query_terms(text, weight)[:64]))
    fts = fts_signal(snap, store, text, FTS_CANDIDATES)
    return np.maximum(bm25, fts) if fts is not None else bm25


def goal_graph(view: GraphView, text: np.ndarray) -> tuple[np.ndarray, dict[int, tuple[int, int, bool]], np.ndarray]:
    """Two damped hops of goal-edge propagation from the top text matches (the seeds).

    Returns (graph score per row, normalised to max 1; the best link of each reached row as
    {row: (parent row, edge type code, edge points parent -> row)}, first hop first; the seeds)."""
    graph = np.zeros(view.n)
    links: dict[int, tuple[int, int, bool]] = {}
    seeds = top_indices(text, SEEDS)
    if seeds.size == 0:
        return graph, links, seeds
    hop1 = spread(view, seeds, text[seeds].astype(np.float64), GOAL_EDGES)
    graph[hop1.nodes] += hop1.score
    _record(links, hop1)
    if hop1.nodes.size:
        top = hop1.nodes[np.lexsort((hop1.nodes, -hop1.score))[:HOP2_SOURCES]]
        hop2 = spread(view, top, normalise(graph)[top] * HOP2_DAMPING, GOAL_EDGES)
        graph[hop2.nodes] += hop2.score
        _record(links, hop2)
    return normalise(graph), links, seeds


def _record(links: dict[int, tuple[int, int, bool]], hop: Spread) -> None:
    for node, parent, etype, fwd in zip(hop.nodes.tolist(), hop.parent.tolist(), hop.edge_type.tolist(),
                                        hop.forward.tolist()):
        links.setdefault(node, (parent, etype, fwd))


def path_from(view: GraphView, row: int, links: dict[int, tuple[int, int, bool]], text: np.ndarray,
              seeds: set[int], refs: dict[int, NodeRef]) -> tuple[PathStep, ...]:
    """The hit, then each link back to the text match it was reached from (at most 3 nodes). Only
    shown when that match fits the goal's words better than the hit itself: the best text match
    needs no path."""
    start = row
    steps = [PathStep(refs.get(row) or view.ref(row))]
    while row in links and len(steps) < 3:
        parent, etype, forward = links[row]
        if any(parent == view.index[s.node.id] for s in steps):
            break
        # walking from row to its parent: the edge points our way iff it did not point parent -> row
        steps.append(PathStep(refs.get(parent) or view.ref(parent), view.graph.types[etype],
                              "backward" if forward else "forward"))
        row = parent
        if row in seeds:
            break
    if len(steps) == 1 or row not in seeds or text[row] <= text[start]:
        return steps[:1]
    return tuple(steps)


def want_to(view: GraphView, snap: Snapshot, store: GraphStore, goal: str, k: int) -> WantToResult:
    """spec/000 method 2 (see the module docstring for the formula)."""
    keywords, boosted = goal_keywords(goal)
    notes: tuple[str, ...] = () if keywords else ("the goal has no content words; nothing to match",)
    text = text_signal(snap, store, " ".join(keywords), intent_weight).astype(np.float64) if keywords else np.zeros(view.n)
    graph, links, seeds = goal_graph(view, text)
    seed_set = set(seeds.tolist())
    score = text + GRAPH_WEIGHT * graph
    top = top_indices(score, k)
    nodes = store.get_nodes(view.node_ids[i] for i in top)
    refs = {int(i): _ref(view, int(i), nodes) for i in top}
    hits = tuple(GoalHit(refs[int(i)], float(score[i]), float(text[i]), float(graph[i]),
                         path_from(view, int(i), links, text, seed_set, refs))
                 for i in top)
    if keywords and not hits:
        notes += ("no node matches the goal's words; try other words or `kgos search`",)
    return WantToResult(strip_prefix(goal), tuple(keywords), tuple(boosted), hits, notes)


def _ref(view: GraphView, row: int, nodes: dict[str, Any]) -> NodeRef:
    node = nodes.get(view.node_ids[row])
    if node is None:
        return view.ref(row)
    return NodeRef(node.id, node.name, node.type, node.description)
