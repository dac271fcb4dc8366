"""/api/links: edges between nodes of two KGs (``kg:node`` at each end), and the trace that follows
them (docs/learning.md, "Cross-KG edges")."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from ..kg.links import MAX_DEPTH, CrossLinks
from .runtime import Runtime, runtime

router = APIRouter(tags=["cross-kg"])
RT = Annotated[Runtime, Depends(runtime)]
Ref = Annotated[str, Query(min_length=3, max_length=600, description="KG:NODE, e.g. demo:goal:cost_reduction")]


class LinkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str = Field(min_length=3, max_length=600, description="KG_A:NODE (a node id or unambiguous name)")
    target: str = Field(min_length=3, max_length=600, description="KG_B:NODE")
    type: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_]+$")
    weight: float = Field(1.0, gt=0, le=1e6)


@router.post("/api/links", status_code=201, summary="Add a cross-KG edge (an update keeps the max weight)")
def add_link(body: LinkIn, rt: RT) -> dict[str, Any]:
    with rt.lock:
        return CrossLinks(rt.workspace).add(body.source, body.target, body.type, body.weight).to_dict()


@router.get("/api/links", summary="The cross-KG edges (of one KG)")
def list_links(rt: RT, kg: Annotated[str | None, Query(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")] = None,
               limit: Annotated[int, Query(ge=1, le=10_000)] = 1_000) -> dict[str, Any]:
    with rt.lock:
        return {"links": [e.to_dict() for e in CrossLinks(rt.workspace).list(kg, limit)]}


@router.delete("/api/links", summary="Delete a cross-KG edge")
def delete_link(source: Ref, target: Ref, type: Annotated[str, Query(pattern=r"^[A-Za-z0-9_]{1,64}$")],
                rt: RT) -> dict[str, Any]:
    with rt.lock:
        CrossLinks(rt.workspace).delete(source, target, type)
    return {"deleted": True}


@router.get("/api/trace", summary="Shortest path between nodes of any KGs, following cross-KG edges")
def trace_across(source: Ref, target: Ref, rt: RT,
                 max_depth: Annotated[int, Query(ge=1, le=MAX_DEPTH)] = 5) -> dict[str, Any]:
    with rt.lock:
        return CrossLinks(rt.workspace).trace(source, target, max_depth).to_dict()
