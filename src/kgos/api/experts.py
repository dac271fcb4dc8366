"""/api/experts: expert CRUD, chat over SSE and conversations (spec/000 section 10), plus the
playbooks experts can inject (/api/playbooks).

The chat stream is produced by ``ExpertChat.events`` in a worker thread and handed to the
response through an asyncio queue: when the client goes away the response is cancelled, the
worker sees ``cancel`` set, the provider stops and the partial answer is still saved.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from ..experts import ExpertConfig, ExpertService
from ..experts.ab import ABService
from ..experts.chat import MAX_QUERY_CHARS, ExpertChat, Turn
from ..experts.feedback import MAX_COMMENT_CHARS, TURN_RE, FeedbackService
from ..experts.drift import drift
from ..experts.gaps import GapDetector
from ..experts.playbooks import PlaybookLibrary, split_sections
from ..experts.store import ID_RE
from ..kg.workspace import check_db_id
from ..llm.base import ProviderError
from .runtime import Runtime, runtime
from .turns import sse_frame, stream_events
from .streams import bounded

log = logging.getLogger(__name__)
router = APIRouter(tags=["experts"])

ExpertId = Annotated[str, Path(pattern=ID_RE.pattern, description="expert id")]
ConversationId = Annotated[str, Path(pattern=ID_RE.pattern, description="conversation id")]
RT = Annotated[Runtime, Depends(runtime)]


# -- request and response models ----------------------------------------------------------------------
class ExpertCreate(ExpertConfig):
    """An expert config (spec/000 section 8); ``id`` is optional (default: expert_<name slug>)."""

    id: str | None = Field(None, pattern=ID_RE.pattern)


class Created(BaseModel):
    id: str
    name: str
    created_at: str


class Deleted(BaseModel):
    deleted: bool
    conversations_deleted: int | None = None


class DuplicateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    new_name: str | None = Field(None, min_length=1, max_length=200)
    overrides: dict[str, Any] = Field(default_factory=dict)


class ImportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    document: dict[str, Any] = Field(description="an exported expert ({format: kgos-expert/1, expert: {...}}) "
                                                 "or a bare expert config")
    id: str | None = Field(None, pattern=ID_RE.pattern)
    replace: bool = False


class HistoryItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant", "model"]
    content: str = Field(max_length=MAX_QUERY_CHARS)


class ChatRequest(BaseModel):
    """spec/000's chat body. ``history`` replaces the stored conversation as context when given;
    ``stream: false`` answers with one JSON document instead of SSE."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S")
    conversation_id: str | None = Field(None, pattern=ID_RE.pattern)
    history: list[HistoryItem] | None = Field(None, max_length=100)
    provider: str | None = Field(None, max_length=200)
    model: str | None = Field(None, max_length=200)
    stream: bool = True


# -- CRUD -------------------------------------------------------------------------------------------
def _service(rt: Runtime) -> ExpertService:
    return ExpertService(rt.workspace)


@router.get("/api/experts", summary="List experts")
def list_experts(rt: RT) -> list[dict[str, Any]]:
    with rt.lock:
        return [s.to_dict() for s in _service(rt).list()]


@router.post("/api/experts", status_code=201, response_model=Created, summary="Create an expert")
def create_expert(body: ExpertCreate, rt: RT) -> Created:
    config = body.model_dump(exclude={"id"})
    with rt.lock:
        e = _service(rt).create(config, body.id)
    return Created(id=e.id, name=e.config.name, created_at=e.created_at)


@router.post("/api/experts/import", status_code=201, response_model=Created, summary="Import an exported expert")
def import_expert(body: ImportRequest, rt: RT) -> Created:
    with rt.lock:
        e = _service(rt).import_(body.document, body.id, body.replace)
    return Created(id=e.id, name=e.config.name, created_at=e.created_at)


@router.get("/api/experts/{expert_id}", summary="Get an expert's full config")
def get_expert(expert_id: ExpertId, rt: RT) -> dict[str, Any]:
    with rt.lock:
        return _service(rt).get(expert_id).to_dict()


@router.put("/api/experts/{expert_id}", summary="Update an expert (partial: JSON merge patch)")
def update_expert(expert_id: ExpertId, rt: RT,
                  patch: Annotated[dict[str, Any], Body(description="fields to change; null removes")]) -> dict[str, Any]:
    with rt.lock:
        return _service(rt).update(expert_id, patch).to_dict()


@router.delete("/api/experts/{expert_id}", response_model=Deleted, summary="Delete an expert")
def delete_expert(expert_id: ExpertId, rt: RT, delete_conversations: bool = False) -> dict[str, Any]:
    with rt.lock:
        return _service(rt).delete(expert_id, delete_conversations)


@router.post("/api/experts/{expert_id}/duplicate", status_code=201, response_model=Created,
             summary="Duplicate an expert with overrides")
