"""Method 1, ``intent_search``: the orchestrator of spec/000 section 6.

1. ``classify_intent`` (the 14 categories) and the retrieval intent (spec/001 1.3) choose routes:
   want_to for goals, can_it for capability questions, compose_for for multi-step goals,
   impact_analysis / similar_to (with declared alternatives) / explore_smart for impact, comparison
   and exploration queries, starting from the best text match of the query without its trigger
   words ("alternatives to streaming" starts from streaming).
2. ``kg.search`` gives the 4-weight hybrid score of every candidate (spec/000 section 7).
3. Merge: ``score = (1 - method_weight) x hybrid / max(hybrid) + method_weight x method``, where
   ``method`` is the best 0..1 score any routed method gave the node (a plan step 1.0, a can_it
   match 1.0 and its workarounds 0.8, want_to scores over their maximum, ...). With no route the
   hybrid order stands.
4. Dimension filters of the config are pre-filters: the hybrid search scores only the nodes that
   meet them (a row mask over the snapshot), and routed methods' nodes that miss them are dropped.
5. The top ``expand_top`` (3) hits are expanded with their strongest edges (``edges``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument
from ..retrieval.intents import DEFAULT_EDGE_TYPE_WEIGHT, EDGE_TYPE_WEIGHTS
from . import capability, compose, dimensions, goal, structure
from .intent import CATEGORIES, ROUTE_ORDER, classify_intent
from .language import goal_keywords
from .results import IntentHit, IntentSearchResult, NodeRef, ResultEdge, SimilarResult
from .view import GraphView, check_k

if TYPE_CHECKING:
    from .source import KGSource


_TRIGGER_FILLER = frozenset("to of for on from about what is are does do the if i change my".split())


@dataclass(frozen=True)
class RetrievalConfig:
    """How ``intent_search`` retrieves (an expert's retrieval config of spec/000 section 8).

    ``weights``: explicit alpha, beta, gamma, delta (None: the intent's profile); ``intent``: force
    a retrieval intent; ``methods``: the routes to run (None: as classified); ``dimension_filters``:
    {dimension: {min, max, exact, gt, lt}} every result must meet.
    """

    k: int = 10
    weights: Any = None
    intent: str | None = None
    method_weight: float = 0.4
    methods: tuple[str, ...] | None = None
    dimension_filters: Mapping[str, Any] | None = None
    expand_top: int = 3
    expand_edges: int = 5
    max_depth: int = 2

    @classmethod
    def of(cls, config: Any) -> RetrievalConfig:
        """A config from None, a RetrievalConfig or a mapping of its fields (unknown keys: an error)."""
        if config is None:
            return cls()
        if isinstance(config, cls):
            return config
        if not isinstance(config, Mapping):
            raise InvalidArgument(f"config must be a RetrievalConfig or a mapping, not {type(config).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise InvalidArgument(f"unknown config key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        values = dict(config)
        if values.get("methods") is not None:
            values["methods"] = tuple(values["methods"])
        return cls(**values)

    def checked(self) -> RetrievalConfig:
        check_k(self.k)
        if not 0.0 <= float(self.method_weight) <= 1.0:
            raise InvalidArgument(f"method_weight must be between 0 and 1, not {self.method_weight!r}")
        bad = [m for m in self.methods or () if m not in ROUTE_ORDER]
        if bad:
            raise InvalidArgument(f"unknown method(s) {', '.join(bad)}; choose from {', '.join(ROUTE_ORDER)}")
        if self.dimension_filters is not None:
            dimensions.check_filters(self.dimension_filters)
        return self


def intent_search(kg: KGSource, query: str, config: Any = None) -> IntentSearchResult:
    """spec/000 method 1 (see the module docstring)."""
    t0 = time.perf_counter()
    cfg = RetrievalConfig.of(config).checked()
    cls = classify_intent(query)
    routes = cfg.methods if cfg.methods is not None else cls.routes
    # Dimension filters are pre-filters (spec/000 section 8): the hybrid scores only matching nodes.
    prefilter = dimensions.prefilter(kg.store, cfg.dimension_filters) if cfg.dimension_filters else None
    hybrid = kg.engine.search(cls.query, k=max(cfg.k * 3, 30), weights=cfg.weights, intent=cfg.intent,
                              prefilter=prefilter)
    snap = kg.engine.snapshot()
    view = kg.view(snap)  # of this very snapshot: a write may land between two acquisitions
    target = _target(view, snap, kg.store, cls, hybrid)
    subs, scores, notes = _run_routes(kg, view, snap, cls.query, routes, target, cfg)
    hits = _merge(kg, view, hybrid, scores, cfg)
    edges = _expand(view, [view.index[h.node.id] for h in hits[:cfg.expand_top]], cfg.expand_edges)
    w = hybrid.weights
    return IntentSearchResult(
        query=cls.query, intent=cls.top, intents=cls.intents, retrieval_intent=hybrid.intent.name, routes=tuple(routes),
        weights={"alpha": w.embedding, "beta": w.text, "gamma": w.graph, "delta": w.intent,
                 "method": cfg.method_weight if scores else 0.0},
        nodes=hits, edges=edges, took_ms=(time.perf_counter() - t0) * 1000, notes=tuple(notes) + hybrid.notes,
        warnings=hybrid.warnings, **subs)


def _run_routes(kg: KGSource, view: GraphView, snap: Any, query: str, routes: tuple[str, ...], target: int | None,
                cfg: RetrievalConfig) -> tuple[dict[str, Any], dict[str, dict[str, float]], list[str]]:
    """Run each routed method: (sub-results by result field, {method: {node id: 0..1}}, notes)."""
    subs: dict[str, Any] = {}
    scores: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    store = kg.store
    for route in routes:
        if route == "want_to":
            subs["goal"] = res = goal.want_to(view, snap, store, query, cfg.k * 3)
            top = max((h.score for h in res.results), default=0.0) or 1.0
            scores[route] = {h.node.id: h.score / top for h in res.results}
        elif route == "can_it":
            subs["capability"] = cap = capability.can_it(view, snap, store, query)
            scores[route] = _capability_scores(cap)
        elif route == "compose_for":
            subs["composition"] = plan = compose.compose(view, snap, store, query, 5)
            scores[route] = {**{p.node.id: 0.4 for p in plan.prerequisites},
                             **{a.node.id: 0.6 for a in plan.alternatives}, **{s.node.id: 1.0 for s in plan.steps}}
        elif target is None:
            notes.append(f"{route} skipped: no node matches the query to start from")
        else:
            scores[route] = _structural(view, store, route, target, cfg, subs)
    return subs, scores, notes


def _target(view: GraphView, snap: Any, store: Any, cls: Any, hybrid: Any) -> int | None:
    """The node a structural route starts from: the best text match of the query without its
    trigger words ("alternatives to streaming" -> streaming), else the best hybrid hit."""
    text = cls.query.lower()
    if cls.top is not None:
        phrases, keywords = CATEGORIES[cls.top.category]
        for word in (*phrases, *keywords):
            text = re.sub(rf"\b{re.escape(word)}\w*", " ", text)
    words, _ = goal_keywords(text)
    words = [w for w in words if w not in _TRIGGER_FILLER]
    if words:
        # a node named by the query's words beats a longer text that merely mentions them
        scores = goal.text_signal(snap, store, " ".join(words)) + view.name_match(words)
        if scores.size and scores.max() > 0:
            return int(np.argmax(scores))
    return view.index.get(hybrid.results[0].node.id) if hybrid.results else None


def _blocker_scores(report: Any) -> dict[str, float]:
    """A debugging answer: the workarounds first, then the limitations they fix, then prerequisites."""
    found = {p.node.id: 0.5 for p in report.prerequisites}
    found.update({lim.node.id: 0.6 for lim in report.limitations})
    found.update({w.id: 0.8 for lim in report.limitations for w in lim.workarounds})
    found.update({w.id: 0.8 for w in report.workarounds})
    return found


def _capability_scores(cap: Any) -> dict[str, float]:
    found: dict[str, float] = {}
    for refs, value in ((cap.prerequisites, 0.5), ([l.node for l in cap.limitations], 0.6), (cap.workarounds, 0.8)):
        found.update({r.id: value for r in refs})
    if cap.node is not None:
        found[cap.node.id] = 1.0
    return found


def _structural(view: GraphView, store: Any, route: str, row: int, cfg: RetrievalConfig,
                subs: dict[str, Any]) -> dict[str, float]:
    root = {view.node_ids[row]: 1.0}
    if route == "impact_analysis":
        subs["impact"] = res = structure.impact(view, row, "both", cfg.max_depth)
        top = max((n.risk for lvl in res.risk_by_depth.values() for n in lvl), default=0.0) or 1.0
        return {**{n.node.id: n.risk / top for lvl in res.risk_by_depth.values() for n in lvl}, **root}
    if route in ("similar_to", "alternatives"):
        alts = structure.alternatives(view, row, cfg.k)
        if route == "similar_to":
            subs["similar"] = SimilarResult(view.ref(row), alts.structural)
        else:
            subs["alternatives"] = alts
        return {**{r.node.id: r.score for r in alts.structural}, **{a.node.id: 0.9 for a in alts.explicit}, **root}
    if route == "why_not":
        subs["blockers"] = report = capability.why_not(view, store, row)
        return {**_blocker_scores(report), **root}
    subs["exploration"] = tree = structure.explore(view, row, cfg.max_depth)
    return {**{n.node.id: n.rank_score / (n.depth + 1) for lvl in tree.levels for n in lvl.nodes}, **root}


def _merge(kg: KGSource, view: GraphView, hybrid: Any, scores: dict[str, dict[str, float]],
           cfg: RetrievalConfig) -> tuple[IntentHit, ...]:
    top = max((h.score for h in hybrid.results), default=0.0) or 1.0
    base = {h.node.id: h for h in hybrid.results}
    ids = list(dict.fromkeys([*base, *(i for s in scores.values() for i in s)]))
    mw = float(cfg.method_weight) if scores else 0.0
    final = {i: (1 - mw) * (base[i].score / top if i in base else 0.0)
             + mw * max((s.get(i, 0.0) for s in scores.values()), default=0.0) for i in ids}
    nodes = kg.store.get_nodes(ids)
    if cfg.dimension_filters:
        wanted = dimensions.check_filters(cfg.dimension_filters)
        ids = [i for i in ids if i in nodes and dimensions.matches(nodes[i].properties, wanted)]
    ranked = sorted((i for i in ids if i in nodes and final[i] > 0), key=lambda i: (-final[i], i))[:cfg.k]
    return tuple(_hit(rank, nodes[i], final[i], base.get(i), {m: s[i] for m, s in scores.items() if i in s})
                 for rank, i in enumerate(ranked, 1))


def _hit(rank: int, node: Any, score: float, hybrid_hit: Any, method_scores: dict[str, float]) -> IntentHit:
    components = hybrid_hit.components.to_dict() if hybrid_hit is not None else {s: 0.0 for s in ("embedding", "text", "graph", "intent")}
    tags = [hybrid_hit.method] if hybrid_hit is not None and hybrid_hit.method != "none" else []
    annotations = tuple(ResultEdge(a.source, a.target, a.type) for a in hybrid_hit.edge_annotations) if hybrid_hit else ()
    return IntentHit(rank=rank, node=NodeRef(node.id, node.name, node.type, node.description), score=score,
                     components=components, method_scores=method_scores, method="+".join(tags + list(method_scores)) or "none",
                     edge_annotations=annotations)


def _expand(view: GraphView, rows: list[int], per_node: int) -> tuple[ResultEdge, ...]:
    """Each row's strongest edges (spec/001 1.6 type weights, then edge order), both directions."""
    if not rows:
        return ()
    weights = view.graph.type_weight_vector(EDGE_TYPE_WEIGHTS, DEFAULT_EDGE_TYPE_WEIGHT)
    edges: list[ResultEdge] = []
    for row in rows:
        nb = view.graph.neighbors_of(np.array([row]), "both")
        order = np.lexsort((nb.edge, -weights[nb.edge_type]))[:per_node]
        for j in order:
            s, t = (row, int(nb.node[j])) if nb.src_side[j] else (int(nb.node[j]), row)
            edges.append(ResultEdge(view.node_ids[s], view.node_ids[t], view.graph.types[int(nb.edge_type[j])],
                                    view.names[s], view.names[t]))
    return tuple(dict.fromkeys(edges))
