"""Impact analysis and path tracing of a PostgreSQL KG in pushdown mode (docs/postgres.md "Pushdown"):
impact a BFS of one indexed query per level, path tracing a bidirectional BFS of indexed hops; both return the
in-memory methods' result types. Search in the database is ``retrieval.pushdown``."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..retrieval.pushdown import PushdownEngine
from ..store.postgres_pushdown import LastLevel, Pushdown
from .results import ImpactedNode, ImpactResult, NodeRef, PathResult, PathStep

# -- the graph methods ---------------------------------------------------------------------------------
_DIRECTION = {"forward": "forward", "backward": "backward", "both": "both",
              "outgoing": "forward", "incoming": "backward"}


def impact(pd: Pushdown, ref: NodeRef, direction: str, max_depth: int, per_depth: int,
           notes: tuple[str, ...] = ()) -> ImpactResult:
    """Method 6 in the database: a BFS of one indexed query per level (duplicates dropped there), the
    deepest level ranked there too; risk = 1/depth x weight x criticality (edge count / the KG's
    largest), ranked and cut per depth, and the critical path, as in memory."""
    with pd.session():
        return _impact(pd, ref, direction, max_depth, per_depth, notes)


_NOTE = "pushdown: {} indexed queries in PostgreSQL (one per level, the deepest ranked there)"
# a reached node: node, parent, edge type, weight, forward, degree, risk, cumulative risk (rowids)
Reached = tuple[int, int, str, float, bool, int, float, float]


def _impact(pd: Pushdown, ref: NodeRef, direction: str, max_depth: int, per_depth: int,
            notes: tuple[str, ...]) -> ImpactResult:
    top = pd.top_degree()
    levels, last = _walk(pd, pd.rowids_of([ref.id])[ref.id], _DIRECTION.get(direction, direction), max_depth,
                         per_depth, top)
    counts = {d: len(lv) for d, lv in enumerate(levels) if d}
    listed: dict[int, list[Any]] = {d: sorted(lv, key=lambda r: (-r[6], r[0]))[:per_depth]
                                    for d, lv in enumerate(levels) if d}
    traversed = Counter(r[2] for lv in levels[1:] for r in lv)
    if last is not None and last.count:
        counts[len(levels)], listed[len(levels)] = last.count, last.top
        traversed.update(last.types)
    path = _critical_path(levels, last)
    refs = _refs(pd, path + [r[i] for rows in listed.values() for r in rows for i in (0, 1)])
    by_depth = {d: tuple(ImpactedNode(
        node=refs[r[0]], depth=d, risk=r[6], parent=refs[r[1]].id, edge_type=r[2],
        direction="forward" if r[4] else "backward", weight=r[3], criticality=r[5] / top if top else 0.0)
        for r in rows) for d, rows in listed.items()}
    return ImpactResult(node=ref, direction=direction, max_depth=max_depth, total_impacted=sum(counts.values()),
                        counts_by_depth=counts, risk_by_depth=by_depth, critical_path=tuple(refs[n] for n in path),
                        edge_types_traversed=dict(sorted(traversed.items(), key=lambda kv: (-kv[1], kv[0]))),
                        truncated=any(n > per_depth for n in counts.values()),
                        notes=notes + (_NOTE.format(len(counts)),))


def _walk(pd: Pushdown, root: int, way: str, max_depth: int, per_depth: int,
          top: int) -> tuple[list[list[Reached]], LastLevel | None]:
    """The BFS levels above the deepest (every node, in node order) and the deepest as the database
    summarises it (None when the walk ended before it). Each level is refused before it runs when its
    frontier's edges pass the bound."""
    levels: list[list[Reached]] = [[(root, -1, "", 1.0, True, pd.degree_of(root), 0.0, 0.0)]]
    seen = [root]
    for d in range(1, max_depth + 1):
        front = levels[-1]
        pd.check_hop(sum(r[5] for r in front), d, max_depth)
        ids = [r[0] for r in front]
        if d == max_depth:  # most reached nodes are here: ranked in SQL, never sent
            return levels, pd.last_level(ids, [r[7] for r in front], seen, way, d, top, per_depth)
        rows = pd.level(ids, seen, way)
        if not rows:
            break
        cum = {r[0]: r[7] for r in front}
        levels.append([(n, p, t, w, f, g, risk, risk + cum[p]) for n, p, t, w, f, g in rows
                       for risk in (_risk(w, g, top, d),)])
        seen += [r[0] for r in rows]
    return levels, None


def _risk(weight: float, degree: int, top: int, depth: int) -> float:
    """The in-memory formula on the same floats: the weight as float32 (the graph's arrays hold it so;
    ``last_level`` casts it the same way), criticality = degree / the largest degree."""
    return float(np.float32(weight)) * (degree / top if top else 0.0) / depth


def _critical_path(levels: list[list[Reached]], last: LastLevel | None) -> list[int]:
    """Root to the node of the highest cumulative risk (ties: the shallower, then the lower node), as
    ``structure.critical_path`` chooses it."""
    cum, _, node = min((-r[7], d, r[0]) for d, lv in enumerate(levels) for r in lv)
    parent = {r[0]: r[1] for lv in levels for r in lv}
    tail: list[int] = []
    if last is not None and last.best is not None and last.best[6] > -cum:
        tail, node = [last.best[0]], last.best[1]
    path = [node]
    while parent[path[-1]] >= 0:
        path.append(parent[path[-1]])
    return path[::-1] + tail


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
