"""/api/experts: expert CRUD, chat over SSE and conversations (spec/000 section 10)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/api/experts", tags=["experts"])
