"""/api/memory: what the studio's memory view reads of the agent memory (spec/002): its stats and
recent memories, entity search in the memory KG, and the context block a query would inject.

Reads only: a workspace without a memory KG answers an empty state (``exists: false``) instead of
creating one, so a GET never writes.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ..memory import MemoryService
from . import models as m
from .errors import RESPONSES
from .kg import Rt, locked

router = APIRouter(prefix="/api/memory", tags=["memory"], responses=RESPONSES)
Text = Annotated[str, Query(min_length=1, max_length=m.MAX_TEXT)]


@router.get("")
def memory_overview(rt: Rt, limit: Annotated[int, Query(ge=1, le=200)] = 20) -> dict[str, Any]:
    """The memory KG's id, whether it exists, its stats and the ``limit`` most recent memories."""
    def read(ws: Any) -> dict[str, Any]:
        mem = MemoryService(ws)
        if not ws.exists(mem.db_id):
            return {"db_id": mem.db_id, "exists": False, "stats": None, "recent": []}
        return {"db_id": mem.db_id, "exists": True, "stats": mem.stats().to_dict(),
                "recent": [item.to_dict() for item in mem.recent(limit=limit)]}
    return locked(rt, read)


@router.get("/entities")
def memory_entities(rt: Rt, q: Text, limit: Annotated[int, Query(ge=1, le=200)] = 20) -> dict[str, Any]:
    """Entities of the memory KG matching ``q`` (1.0 exact, 0.7 partial, 0.5 word; spec/002)."""
    def read(ws: Any) -> dict[str, Any]:
        found, total = MemoryService(ws).search(q, limit=limit)
        return {"query": q, "total": total, "entities": [e.to_dict() for e in found]}
    return locked(rt, read)


@router.get("/context")
def memory_context(rt: Rt, q: Text) -> dict[str, Any]:
    """The context block the expert chat would inject for ``q``, with the entities and edges behind it."""
    return locked(rt, lambda ws: MemoryService(ws).context(q).to_dict())