def duplicate_expert(expert_id: ExpertId, body: DuplicateRequest, rt: RT) -> Created:
    with rt.lock:
        e = _service(rt).duplicate(expert_id, body.new_name, body.overrides)
    return Created(id=e.id, name=e.config.name, created_at=e.created_at)


@router.get("/api/experts/{expert_id}/export", summary="Export an expert as portable JSON")
def export_expert(expert_id: ExpertId, rt: RT) -> dict[str, Any]:
    with rt.lock:
        return _service(rt).export(expert_id)


# -- conversations --------------------------------------------------------------------------------------
@router.get("/api/experts/{expert_id}/conversations", summary="List an expert's conversations")
def list_conversations(expert_id: ExpertId, rt: RT, limit: Annotated[int, Query(ge=1, le=200)] = 20,
                       offset: Annotated[int, Query(ge=0, le=10**9)] = 0) -> dict[str, Any]:
    with rt.lock:
        return _service(rt).conversations(expert_id, limit, offset)


@router.get("/api/experts/{expert_id}/conversations/{conversation_id}", summary="A conversation with its messages")
def get_conversation(expert_id: ExpertId, conversation_id: ConversationId, rt: RT) -> dict[str, Any]:
    with rt.lock:
        return _service(rt).conversation(expert_id, conversation_id).to_dict()


@router.delete("/api/experts/{expert_id}/conversations/{conversation_id}", response_model=Deleted,
               response_model_exclude_none=True, summary="Delete a conversation")
def delete_conversation(expert_id: ExpertId, conversation_id: ConversationId, rt: RT) -> dict[str, Any]:
    with rt.lock:
        return _service(rt).delete_conversation(expert_id, conversation_id)


# -- chat ---------------------------------------------------------------------------------------------
@router.post("/api/experts/{expert_id}/chat", summary="Chat with an expert (SSE stream)",
             responses={200: {"content": {"text/event-stream": {}, "application/json": {}},
                              "description": "SSE events: conversation_start, injection_meta, sources, token, "
                                             "error, done (or one JSON document with stream: false)"}})
