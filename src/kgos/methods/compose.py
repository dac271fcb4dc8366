"""Method 4, ``compose_for``: decompose a goal, pick a node per sub-goal, validate the chain through
``feeds_into`` / ``requires`` / ``conflicts_with`` edges (spec/000 section 6).

1. Sub-goals: ``language.decompose`` (conjunctions and commas, kept only where an action verb leads
   the clause; "X after Y" runs Y first). A goal with no verb is one step, with a warning.
2. Per sub-goal, ``want_to(sub_goal, k=3)``; the pick prefers concrete node types (tool, feature,
   technique, pattern, step, workaround, model) over abstractions (capability, goal, use case) and, among candidates within 70% of the best, one the
   previous step feeds into.
3. Validation between consecutive steps: a direct ``feeds_into`` edge, else a ``feeds_into`` chain
   of at most 3 edges (bounded BFS, so cycles in ``feeds_into`` cannot loop), else the reverse
   direction (a warning about the order), else missing (a warning). ``requires`` / ``depends_on``
   up to 2 hops gives the prerequisites the plan does not contain. Any ``conflicts_with`` edge
   between two steps is a conflict; the conflicting step's ``alternative_to`` neighbours that
   conflict with no other step are offered as alternatives.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from .goal import want_to
from .language import decompose, leads_with_verb, strip_prefix
from .results import Alternative, CompositionPlan, PlanEdge, PlanStep, Prerequisite
from .view import GraphView

if TYPE_CHECKING:
    from ..index.snapshot import Snapshot
    from ..store.base import GraphStore

ACTIONABLE = ("tool", "feature", "technique", "pattern", "step", "workaround", "model")  # concrete things to run
CANDIDATES = 3
LINK_SHARE = 0.7  # a candidate fed by the previous step wins if within 70% of the best score
CHAIN_DEPTH = 3
PREREQUISITE_DEPTH = 2
MAX_TOOLS_CAP = 20


def compose(view: GraphView, snap: Snapshot, store: GraphStore, goal: str, max_tools: int) -> CompositionPlan:
    """spec/000 method 4 (see the module docstring)."""
    sub_goals, warnings = _sub_goals(goal, max_tools)
    steps: list[PlanStep] = []
    for sub in sub_goals:
        step = _pick(view, snap, store, sub, len(steps) + 1, steps[-1] if steps else None, steps)
        if step is None:
            warnings.append(f"no node matches sub-goal '{sub}': it is left out of the plan")
            continue
        steps.append(step)
    edges = [_link(view, a.node.id, b.node.id) for a, b in pairwise(steps)]
    warnings += [_edge_warning(view, e) for e in edges if e.status != "direct"]
    conflicts = _conflicts(view, steps)
    alternatives = _alternatives(view, steps, conflicts)
    warnings += [f"{c.source} conflicts_with {c.target}: they cannot run in the same plan" for c in conflicts]
    prereqs = _prerequisites(view, steps)
    if prereqs:
        warnings.append(f"{len(prereqs)} prerequisite(s) not in the plan: {', '.join(p.node.id for p in prereqs)}")
    valid = bool(steps) and all(e.status in ("direct", "via") for e in edges) and not conflicts
    return CompositionPlan(goal=goal, sub_goals=tuple(sub_goals), steps=tuple(steps), edges=tuple(edges),
                           prerequisites=tuple(prereqs), conflicts=tuple(conflicts), warnings=tuple(warnings),
                           alternatives=tuple(alternatives), valid=valid)


def _sub_goals(goal: str, max_tools: int) -> tuple[list[str], list[str]]:
    parts = decompose(goal) or [strip_prefix(goal)]
    warnings = []
    if not any(leads_with_verb(p) for p in parts):
        warnings.append("no action verb in the goal: planned as a single step (write it as "
                        "'read X, analyze Y and generate Z' for a multi-step plan)")
    if len(parts) > max_tools:
        warnings.append(f"{len(parts)} sub-goals, max_tools={max_tools}: the last "
                        f"{len(parts) - max_tools} are left out")
        parts = parts[:max_tools]
    return parts, warnings


def _pick(view: GraphView, snap: Snapshot, store: GraphStore, sub: str, index: int, previous: PlanStep | None,
          taken: list[PlanStep]) -> PlanStep | None:
    used = {s.node.id for s in taken}
    hits = [h for h in want_to(view, snap, store, sub, CANDIDATES + len(used)).results if h.node.id not in used]
    actionable = [h for h in hits if h.node.type in ACTIONABLE]
    pool = (actionable or hits)[:CANDIDATES]
    if not pool:
        return None
    best = pool[0]
    if previous is not None:
        fed = [h for h in pool if h.score >= LINK_SHARE * best.score and _feeds(view, previous.node.id, h.node.id)]
        best = fed[0] if fed else best
    others = tuple(h.node for h in pool if h is not best)
    return PlanStep(index=index, sub_goal=sub, node=best.node, score=best.score, candidates=others)


def _feeds(view: GraphView, a: str, b: str, depth: int = CHAIN_DEPTH) -> list[int] | None:
    """The rows of a shortest feeds_into chain a -> b of at most ``depth`` edges, or None."""
    path = view.graph.shortest_path(view.row(a), view.row(b), max_depth=depth, direction="outgoing",
                                    edge_types=["feeds_into"])
    return [p[0] for p in path] if path is not None else None


def _link(view: GraphView, a: str, b: str) -> PlanEdge:
    chain = _feeds(view, a, b)
    if chain is not None:
        via = tuple(view.node_ids[r] for r in chain[1:-1])
        return PlanEdge(a, b, "feeds_into", "via" if via else "direct", via)
    if _feeds(view, b, a) is not None:
        return PlanEdge(a, b, "feeds_into", "reversed")
    return PlanEdge(a, b, "feeds_into", "missing")


def _edge_warning(view: GraphView, e: PlanEdge) -> str:
    if e.status == "via":
        return f"{e.source} reaches {e.target} only through {' -> '.join(e.via)}: consider adding those steps"
    if e.status == "reversed":
        return f"{e.target} feeds into {e.source}, not the other way: check the order of the steps"
    return f"no feeds_into link from {e.source} to {e.target}: check that one's output suits the other"


def _conflicts(view: GraphView, steps: list[PlanStep]) -> list[PlanEdge]:
    rows = np.array([view.row(s.node.id) for s in steps], np.int64)
    if rows.size < 2:
        return []
    nb = view.graph.neighbors_of(rows, "outgoing", edge_types=["conflicts_with"])
    hit = np.isin(nb.node, rows)
    pairs = dict.fromkeys((view.node_ids[o], view.node_ids[t]) for o, t in zip(nb.origin[hit], nb.node[hit]))
    return [PlanEdge(a, b, "conflicts_with", "conflict") for a, b in pairs]


def _alternatives(view: GraphView, steps: list[PlanStep], conflicts: list[PlanEdge]) -> list[Alternative]:
    """For each step in a conflict, its alternative_to neighbours that conflict with no other step."""
    in_plan = {s.node.id for s in steps}
    found: list[Alternative] = []
    for step_id in dict.fromkeys(x for c in conflicts for x in (c.source, c.target)):
        others = in_plan - {step_id}
        alts = view.graph.neighbors_of(np.array([view.row(step_id)]), "both", edge_types=["alternative_to"]).node
        for alt in dict.fromkeys(alts.tolist()):
            if view.node_ids[alt] in in_plan:
                continue
            clash = view.graph.neighbors_of(np.array([alt]), "both", edge_types=["conflicts_with"]).node
            if not any(view.node_ids[c] in others for c in clash.tolist()):
                found.append(Alternative(step_id, view.ref(alt), f"alternative_to {step_id}, no conflict with the plan"))
    return found


def _prerequisites(view: GraphView, steps: list[PlanStep]) -> list[Prerequisite]:
    """requires / depends_on targets of the steps (up to 2 hops) that the plan does not contain,
    deepest first: those have to be in place before anything else."""
    in_plan = {s.node.id for s in steps}
    needed: dict[int, tuple[list[str], int]] = {}
    for step in steps:
        tree = view.graph.bfs_parents(view.row(step.node.id), "outgoing", PREREQUISITE_DEPTH,
                                      edge_types=["requires", "depends_on"])
        for node, depth in zip(tree.node[1:].tolist(), tree.depth[1:].tolist()):
            if view.node_ids[node] in in_plan:
                continue
            users, best = needed.get(node, ([], depth))
            users.append(step.node.id)
            needed[node] = (users, min(best, depth))
    order = sorted(needed, key=lambda r: (-needed[r][1], view.node_ids[r]))
    return [Prerequisite(view.ref(r), tuple(dict.fromkeys(needed[r][0])), needed[r][1]) for r in order]
