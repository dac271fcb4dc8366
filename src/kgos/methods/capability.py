"""Method 3, ``can_it`` (capability check with limitations and workarounds), and ``why_not``
(what blocks a node), per spec/000 section 6 and the Flags Toolkit's --can-it / --why-not.

A node's limitations are the targets of its ``has_limitation`` edges. A workaround addresses a
limitation when ``limitation --has_workaround--> w`` or ``w --fixes|solves--> limitation``; a node's
own ``has_workaround`` targets address its limitations in general. Status:

* ``yes``: a matching node with no limitation;
* ``yes_with_limitations``: limitations, and workarounds for them;
* ``no``: limitations and no workaround at all, or the node says ``"no_workaround": true``;
* ``unknown``: no node contains at least 60% of the question's words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..store.validation import is_truthy
from .goal import text_signal
from .language import capability_text, goal_keywords
from .results import (
    BlockedPrerequisite,
    BlockerReport,
    CandidateStatus,
    CapabilityResult,
    LimitationInfo,
    NodeRef,
)
from .view import GraphView

if TYPE_CHECKING:
    from ..index.snapshot import Snapshot
    from ..store.base import GraphStore

CAPABILITY_TYPES = ("capability", "feature", "tool", "technique", "pattern", "model", "step")
PREFERRED_SHARE = 0.6  # a capability-like node within 60% of the best match is preferred over it
MIN_COVERAGE = 0.6  # share of the question's words a match must contain (2 of 3, both of 2)
CANDIDATES = 3
PREREQUISITE_TYPES = ("requires", "depends_on")


def out_targets(view: GraphView, row: int, edge_type: str) -> list[int]:
    nb = view.graph.neighbors_of(np.array([row]), "outgoing", edge_types=[edge_type])
    return list(dict.fromkeys(nb.node.tolist()))


def in_sources(view: GraphView, row: int, edge_types: list[str]) -> list[int]:
    nb = view.graph.neighbors_of(np.array([row]), "incoming", edge_types=edge_types)
    return list(dict.fromkeys(nb.node.tolist()))


def prerequisites(view: GraphView, row: int) -> list[int]:
    """What ``row`` requires or depends on, and what is declared a prerequisite of it."""
    nb = view.graph.neighbors_of(np.array([row]), "outgoing", edge_types=PREREQUISITE_TYPES)
    pre = view.graph.neighbors_of(np.array([row]), "incoming", edge_types=["prerequisite_of"])
    return list(dict.fromkeys(nb.node.tolist() + pre.node.tolist()))


def limitations(view: GraphView, row: int) -> tuple[list[tuple[int, list[int]]], list[int]]:
    """([(limitation, its workarounds)], the node's own workarounds)."""
    found = []
    for lim in out_targets(view, row, "has_limitation"):
        fixes = out_targets(view, lim, "has_workaround") + in_sources(view, lim, ["fixes", "solves"])
        found.append((lim, list(dict.fromkeys(fixes))))
    return found, out_targets(view, row, "has_workaround")


def status_of(lims: list[tuple[int, list[int]]], own: list[int], no_workaround: bool) -> str:
    if not lims:
        return "yes"
    if no_workaround or not (own or any(w for _, w in lims)):
        return "no"
    return "yes_with_limitations"


def coverage(snap: Snapshot, words: list[str], rows: np.ndarray) -> np.ndarray:
    """Share of ``words`` (known to the index) that each row's text contains."""
    cols = list(dict.fromkeys(c for c, _ in snap.text.query_terms(" ".join(words))))
    if not cols:
        return np.zeros(rows.size)
    m = snap.text.matrix
    hits = np.zeros(rows.size)
    for c in cols:
        hits += np.isin(rows, m.indices[m.indptr[c]:m.indptr[c + 1]])
    return hits / len(words)


def best_match(view: GraphView, snap: Snapshot, store: GraphStore, words: list[str]) -> tuple[list[int], np.ndarray]:
    """Matching rows best first (capability-like types preferred within 60% of the best score)."""
    text = text_signal(snap, store, " ".join(words)).astype(np.float64)
    cands = np.flatnonzero(text > 0)
    if cands.size == 0:
        return [], text
    cands = cands[coverage(snap, words, cands) >= MIN_COVERAGE]
    capable = view.type_rows(CAPABILITY_TYPES)[cands]
    top = float(text[cands].max()) if cands.size else 0.0
    preferred = capable & (text[cands] >= PREFERRED_SHARE * top)
    order = np.lexsort((cands, -text[cands], ~preferred))
    return [int(c) for c in cands[order][:CANDIDATES]], text


def can_it(view: GraphView, snap: Snapshot, store: GraphStore, question: str) -> CapabilityResult:
    """spec/000 method 3 (see the module docstring)."""
    capability = capability_text(question)
    words, _ = goal_keywords(capability)
    rows, text = best_match(view, snap, store, words) if words else ([], np.zeros(view.n))
    if not rows:
        return CapabilityResult(question, capability, "unknown", None, 0.0,
                                explanation=f"no node in the KG matches '{capability}'")
    nodes = store.get_nodes(view.node_ids[r] for r in rows)
    statuses = [_assess(view, r, nodes) for r in rows]
    row, (status, lims, own, pre) = rows[0], statuses[0]
    refs = _refs(view, store, [row] + [lim for lim, _ in lims] + [w for _, ws in lims for w in ws] + own + pre)
    infos = tuple(LimitationInfo(refs[lim], tuple(refs[w] for w in ws), not ws and not own) for lim, ws in lims)
    result = CapabilityResult(
        query=question, capability=capability, status=status, node=refs[row], match_score=float(text[row]),
        limitations=infos, workarounds=tuple(refs[w] for w in dict.fromkeys(own + [w for _, ws in lims for w in ws])),
        prerequisites=tuple(refs[p] for p in pre),
        candidates=tuple(CandidateStatus(view.ref(r), s[0], float(text[r])) for r, s in zip(rows[1:], statuses[1:])))
    return _explained(result)


def _assess(view: GraphView, row: int, nodes: dict[str, Any]) -> tuple[str, list, list[int], list[int]]:
    node = nodes.get(view.node_ids[row])
    lims, own = limitations(view, row)
    flag = bool(node is not None and is_truthy(node.properties.get("no_workaround")))
    return status_of(lims, own, flag), lims, own, prerequisites(view, row)


def _refs(view: GraphView, store: GraphStore, rows: list[int]) -> dict[int, NodeRef]:
    nodes = store.get_nodes(view.node_ids[r] for r in rows)
    out = {}
    for r in rows:
        n = nodes.get(view.node_ids[r])
        out[r] = NodeRef(n.id, n.name, n.type, n.description) if n is not None else view.ref(r)
    return out


def _explained(r: CapabilityResult) -> CapabilityResult:
    from dataclasses import replace
    name = r.node.name if r.node else r.capability
    texts = {"yes": f"{name} matches and has no recorded limitation",
             "yes_with_limitations": f"{name} matches, with {len(r.limitations)} limitation(s) and "
                                     f"{len(r.workarounds)} workaround(s)",
             "no": f"{name} matches but is blocked: its limitation(s) have no workaround"}
    return replace(r, explanation=texts.get(r.status, r.explanation))


def why_not(view: GraphView, store: GraphStore, row: int, depth: int = 3) -> BlockerReport:
    """What stands in ``row``'s way: its limitations (with or without workarounds), its
    prerequisites up to ``depth`` hops (flagging those with blocking limitations of their own),
    the nodes it conflicts with, and its declared alternatives."""
    node = store.get_node(view.node_ids[row])
    flag = bool(node is not None and is_truthy(node.properties.get("no_workaround")))
    lims, own = limitations(view, row)
    status = status_of(lims, own, flag)
    chain = _prerequisite_chain(view, row, depth)
    conflicts = list(dict.fromkeys(view.graph.neighbors_of(np.array([row]), "both", ["conflicts_with"]).node.tolist()))
    alts = list(dict.fromkeys(view.graph.neighbors_of(np.array([row]), "both", ["alternative_to"]).node.tolist()))
    rows = [row] + [l for l, _ in lims] + [w for _, ws in lims for w in ws] + own + [p for p, _ in chain] + conflicts + alts
    refs = _refs(view, store, rows)
    infos = tuple(LimitationInfo(refs[l], tuple(refs[w] for w in ws), not ws and not own) for l, ws in lims)
    blocked = tuple(BlockedPrerequisite(refs[p], d, tuple(view.ref(l) for l, ws in limitations(view, p)[0] if not ws))
                    for p, d in chain)
    return BlockerReport(node=refs[row], status=status, limitations=infos, workarounds=tuple(refs[w] for w in own),
                         prerequisites=blocked, conflicts=tuple(refs[c] for c in conflicts),
                         alternatives=tuple(refs[a] for a in alts),
                         reasons=_reasons(refs[row], status, infos, blocked, conflicts, flag))


def _prerequisite_chain(view: GraphView, row: int, depth: int) -> list[tuple[int, int]]:
    tree = view.graph.bfs_parents(row, "outgoing", depth, edge_types=PREREQUISITE_TYPES)
    return [(int(n), int(d)) for n, d in zip(tree.node[1:], tree.depth[1:])]


def _reasons(node: NodeRef, status: str, infos: tuple[LimitationInfo, ...], blocked: tuple[BlockedPrerequisite, ...],
             conflicts: list[int], flag: bool) -> tuple[str, ...]:
    reasons = [f"limitation without workaround: {i.node.name}" for i in infos if i.blocking]
    if flag and infos:
        reasons.append(f"{node.name} is marked no_workaround: its limitations cannot be worked around")
    reasons += [f"prerequisite {b.node.name} (depth {b.depth}) is itself limited by "
                f"{', '.join(x.name for x in b.blocking_limitations)}" for b in blocked if b.blocking_limitations]
    if conflicts:
        reasons.append(f"conflicts with {len(conflicts)} node(s): it cannot be combined with them")
    if not reasons:
        reasons.append("nothing blocks it: every limitation has a workaround" if infos else "nothing blocks it")
    return tuple(reasons)