async def chat(expert_id: ExpertId, body: ChatRequest, request: Request) -> Any:
    rt: Runtime = runtime(request)
    provider = await run_in_threadpool(rt.provider, body.provider, body.model)
    engine = ExpertChat(rt.workspace, provider, lock=rt.lock, timeout=rt.settings.llm_timeout)
    history = [h.model_dump() for h in body.history] if body.history is not None else None
    turn = await run_in_threadpool(lambda: engine.start(expert_id, body.query, conversation_id=body.conversation_id,
                                                        history=history))
    if not body.stream:
        return await run_in_threadpool(_answer_json, engine, turn)
    return StreamingResponse(bounded(_sse(engine, turn)), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _answer_json(engine: ExpertChat, turn: Turn) -> JSONResponse:
    events = list(engine.events(turn))
    tokens = "".join(e["content"] for e in events if e["type"] == "token")
    failure = next((e for e in events if e["type"] == "error"), None)
    error = failure["content"] if failure else None
    done = events[-1]
    doc = {"conversation_id": turn.conversation_id, "turn_id": turn.turn_id, "answer": tokens,
           "sources": next(e["nodes"] for e in events if e["type"] == "sources"),
           "intent": turn.context.intent, "citations": done.get("citations"), "message_id": done.get("message_id")}
    if error and not tokens:
        return JSONResponse({"detail": error, "error": ProviderError.__name__, **doc},
                            status_code=failure.get("status", ProviderError.status))
    return JSONResponse({**doc, "error": error} if error else doc)


async def _sse(engine: ExpertChat, turn: Turn) -> AsyncIterator[str]:
    async for event in stream_events(engine, turn):
        yield sse_frame(event)


# -- providers and playbooks ------------------------------------------------------------------------------
@router.get("/api/llm/providers", tags=["llm"], summary="Chat providers, whether each is configured, the default")
def list_providers() -> dict[str, Any]:
    from ..llm import available_providers
    return {"providers": available_providers()}


# -- playbooks --------------------------------------------------------------------------------------------
@router.get("/api/playbooks", tags=["playbooks"], summary="Playbooks experts can inject")
def list_playbooks(rt: RT) -> dict[str, Any]:
    return {"playbooks": PlaybookLibrary(rt.workspace.home).names()}


@router.get("/api/playbooks/{name}", tags=["playbooks"], summary="A playbook and its sections")
def get_playbook(name: Annotated[str, Path(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")], rt: RT) -> dict[str, Any]:
    text = PlaybookLibrary(rt.workspace.home).read(name)
    return {"name": name, "text": text,
            "sections": [{"heading": s.heading, "chars": len(s.text)} for s in split_sections(name, text)]}


# -- feedback on turns ------------------------------------------------------------------------------
class FeedbackRequest(BaseModel):
    """A vote on one expert turn (the ``turn_id`` of the chat's ``done`` event)."""

    model_config = ConfigDict(extra="forbid")
    turn_id: str = Field(min_length=1, max_length=64, description="turn_... or a /v1 completion id")
    rating: Literal["up", "down"]
    comment: str | None = Field(None, max_length=MAX_COMMENT_CHARS)


@router.post("/api/feedback", status_code=201, tags=["feedback"], summary="Thumbs up or down on an expert turn")
def give_feedback(body: FeedbackRequest, rt: RT) -> dict[str, Any]:
    """One vote per turn; voting again replaces it. 404 for a turn no conversation holds, 429 when a
    conversation votes too often."""
    with rt.lock:
        return FeedbackService(rt.workspace).give(body.turn_id, body.rating, body.comment).to_dict()


@router.get("/api/feedback", tags=["feedback"], summary="Votes, newest first, with their counts")
def list_feedback(rt: RT, expert_id: Annotated[str | None, Query(pattern=ID_RE.pattern)] = None,
                  rating: Literal["up", "down"] | None = None,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    with rt.lock:
        svc = FeedbackService(rt.workspace)
        return {"feedback": [f.to_dict() for f in svc.list(expert_id, rating, limit)],
                "summary": svc.summary(expert_id).to_dict()}


@router.get("/api/feedback/{turn_id}", tags=["feedback"], summary="The vote on one turn")
def get_feedback(turn_id: Annotated[str, Path(pattern=TURN_RE.pattern)], rt: RT) -> dict[str, Any]:
    with rt.lock:
        return FeedbackService(rt.workspace).get(turn_id).to_dict()


# -- gaps ---------------------------------------------------------------------------------------------
GapKg = Annotated[str, Path(description="The KG's db_id", examples=["demo"]), AfterValidator(check_db_id)]


@router.get("/api/gaps/{db_id}", tags=["feedback"], summary="The KG's gap report (nothing written)")
def gap_report(db_id: GapKg, rt: RT, limit: Annotated[int, Query(ge=1, le=1000)] = 200) -> dict[str, Any]:
    """Failures of the experts over this KG (thumbs down, answers that found nothing, questions off the
    KG), their cause and topic, and the suggested nodes; GET writes nothing."""
    with rt.lock:
        return GapDetector(rt.workspace).report(db_id, limit=limit, propose=False).to_dict()


@router.post("/api/gaps/{db_id}", tags=["feedback"], summary="Gap report; suggested nodes go to the review queue")
def propose_gaps(db_id: GapKg, rt: RT, limit: Annotated[int, Query(ge=1, le=1000)] = 200) -> dict[str, Any]:
    with rt.lock:
        return GapDetector(rt.workspace).report(db_id, limit=limit, propose=True).to_dict()


@router.get("/api/drift/{db_id}", tags=["feedback"], summary="Dimension drift alerts of the KG (nothing written)")
def drift_report(db_id: GapKg, rt: RT, days: Annotated[int, Query(ge=1, le=3650)] = 90,
                 limit: Annotated[int, Query(ge=1, le=1000)] = 200) -> dict[str, Any]:
    """Dimension values that use contradicts: nodes an expert's filter excludes that people used
    (rated-up citations, accepted proposals), and values a user's statement reads the other way."""
    with rt.lock:
        return drift(rt.workspace, db_id, days=days, limit=limit).to_dict()


# -- A/B tests ----------------------------------------------------------------------------------------
class VariantIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    overrides: dict[str, Any] = Field(default_factory=dict, description="a JSON merge patch of the expert config")
    weight: float = Field(1.0, gt=0, le=1000)


class ABCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    variants: list[VariantIn] = Field(min_length=2, max_length=8)
    id: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    min_votes: int = Field(30, ge=1, le=1_000_000)


TestId = Annotated[str, Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", description="A/B test id")]


@router.post("/api/experts/{expert_id}/ab", status_code=201, tags=["ab-tests"], summary="Start an A/B test")
def create_ab(expert_id: ExpertId, body: ABCreate, rt: RT) -> dict[str, Any]:
    with rt.lock:
        return ABService(rt.workspace).create(expert_id, [v.model_dump() for v in body.variants], test_id=body.id,
                                              min_votes=body.min_votes).to_dict()


@router.get("/api/ab", tags=["ab-tests"], summary="List A/B tests")
def list_ab(rt: RT, expert_id: Annotated[str | None, Query(pattern=ID_RE.pattern)] = None) -> dict[str, Any]:
    with rt.lock:
        return {"tests": [t.to_dict() for t in ABService(rt.workspace).list(expert_id)]}


@router.get("/api/ab/{test_id}", tags=["ab-tests"], summary="An A/B test's report: per-variant figures and decision")
def ab_report(test_id: TestId, rt: RT) -> dict[str, Any]:
    with rt.lock:
        return ABService(rt.workspace).report(test_id).to_dict()


@router.post("/api/ab/{test_id}/stop", tags=["ab-tests"], summary="Stop an A/B test")
def stop_ab(test_id: TestId, rt: RT) -> dict[str, Any]:
    with rt.lock:
        return ABService(rt.workspace).stop(test_id).to_dict()
