"""``/v1``: the experts as OpenAI-compatible chat models, for Open WebUI, LibreChat or any ``openai``
client pointed at ``http://127.0.0.1:8765/v1``.

- ``GET /v1/models`` lists the experts (the model id is the expert id);
- ``POST /v1/chat/completions`` answers as that expert through the same 8-stage loop as
  ``/api/experts/{id}/chat`` (retrieval, prompt, model, tool calls, citation check, persistence),
  streamed as ``chat.completion.chunk`` events or whole. The answer text carries the citations
  (``[Source: kg:node]``); the sources and the citation check come in the extra field ``kgos``
  (of the response, or of the last chunk). The conversation is the ``messages`` history: the last
  user message is the question, the user and assistant messages before it the context.

Errors use OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, so clients show them:
an unknown expert is 404 ``model_not_found``; no user message, a parameter KG-OS does not support
(``tools``, ``n`` > 1, ``logprobs``...) or a malformed body is 400 ``invalid_request_error``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from ..errors import ExpertNotFound, InvalidArgument, KGOSError
from ..experts import ExpertService
from ..experts.chat import MAX_QUERY_CHARS, ExpertChat, Turn, new_turn_id
from ..experts.feedback import FeedbackService
from .errors import RESPONSES
from .models import ErrorBody
from .runtime import Runtime
from .turns import TurnAnswer, collect, sse_frame, stream_events
from .streams import bounded


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIErrorBody(BaseModel):
    """OpenAI's error shape, which /v1 answers with (the server's own checks before the route, such as
    the token, Host and Origin, answer in the API's ``ErrorBody``)."""

    error: OpenAIErrorDetail


_V1_ERRORS = {code: {"model": OpenAIErrorBody | ErrorBody, "description": entry["description"]}
              for code, entry in RESPONSES.items()}
router = APIRouter(prefix="/v1", tags=["openai-compatible"], responses=_V1_ERRORS)
OWNER = "kgos"
MAX_MESSAGES = 200


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(p.text or "" for p in self.content if p.type == "text")
        return self.content or ""


class CompletionRequest(BaseModel):
    """The OpenAI chat-completions body KG-OS understands (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")
    model: str = Field(min_length=1, max_length=128)
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    max_tokens: int | None = Field(None, ge=1, le=32_768)
    max_completion_tokens: int | None = Field(None, ge=1, le=32_768)
    n: int = Field(1, ge=1, le=1)
    logprobs: bool | None = Field(None, description="only false/null")
    response_format: dict[str, Any] | None = None
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    user: str | None = None
    metadata: dict[str, Any] | None = None
    stream_options: dict[str, Any] | None = None
    logit_bias: dict[str, Any] | None = None
    store: bool | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None


class OpenAIError(Exception):
    """An error answered in OpenAI's format."""

    def __init__(self, status: int, message: str, type: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.type, self.param, self.code = status, type, param, code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": str(self), "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status)


def from_library(exc: KGOSError) -> OpenAIError:
    if isinstance(exc, ExpertNotFound):
        return OpenAIError(404, f"{exc} (GET /v1/models lists the experts)", param="model", code="model_not_found")
    kind = "invalid_request_error" if exc.status < 500 else "api_error"
    return OpenAIError(exc.status, str(exc), kind, code=type(exc).__name__)


def parse_request(body: Any) -> CompletionRequest:
    """The validated request, or OpenAIError naming the first offending parameter."""
    if not isinstance(body, dict):
        raise OpenAIError(400, "the request body must be a JSON object")
    try:
        req = CompletionRequest.model_validate(body)
    except ValidationError as exc:
        err = exc.errors()[0]
        param = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            raise OpenAIError(400, f"parameter '{param}' is not supported by KG-OS experts (tools, functions "
                                   "and audio are not; sampling settings are accepted and ignored)",
                              param=param, code="unsupported_parameter") from None
        raise OpenAIError(400, f"{param}: {err['msg']}", param=param) from None
    if req.logprobs:
        raise OpenAIError(400, "logprobs are not supported", param="logprobs", code="unsupported_parameter")
    if req.response_format and req.response_format.get("type", "text") != "text":
        raise OpenAIError(400, "only response_format {type: text} is supported", param="response_format",
                          code="unsupported_parameter")
    return req


def split_messages(messages: list[ChatMessage]) -> tuple[str, list[dict[str, str]]]:
    """(the question: the last user message, the user/assistant history before it). System and tool
    messages are not history: the expert's persona is its system prompt."""
    last = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if last is None or not messages[last].text().strip():
        raise OpenAIError(400, "messages must contain a user message with text (the question)", param="messages")
    history = [{"role": m.role, "content": m.text()[:MAX_QUERY_CHARS]} for m in messages[:last]
               if m.role in ("user", "assistant") and m.text().strip()]
    return messages[last].text(), history


# -- routes ---------------------------------------------------------------------------------------------------
@router.get("/models", summary="The experts, as OpenAI models")
def list_models(request: Request) -> dict[str, Any]:
    rt: Runtime = request.app.state.runtime
    with rt.lock:
        experts = ExpertService(rt.workspace).list()
    return {"object": "list", "data": [model_entry(e.to_dict()) for e in experts]}


def model_entry(summary: dict[str, Any]) -> dict[str, Any]:
    return {"id": summary["id"], "object": "model", "created": _epoch(summary.get("created_at")),
            "owned_by": OWNER, "name": summary.get("name")}


