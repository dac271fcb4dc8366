"""Google's Gemini API (generateContent), streamed over httpx, its events split by ``httpx-sse``
(extra ``kgos[gemini]``).

Not through Google's SDK (``google-genai``): it types a thought signature as bytes (base64-decoded
on the way in, re-encoded on the way out), so the opaque strings this module replays — and
Google's documented placeholder below — would not go back as received; and it reports connection
failures and stalls as bare httpx exceptions, which this module maps itself anyway.

Wire protocol (https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent and
https://ai.google.dev/gemini-api/docs/function-calling):
``POST {base}/models/{model}:streamGenerateContent?alt=sse`` with header ``x-goog-api-key`` answers
server-sent events, each a ``GenerateContentResponse`` JSON object; the text is in
``candidates[0].content.parts[].text`` and calls in ``parts[].functionCall {name, args}``; the last
chunk carries ``candidates[0].finishReason``. Roles are ``user`` and ``model``; the system prompt goes
in ``systemInstruction``; tools in ``tools: [{functionDeclarations: [{name, description,
parametersJsonSchema}]}]`` (``parametersJsonSchema`` takes a JSON Schema as is, unlike the OpenAPI
subset of ``parameters``); tool results go back as ``{functionResponse: {name, response}}`` parts of
a user turn, ``response`` being the result's JSON object, or ``{"output": text}``.

Thought signatures (https://ai.google.dev/gemini-api/docs/thought-signatures): Gemini 3 models reject
a replayed ``functionCall`` whose ``thoughtSignature`` is missing. The signatures received are kept
in a small in-process table keyed by tool-call id and sent back with the call; when one is unknown
(another process, a trimmed history) the first call of a model turn gets Google's documented
``skip_thought_signature_validator`` placeholder on Gemini 3 and later.

Key: the argument, else ``$GEMINI_API_KEY``, else ``$GOOGLE_API_KEY``; base URL: the argument, else
``$KGOS_GEMINI_BASE_URL``, else ``https://generativelanguage.googleapis.com/v1beta``.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Generator, Iterable, Iterator
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from ..errors import InvalidArgument, MissingDependency
from ..settings import current
from ._http import (
    HTTPChatProvider,
    HTTPStatus,
    StreamState,
    check_roles,
    load_json,
    service_message,
    system_text,
    tool_call_or_fail,
    tool_result_object,
)
from .base import Message, ProviderNotConfigured, StreamItem, ToolCall, ToolSpec
from .usage import Usage, finish_reason

__all__ = ["GEMINI_DEFAULT_MODEL", "GEMINI_DEFAULT_URL", "GeminiProvider"]

GEMINI_DEFAULT_URL = "https://generativelanguage.googleapis.com/v1beta"
GEMINI_DEFAULT_MODEL = "gemini-2.5-flash"
KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
BASE_URL_ENV = "KGOS_GEMINI_BASE_URL"
SKIP_SIGNATURE = "skip_thought_signature_validator"
#: ids KG-OS made up for calls Gemini sent without one; they are not sent back to Gemini
LOCAL_ID_PREFIX = "kgos-call-"
_OK_FINISH = ("STOP", "MAX_TOKENS")


class _Signatures:
    """Thought signatures by tool-call id (bounded, shared by all instances in the process)."""

    def __init__(self, size: int = 2048) -> None:
        self._data: OrderedDict[str, str] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def put(self, call_id: str, signature: str) -> None:
        with self._lock:
            self._data[call_id] = signature
            self._data.move_to_end(call_id)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def get(self, call_id: str) -> str | None:
        with self._lock:
            return self._data.get(call_id)


SIGNATURES = _Signatures()


def gemini_api_key() -> str:
    for name in KEY_ENV:
        if os.environ.get(name, "").strip():
            return os.environ[name].strip()
    return ""


class GeminiProvider(HTTPChatProvider):
    """A Gemini model behind ``models/{model}:streamGenerateContent?alt=sse``."""

    service = "Gemini"
    package, pip_name, extra = "httpx_sse", "httpx-sse", "gemini"
    _client: Any = None

    def __init__(self, model: str = GEMINI_DEFAULT_MODEL, api_key: str | None = None,
                 base_url: str | None = None, timeout: float = 60.0) -> None:
        url = base_url or current().gemini_base_url or GEMINI_DEFAULT_URL
        key = api_key if api_key is not None else gemini_api_key()
        if not key and urlsplit(url).hostname == urlsplit(GEMINI_DEFAULT_URL).hostname:
            raise ProviderNotConfigured("GEMINI_API_KEY is not set (GOOGLE_API_KEY is read too): "
                                        "export it to use gemini:<model>")
        super().__init__(model=(model or "").strip().removeprefix("models/"), base_url=url,
                         timeout=timeout, secret=key,
                         unreachable_hint=f"check the network connection, or {BASE_URL_ENV} if you set it")
        self.name = f"gemini:{self.model}"
        self._headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        if key:
            self._headers["x-goog-api-key"] = key

    def _request(self, messages: list[Message], system: str | None, max_tokens: int,
                 tools: list[ToolSpec]) -> tuple[str, dict[str, str], dict[str, Any]]:
        check_roles(messages, self.service, need_tool_id=False)
        payload: dict[str, Any] = {"contents": to_gemini_contents(messages, self.model),
                                   "generationConfig": {"maxOutputTokens": max_tokens}}
        sys_prompt = system_text(system, messages)
        if sys_prompt:
            payload["systemInstruction"] = {"parts": [{"text": sys_prompt}]}
        if tools:
            payload["tools"] = [{"functionDeclarations": [
                {"name": t.name, "description": t.description, "parametersJsonSchema": dict(t.parameters)}
                for t in tools]}]
        url = f"{self.base_url}/models/{quote(self.model, safe='-._~')}:streamGenerateContent?alt=sse"
        return url, dict(self._headers), payload

    def _exchange(self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float,
                  state: StreamState, cancel: threading.Event | None) -> Generator[StreamItem, None, None]:
        import httpx
        sse = _httpx_sse()
        if self._client is None:  # one per provider: a new client costs ~200 ms (its SSL context)
            self._client = httpx.Client()
        try:
            with self._client.stream("POST", url, json=payload, headers=headers,
                                     timeout=httpx.Timeout(timeout)) as resp:
                if resp.status_code >= 400:
                    raise HTTPStatus(resp.status_code, resp.read(), resp.headers.get("retry-after"))
                self.check_content_type(resp.headers.get("content-type", ""), resp.read, url)
                yield from self._decode(_counted(sse.EventSource(resp).iter_sse(), state), state)
        except httpx.TimeoutException as exc:
            self._timed_out(url, timeout, state, connecting=isinstance(exc, httpx.ConnectTimeout))
        except httpx.ConnectError as exc:
            self._unreachable(url, str(exc) or type(exc).__name__)
        except httpx.HTTPError as exc:
            self._broken(url, state, str(exc) or type(exc).__name__)

    def _decode(self, events: Iterator[_Event], state: StreamState) -> Iterator[StreamItem]:
        calls: list[ToolCall] = []
        meta: Any = None
        for ev in events:
            chunk = load_json(self, ev.data)
            if isinstance(chunk, list) and len(chunk) == 1:
                chunk = chunk[0]
            if not isinstance(chunk, dict):
                self.fail(f"sent a chunk that is not a JSON object: {ev.data[:200]}")
            if "error" in chunk:
                self.fail(f"reported an error mid-stream: {service_message(ev.data)}")
            meta = chunk.get("usageMetadata") or meta  # counts so far; the last chunk has the final ones
            candidate = self._candidate(chunk)
            if candidate is None:
                continue
            yield from self._parts(candidate, calls)
            reason = candidate.get("finishReason")
            if reason:
                state.done = True
                if reason not in _OK_FINISH:
                    detail = candidate.get("finishMessage") or ""
                    self.fail(f"stopped the answer: finishReason {reason}{': ' if detail else ''}{detail}")
                yield from calls
                yield _usage(meta, reason)
                return

    def _candidate(self, chunk: dict[str, Any]) -> dict[str, Any] | None:
        candidates = chunk.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            return candidates[0]
        blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            self.fail(f"refused the prompt: blockReason {blocked}")
        return None

    def _parts(self, candidate: dict[str, Any], calls: list[ToolCall]) -> Iterator[str]:
        parts = (candidate.get("content") or {}).get("parts") or []
        for part in parts:
            if not isinstance(part, dict) or part.get("thought"):
                continue
            if isinstance(part.get("text"), str) and part["text"]:
                yield part["text"]
            fc = part.get("functionCall")
            if isinstance(fc, dict):
                call_id = str(fc.get("id") or f"{LOCAL_ID_PREFIX}{uuid.uuid4().hex[:12]}")
                calls.append(tool_call_or_fail(self, call_id, fc.get("name"), fc.get("args"), call_id))
                signature = part.get("thoughtSignature") or fc.get("thoughtSignature")
                if isinstance(signature, str) and signature:
                    SIGNATURES.put(call_id, signature)

    def _terminator(self) -> str:
        return "a chunk with finishReason"


class _Event(Protocol):
    data: str


def _httpx_sse() -> Any:
    try:
        import httpx_sse
    except ImportError:
        raise MissingDependency("httpx-sse", "gemini") from None
    return httpx_sse


def _counted(events: Iterable[_Event], state: StreamState) -> Iterator[_Event]:
    for ev in events:
        state.events += 1
        yield ev


def needs_signature(model: str) -> bool:
    """Gemini 3 and later reject replayed function calls without a thought signature."""
    m = re.match(r"gemini-(\d+)", model)
    return bool(m) and int(m.group(1)) >= 3


def to_gemini_contents(messages: list[Message], model: str) -> list[dict[str, Any]]:
    """Messages as ``contents``: roles user/model, ``functionCall`` parts (with their thought
    signatures) on model turns, ``functionResponse`` parts on user turns, same-role neighbours merged."""
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if m.role == "system":
            continue
        role = "model" if m.role == "assistant" else "user"
        parts = _tool_response(m, names, i) if m.role == "tool" else _parts_of(m, model)
        if not parts:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts})
    return out


def _parts_of(m: Message, model: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": m.content}] if m.content else []
    for j, c in enumerate(m.tool_calls):
        call: dict[str, Any] = {"name": c.name, "args": dict(c.arguments)}
        if not c.id.startswith(LOCAL_ID_PREFIX):
            call["id"] = c.id
        part: dict[str, Any] = {"functionCall": call}
        signature = SIGNATURES.get(c.id) or (SKIP_SIGNATURE if j == 0 and needs_signature(model) else None)
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts


def _tool_response(m: Message, names: dict[str, str], index: int) -> list[dict[str, Any]]:
    name = m.name or names.get(m.tool_call_id or "")
    if not name:
        raise InvalidArgument(f"messages[{index}]: a tool message needs the tool's name (Gemini matches "
                              "results to calls by name): set Message.name or include the calling "
                              "assistant message")
    response: dict[str, Any] = {"name": name, "response": tool_result_object(m.content)}
    if m.tool_call_id and not m.tool_call_id.startswith(LOCAL_ID_PREFIX):
        response["id"] = m.tool_call_id
    return [{"functionResponse": response}]


def _usage(meta: Any, reason: Any) -> Usage:
    """Gemini's usageMetadata (promptTokenCount, candidatesTokenCount) and finishReason, in OpenAI's words."""
    meta = meta if isinstance(meta, dict) else {}
    p, c = (meta.get(k) if isinstance(meta.get(k), int) else None for k in ("promptTokenCount", "candidatesTokenCount"))
    return Usage(p, c, finish_reason(reason))
