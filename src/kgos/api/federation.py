"""/api/federation: what this instance's shared experts can do, and answering a peer's signed
question (``kgos.experts.federation`` has the protocol). Off unless ``KGOS_FEDERATION_KEYS`` is set."""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from ..errors import ExpertNotFound, FederationRefused, KGOSError
from ..experts import ExpertService
from ..experts.chat import MAX_QUERY_CHARS
from ..experts.federation import FederationConfig, NonceBook, sign_response, verify_request
from .errors import error_body
from .runtime import Runtime
from .turns import ask

router = APIRouter(prefix="/api/federation", tags=["federation"])
MAX_ASK_BYTES = 64 * 1024


class PeerQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expert: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)


def install(app: Any, config: FederationConfig | None) -> None:
    app.state.federation = (config or FederationConfig.from_env(), NonceBook())
    app.include_router(router)


async def _verified(request: Request) -> tuple[str, bytes, str]:
    """(peer, body, nonce) of a correctly signed request; FederationRefused otherwise."""
    cfg, book = request.app.state.federation
    if not cfg.enabled:
        raise FederationRefused("federation is off on this instance (no KGOS_FEDERATION_KEYS)")
    body = await request.body()
    if len(body) > MAX_ASK_BYTES:
        raise KGOSError(f"a federated request is at most {MAX_ASK_BYTES:,} bytes")
    headers = {k.lower(): v for k, v in request.headers.items()}
    peer = verify_request(cfg, book, headers, request.method, request.url.path, body)
    return peer, body, headers["x-kgos-nonce"]


def _signed(request: Request, doc: Any, nonce: str, status: int = 200) -> Response:
    cfg, _ = request.app.state.federation
    peer = request.headers.get("x-kgos-peer", "")
    raw = json.dumps(doc, ensure_ascii=False).encode()
    stamp = str(int(time.time()))
    return Response(raw, status_code=status, media_type="application/json",
                    headers={"x-kgos-timestamp": stamp, "x-kgos-signature": sign_response(cfg.keys[peer], nonce, stamp, raw)})


@router.get("/capabilities", summary="The experts this instance shares with its peers (signed request)")
async def capabilities(request: Request) -> Response:
    try:
        _, _, nonce = await _verified(request)
    except KGOSError as exc:
        return error_body(getattr(exc, "status", 400), str(exc), type(exc).__name__)
    rt: Runtime = request.app.state.runtime
    doc = await run_in_threadpool(_shared, rt, request.app.state.federation[0].name)
    return _signed(request, doc, nonce)


def _shared(rt: Runtime, instance: str) -> dict[str, Any]:
    with rt.lock:
        svc, out = ExpertService(rt.workspace), []
        for summary in svc.list():
            expert = svc.get(summary.id)
            if expert.config.share_with_peers:
                kgs = [{"db_id": d, "nodes": rt.workspace.kg(d).node_count()} for d in expert.config.kgs
                       if rt.workspace.exists(d)]
                out.append({"id": expert.id, "name": expert.config.name, "description": expert.config.description,
                            "kgs": kgs})
    return {"instance": instance, "experts": out}


@router.post("/ask", summary="A peer's question to one of this instance's shared experts (signed both ways)")
async def peer_ask(request: Request) -> Response:
    try:
        peer, body, nonce = await _verified(request)
        q = PeerQuestion.model_validate_json(body)
    except ValidationError as exc:
        return error_body(422, f"invalid federated question: {exc.errors()[0]['msg']}", "RequestValidationError")
    except KGOSError as exc:
        return error_body(getattr(exc, "status", 400), str(exc), type(exc).__name__)
    rt: Runtime = request.app.state.runtime
    try:
        doc = await run_in_threadpool(_answer, rt, q, peer, request.app.state.federation[0].name)
    except KGOSError as exc:
        return _signed(request, {"detail": str(exc), "error": type(exc).__name__}, nonce, getattr(exc, "status", 400))
    return _signed(request, doc, nonce)


def _answer(rt: Runtime, q: PeerQuestion, peer: str, instance: str) -> dict[str, Any]:
    with rt.lock:
        expert = ExpertService(rt.workspace).get(q.expert)
    if not expert.config.share_with_peers:
        raise ExpertNotFound(f"no shared expert '{q.expert}' on this instance")
    # a peer's turn never delegates further: no loops between instances
    answer = ask(rt.workspace, rt.provider(), expert.id, q.question, delegate=False)
    return {"instance": instance, "expert": expert.id, "peer": peer, "answer": answer.answer,
            "sources": answer.sources, "citations": answer.citations, "turn_id": answer.turn_id}