@router.post("/chat/completions", summary="Chat with an expert (OpenAI wire format)")
async def chat_completions(request: Request) -> Any:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return OpenAIError(400, "the request body is not valid JSON").response()
    try:
        req = parse_request(body)
        question, history = split_messages(req.messages)
        engine, turn = await run_in_threadpool(_start, request.app.state.runtime, req, question, history)
    except OpenAIError as exc:
        return exc.response()
    except KGOSError as exc:
        return from_library(exc).response()
    if req.stream:
        include_usage = bool((req.stream_options or {}).get("include_usage"))
        return StreamingResponse(bounded(_chunks(engine, turn, req.model, include_usage)),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    answer = collect(await run_in_threadpool(list, engine.events(turn)), turn)
    if answer.error and not answer.answer:
        return OpenAIError(answer.error_status, answer.error, "api_error", code="provider_error").response()
    return completion(answer, req.model)


class CompletionFeedback(BaseModel):
    """A vote on a completion: its ``id`` (``chatcmpl-turn_...``), ``up`` or ``down``, a comment."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(max_length=64)
    rating: Literal["up", "down"]
    comment: str | None = Field(default=None, max_length=2_000)


@router.post("/feedback", summary="Thumbs up or down on a completion (a KG-OS extension)")
async def completion_feedback(request: Request) -> Any:
    """Keyed by the completion id; the vote lands on the expert turn it answered (``/api/feedback``)."""
    try:
        body = CompletionFeedback.model_validate(await request.json())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return OpenAIError(400, "the request body is not valid JSON").response()
    except ValidationError as exc:
        err = exc.errors()[0]
        return OpenAIError(400, f"{'.'.join(map(str, err['loc'])) or 'body'}: {err['msg']}",
                           param=str(err["loc"][0]) if err["loc"] else None).response()
    rt: Runtime = request.app.state.runtime
    try:
        with rt.lock:
            fb = FeedbackService(rt.workspace).give(body.id, body.rating, body.comment)
    except KGOSError as exc:
        return from_library(exc).response()
    return {"object": "chat.completion.feedback", "id": body.id, **fb.to_dict()}


def _start(rt: Runtime, req: CompletionRequest, question: str,
           history: list[dict[str, str]]) -> tuple[ExpertChat, Turn]:
    provider = rt.provider()
    limit = req.max_completion_tokens or req.max_tokens or 1024
    engine = ExpertChat(rt.workspace, provider, lock=rt.lock, timeout=rt.settings.llm_timeout, max_tokens=limit)
    if len(question) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"the last user message is {len(question):,} characters; the limit is "
                              f"{MAX_QUERY_CHARS:,}")
    return engine, engine.start(req.model, question, history=history)


def extra(answer: TurnAnswer) -> dict[str, Any]:
    """The ``kgos`` field: what the answer was grounded on and whether its citations hold."""
    return {"conversation_id": answer.conversation_id, "message_id": answer.message_id, "turn_id": answer.turn_id,
            "intent": answer.intent, "sources": answer.sources, "citations": answer.citations, "error": answer.error,
            "usage_counted_by": answer.usage.get("counted_by")}


def completion(answer: TurnAnswer, model: str) -> dict[str, Any]:
    return {"id": _completion_id(answer.turn_id), "object": "chat.completion", "created": int(time.time()),
            "model": model, "system_fingerprint": OWNER,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.answer},
                         "finish_reason": answer.finish_reason, "logprobs": None}],
            "usage": openai_usage(answer), "kgos": extra(answer)}


def openai_usage(answer: TurnAnswer) -> dict[str, int]:
    """OpenAI's ``usage``; how the tokens were counted (the provider, or the offline composer's stated
    tokenizer, llm/usage.py) is ``kgos.usage_counted_by``."""
    u = answer.usage
    return {k: int(u.get(k, 0)) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


async def _chunks(engine: ExpertChat, turn: Turn, model: str, include_usage: bool = False) -> AsyncIterator[str]:
    cid, created = _completion_id(turn.turn_id), int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> str:
        doc = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
               "system_fingerprint": OWNER, "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                                                          "logprobs": None}], **more}
        return sse_frame(doc)

    yield chunk({"role": "assistant", "content": ""})
    events: list[dict[str, Any]] = []
    async for event in stream_events(engine, turn):
        events.append(event)
        if event["type"] == "token":
            yield chunk({"content": event["content"]})
    answer = collect(events, turn)
    if answer.error and not answer.answer:
        failure = OpenAIError(answer.error_status, answer.error, "api_error", code="provider_error")
        yield sse_frame(failure.body())
    else:
        yield chunk({}, answer.finish_reason, kgos=extra(answer))
        if include_usage:  # OpenAI's stream_options.include_usage: one more chunk, no choices, the usage
            yield sse_frame({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                             "system_fingerprint": OWNER, "choices": [], "usage": openai_usage(answer)})
    yield "data: [DONE]\n\n"


def _completion_id(turn_id: str | None) -> str:
    """The turn's id behind OpenAI's prefix, so ``POST /v1/feedback`` can be keyed by the completion id."""
    return f"chatcmpl-{turn_id or new_turn_id()}"


def _epoch(stamp: str | None) -> int:
    from datetime import datetime
    try:
        return int(datetime.fromisoformat(stamp).timestamp()) if stamp else 0
    except ValueError:
        return 0
