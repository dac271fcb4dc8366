"""/api/kgos: the KG-OS direct-access endpoints of spec/000 section 10 (debugging retrieval, trying
query methods), with the request and response shapes the spec gives, plus ``classify``.

The spec's shapes are built from the library's ``to_dict()`` documents: its field names first, and
the library's extra fields (notes, per-signal components...) kept beside them.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import AfterValidator

from ..kg import KG
from ..methods import CATALOG, CATEGORIES, classify_intent
from . import models as m
from .errors import RESPONSES
from .kg import DbId, NodeId, read_kg
from .runtime import Runtime, runtime

router = APIRouter(prefix="/api/kgos", tags=["kgos"], responses=RESPONSES)
Rt = Annotated[Runtime, Depends(runtime)]


# -- POST /api/kgos/query/{db_id} ---------------------------------------------------------------------------
@router.post("/query/{db_id}", response_model=m.SpecQueryOut)
def query(db_id: DbId, body: m.SpecQueryIn, rt: Rt) -> Any:
    """Run ``intent_search`` directly against a KG (spec/000 section 10)."""
    return read_kg(rt, db_id, lambda kg: spec_query(kg, body.query, spec_config(body.config)))


def spec_config(config: m.SpecConfig) -> dict[str, Any]:
    """spec/000's config -> the library's RetrievalConfig: alpha..delta -> weights, limit -> k,
    methods: named query methods route exactly; else ``intent`` (or no list) routes as classified,
    and ``hybrid`` alone runs no method."""
    w = (config.alpha, config.beta, config.gamma, config.delta)
    routes = [x for x in config.methods or () if x not in ("hybrid", "intent")]
    methods = routes if routes else None if config.methods is None or "intent" in config.methods else []
    return {"k": config.limit, "weights": None if all(x is None for x in w) else tuple(x or 0.0 for x in w),
            "intent": config.intent, "method_weight": config.method_weight, "methods": methods,
            "dimension_filters": config.dimension_filters, "max_depth": config.max_depth}


def spec_query(kg: KG, query: str, config: dict[str, Any]) -> dict[str, Any]:
    """The spec's response: intent, results (each node with its properties), total, query,
    composition_plan; then the rest of intent_search's document."""
    d = kg.intent_search(query, config).to_dict()
    hits = d.pop("nodes")
    nodes = kg.store.get_nodes(h["node"]["id"] for h in hits)
    results = [{**h, "node": {**h["node"], "properties": nodes[h["node"]["id"]].properties
                              if h["node"]["id"] in nodes else {}}} for h in hits]
    intent = d.pop("intent")
    return {"intent": {"category": intent["category"], "score": intent["score"]} if intent else None,
            "results": results, "total": len(results), "query": d.pop("query"),
            "composition_plan": d.pop("composition"), **d}


# -- POST /api/kgos/impact/{db_id}/{node_id} ------------------------------------------------------------------
@router.post("/impact/{db_id}/{node_id:path}", response_model=m.SpecImpactOut)
def impact(db_id: DbId, node_id: NodeId, body: m.SpecImpactIn, rt: Rt) -> Any:
    """Impact analysis of one node: risk by depth and the critical path (spec/000 section 10)."""
    return read_kg(rt, db_id, lambda kg: spec_impact(kg.impact_analysis(node_id, direction=body.direction,
                                                                       max_depth=body.max_depth).to_dict()))


def spec_impact(d: dict[str, Any]) -> dict[str, Any]:
    """``node_id`` and ``critical_path`` as ids, as the spec shows; the node refs stay beside them."""
    path = d.pop("critical_path")
    return {"node_id": d["node"]["id"], **d, "critical_path": [n["id"] for n in path], "critical_path_nodes": path}


# -- POST /api/kgos/compose/{db_id} -------------------------------------------------------------------------------
@router.post("/compose/{db_id}", response_model=m.SpecComposeOut, response_model_by_alias=True)
def compose(db_id: DbId, body: m.SpecComposeIn, rt: Rt) -> Any:
    """Composition planning for a multi-step goal (spec/000 section 10)."""
    return read_kg(rt, db_id, lambda kg: spec_plan(kg.compose_for(body.goal, max_tools=body.max_tools).to_dict()))


def spec_plan(d: dict[str, Any]) -> dict[str, Any]:
    """Steps as {order, tool, action, node_id}, edges as {from, to, type, validated} (by tool name),
    ``is_valid``; the library's fields kept beside them."""
    names = {s["node"]["id"]: s["node"]["name"] for s in d["steps"]}
    steps = [{"order": s["index"], "tool": s["node"]["name"], "action": s["sub_goal"], "node_id": s["node"]["id"],
              "node": s["node"], "score": s["score"], "candidates": s["candidates"]} for s in d["steps"]]
    edges = [{"from": names.get(e["source"], e["source"]), "to": names.get(e["target"], e["target"]), "type": e["type"],
              "validated": e["status"] in ("direct", "via"), **e} for e in d["edges"]]
    return {"goal": d["goal"], "steps": steps, "edges": edges, "prerequisites": d["prerequisites"],
            "warnings": d["warnings"], "is_valid": d["valid"], "sub_goals": d["sub_goals"],
            "conflicts": d["conflicts"], "alternatives": d["alternatives"], "notes": d["notes"]}


# -- POST /api/kgos/similar/{db_id}/{node_id} ------------------------------------------------------------------------
@router.post("/similar/{db_id}/{node_id:path}", response_model=m.SpecSimilarOut)
def similar(db_id: DbId, node_id: NodeId, body: m.SpecSimilarIn, rt: Rt) -> Any:
    """Structurally similar nodes (spec/000 section 10)."""
    def run(kg: KG) -> Any:
        d = kg.similar_to(node_id, k=body.k).to_dict()
        return {"source_node": d["node"], "similar": d["results"]}
    return read_kg(rt, db_id, run)


# -- GET /api/kgos/dimensions, /api/kgos/classify ------------------------------------------------------
@router.get("/dimensions", response_model=m.DimensionsOut)
def dimensions() -> Any:
    """The 56 standard semantic dimensions, with what their low and high ends mean."""
    dims = [{"name": d.name, "category": d.category, "description": d.description, "low_description": d.low,
             "high_description": d.high, "range": [0.0, 1.0]} for d in CATALOG]
    counts = Counter(d.category for d in CATALOG)
    return {"dimensions": dims, "total": len(dims), "categories": {c: counts[c] for c in CATEGORIES}}


@router.get("/classify", response_model=m.Classification)
def classify(query: Annotated[str, Query(min_length=1, max_length=m.MAX_TEXT),
                              AfterValidator(m.nonblank("query"))]) -> Any:
    """Classify a query into the 14 KG-OS intent categories (method 8) and the retrieval intent,
    and name the query methods ``intent_search`` would route it to. Needs no KG."""
    return classify_intent(query).to_dict()
