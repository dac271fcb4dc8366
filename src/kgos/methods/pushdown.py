"""Impact analysis and path tracing of a PostgreSQL KG in pushdown mode (docs/postgres.md "Pushdown"):
impact is one recursive CTE, path tracing a bidirectional BFS of indexed hops; both return the
in-memory methods' result types. Search in the database is ``retrieval.pushdown``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..index.graph import BFSTree
from ..retrieval.pushdown import PushdownEngine
from ..store.postgres_pushdown import Pushdown
from .results import ImpactedNode, ImpactResult, NodeRef, PathResult, PathStep
from .structure import critical_path


# -- the graph methods ---------------------------------------------------------------------------------
_DIRECTION = {"forward": "forward", "backward": "backward", "both": "both",
              "outgoing": "forward", "incoming": "backward"}


def impact(pd: Pushdown, ref: NodeRef, direction: str, max_depth: int, per_depth: int,
           notes: tuple[str, ...] = ()) -> ImpactResult:
    """Method 6 in the database: the BFS tree by one recursive CTE; risk = 1/depth x weight x
    criticality (edge count / the KG's largest), ranked and cut per depth as in memory."""
    with pd.session():
        return _impact(pd, ref, direction, max_depth, per_depth, notes)


def _impact(pd: Pushdown, ref: NodeRef, direction: str, max_depth: int, per_depth: int,
            notes: tuple[str, ...]) -> ImpactResult:
    root = pd.rowids_of([ref.id])[ref.id]
    rows = pd.reach(root, _DIRECTION.get(direction, direction), max_depth)
    rows.sort(key=lambda r: (r[1], r[0]))  # level by level, ascending node: the in-memory tree's order
    nodes = [r[0] for r in rows]
    top = pd.top_degree()
    types = sorted({r[3] for r in rows[1:]})
    pos = {n: i for i, n in enumerate(nodes)}
    tree = BFSTree(node=np.arange(len(rows), dtype=np.int64), depth=np.array([r[1] for r in rows], np.int32),
                   parent=np.array([pos.get(r[2], -1) for r in rows], np.int64),
                   edge_type=np.array([types.index(r[3]) if i else -1 for i, r in enumerate(rows)], np.int32),
                   edge=np.full(len(rows), -1, np.int64), weight=np.array([r[4] for r in rows], np.float32),
                   forward=np.array([r[5] for r in rows]))
    crit = np.array([r[6] / top if top else 0.0 for r in rows])
    risk = np.zeros(len(rows))
    risk[1:] = tree.weight[1:] * crit[1:] / np.maximum(tree.depth[1:], 1)
    counts, listed = {}, {}
    for d in range(1, int(tree.depth.max()) + 1 if len(rows) else 1):
        idx = np.flatnonzero(tree.depth == d)
        counts[d] = int(idx.size)
        listed[d] = idx[np.lexsort((tree.node[idx], -risk[idx]))][:per_depth]
    path = critical_path(tree, risk)
    # node rows only for what the result names (thousands of nodes are reached at depth 3)
    named = [nodes[i] for i in path] + [nodes[i] for idx in listed.values() for i in idx]
    refs = _refs(pd, named + [rows[i][2] for idx in listed.values() for i in idx])
    by_depth = {}
    for d, idx in listed.items():
        by_depth[d] = tuple(ImpactedNode(
            node=refs[nodes[i]], depth=d, risk=float(risk[i]), parent=refs[rows[i][2]].id, edge_type=rows[i][3],
            direction="forward" if rows[i][5] else "backward", weight=float(rows[i][4]), criticality=float(crit[i]))
            for i in idx)
    traversed: dict[str, int] = {}
    for r in rows[1:]:
        traversed[r[3]] = traversed.get(r[3], 0) + 1
    truncated = any(n > per_depth for n in counts.values())
    return ImpactResult(node=ref, direction=direction, max_depth=max_depth, total_impacted=len(rows) - 1,
                        counts_by_depth=counts, risk_by_depth=by_depth,
                        critical_path=tuple(refs[nodes[i]] for i in path),
                        edge_types_traversed=dict(sorted(traversed.items(), key=lambda kv: (-kv[1], kv[0]))),
                        truncated=truncated, notes=notes + ("pushdown: one recursive query in PostgreSQL",))


def trace(pd: Pushdown, a: NodeRef, b: NodeRef, max_depth: int, notes: tuple[str, ...] = ()) -> PathResult:
    """Method 9 in the database: a bidirectional BFS, one indexed query per level (the smaller frontier
    grows), ignoring edge direction; each step records whether its edge points along the path."""
    with pd.session():
        ids = pd.rowids_of([a.id, b.id])
        found = _meet(pd, ids[a.id], ids[b.id], max_depth)
        if found is None:
            return PathResult(a, b, False, None, (), max_depth, notes + (f"no path of at most {max_depth} edges",))
        refs = _refs(pd, [n for n, _, _ in found])
    steps = tuple(PathStep(refs[n], t, d) for n, t, d in found)
    return PathResult(a, b, True, len(steps) - 1, steps, max_depth, notes)


def _meet(pd: Pushdown, start: int, goal: int, max_depth: int) -> list[tuple[int, str | None, str | None]] | None:
    if start == goal:
        return [(start, None, None)]
    # parent maps: node -> (previous node, edge type, edge points previous -> node)
    sides: list[dict[int, tuple[int, str, bool] | None]] = [{start: None}, {goal: None}]
    frontiers = [[start], [goal]]
    for _ in range(max_depth):
        s = 0 if len(frontiers[0]) <= len(frontiers[1]) else 1
        seen, other, nxt = sides[s], sides[1 - s], []
        here = set(frontiers[s])
        for e in sorted(pd.hop(frontiers[s]), key=lambda e: (e.source, e.target, e.type)):
            for frm, to, fwd in ((e.source, e.target, True), (e.target, e.source, False)):
                if frm in here and to not in seen:
                    seen[to] = (frm, e.type, fwd)
                    nxt.append(to)
        meet = [n for n in nxt if n in other]
        if meet:
            return _join(sides[0], sides[1], min(meet))
        if not nxt:
            return None
        frontiers[s] = nxt
    return None


def _join(left: dict[int, Any], right: dict[int, Any], mid: int) -> list[tuple[int, str | None, str | None]]:
    back, n = [], mid
    while left[n] is not None:
        prev, t, fwd = left[n]
        back.append((n, t, "forward" if fwd else "backward"))
        n = prev
    path: list[tuple[int, str | None, str | None]] = [(n, None, None)] + back[::-1]
    n = mid
    while right[n] is not None:
        nxt, t, fwd = right[n]  # the edge nxt -> n points along fwd, seen from the goal's side
        path.append((nxt, t, "backward" if fwd else "forward"))
        n = nxt
    return path


def _refs(pd: Pushdown, rowids: list[int]) -> dict[int, NodeRef]:
    return {int(r[0]): NodeRef(r[1], r[2], r[3]) for r in pd.node_rows(list(dict.fromkeys(rowids)))}


def pushdown_of(kg: Any) -> Pushdown | None:
    """The KG's pushdown queries when its engine pushes down, else None."""
    engine = kg.engine
    return engine.pd if isinstance(engine, PushdownEngine) else None
