"""OpenAI-compatible chat completions, streamed: OpenAI itself and local servers that speak its API
(Ollama, vLLM, llama.cpp server, LM Studio...), through the official ``openai`` SDK (extra
``kgos[openai]``; kgos.llm._sdk).

Protocol (https://platform.openai.com/docs/api-reference/chat-streaming): ``POST
{base_url}/chat/completions`` with ``"stream": true`` answers ``chat.completion.chunk`` events — text
in ``choices[0].delta.content``, tool calls as ``choices[0].delta.tool_calls`` fragments keyed by
``index`` (the first carries ``id`` and ``function.name``, later ones pieces of
``function.arguments``), ``finish_reason`` on the last choice chunk — and ends with ``data: [DONE]``,
which the SDK consumes: a stream is complete once a ``finish_reason`` arrived. An
``{"error": {...}}`` chunk reports a failure mid-stream.

Base URL: the argument, else ``$KGOS_OPENAI_BASE_URL``, else ``$OPENAI_BASE_URL``, else
``https://api.openai.com/v1``. Key: the argument, else ``$OPENAI_API_KEY`` — required only for
api.openai.com; a local server needs none.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ._http import StreamState, check_roles, tool_call_or_fail
from ._sdk import SDKChatProvider
from .base import Message, ProviderNotConfigured, StreamItem, ToolCall, ToolSpec
from .usage import Usage, finish_reason

__all__ = ["OPENAI_DEFAULT_MODEL", "OPENAI_DEFAULT_URL", "OpenAICompatProvider", "openai_base_url"]

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"
BASE_URL_ENV = ("KGOS_OPENAI_BASE_URL", "OPENAI_BASE_URL")
KEY_ENV = "OPENAI_API_KEY"


def openai_base_url(default: str = OPENAI_DEFAULT_URL) -> str:
    """The base URL from the environment (``$KGOS_OPENAI_BASE_URL``, ``$OPENAI_BASE_URL``), else ``default``."""
    from ..settings import current

    return current().openai_base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or default


def is_openai_cloud(url: str) -> bool:
    return urlsplit(url).hostname == urlsplit(OPENAI_DEFAULT_URL).hostname


class OpenAICompatProvider(SDKChatProvider):
    """A model behind ``POST {base_url}/chat/completions`` (streamed; tools as ``functions``)."""

    service = "OpenAI-compatible server"
    package = pip_name = extra = "openai"

    def __init__(self, model: str = OPENAI_DEFAULT_MODEL, base_url: str | None = None,
                 api_key: str | None = None, timeout: float = 60.0,
                 extra_headers: Mapping[str, str] | None = None) -> None:
        url = base_url or openai_base_url()
        key = api_key if api_key is not None else os.environ.get(KEY_ENV, "").strip()
        if not key and is_openai_cloud(url):
            raise ProviderNotConfigured(
                f"{KEY_ENV} is not set: export it to use OpenAI, or set KGOS_OPENAI_BASE_URL to an "
                "OpenAI-compatible server that needs no key (e.g. http://127.0.0.1:11434/v1 for Ollama)"
            )
        super().__init__(
            model=model, base_url=url, timeout=timeout, secret=key,
            unreachable_hint="check that the server is running and listening there (the base URL comes "
                             "from the base_url option, else KGOS_OPENAI_BASE_URL, else OPENAI_BASE_URL)",
        )
        self.name = f"openai:{self.model}"
        self._headers = dict(extra_headers or {})
        if is_openai_cloud(self.base_url):
            self.service = "OpenAI"

    def _make_client(self, sdk: Any) -> Any:
        # a local server needs no key, the SDK insists on one: a stand-in, never sent (see _open)
        return sdk.OpenAI(api_key=self._secret or "no-key", base_url=self.base_url, max_retries=0,
                          timeout=self.timeout)

    def _open(self, sdk: Any, client: Any, payload: dict[str, Any], headers: dict[str, str],
              timeout: float) -> Any:
        extra: dict[str, Any] = {**headers, **({} if self._secret else {"Authorization": sdk.Omit()})}
        return client.chat.completions.with_streaming_response.create(**payload, extra_headers=extra,
                                                                      timeout=timeout)

    def _request(self, messages: list[Message], system: str | None, max_tokens: int,
                 tools: list[ToolSpec]) -> tuple[str, dict[str, str], dict[str, Any]]:
        check_roles(messages, self.service)
        payload: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(messages, system),
                                   "stream": True}
        # OpenAI's newer models reject max_tokens; local servers may not know max_completion_tokens
        payload["max_completion_tokens" if is_openai_cloud(self.base_url) else "max_tokens"] = max_tokens
        if is_openai_cloud(self.base_url):  # its token counts in a last chunk (other servers may refuse it)
            payload["stream_options"] = {"include_usage": True}
        if tools:
            payload["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": dict(t.parameters)}}
                for t in tools]
        return f"{self.base_url}/chat/completions", dict(self._headers), payload

    def _decode(self, events: Iterator[dict[str, Any]], state: StreamState) -> Iterator[StreamItem]:
        calls = _ToolCallAssembler()
        for chunk in events:
            yield from calls.feed(self, chunk)
        finished = list(calls.finish(self))  # a call with broken arguments fails here, ended or not
        if calls.stop is None:
            return  # no finish_reason: the stream was cut (the shared loop says so)
        state.done = True
        yield from finished
        yield calls.usage()

    def _terminator(self) -> str:
        return "a finish_reason and data: [DONE]"


@dataclass
class _PendingCall:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _ToolCallAssembler:
    """Collects ``delta.tool_calls`` fragments by ``index`` across chunks."""

    def __init__(self) -> None:
        self.calls: dict[int, _PendingCall] = {}
        self.counts: dict[str, Any] = {}  # the service's ``usage`` (a last chunk, when it sends one)
        self.stop: Any = None

    def usage(self) -> Usage:
        """What the service said it counted and why it stopped (counts it did not send stay None)."""
        tokens = [self.counts.get(k) for k in ("prompt_tokens", "completion_tokens")]
        p, c = (int(t) if isinstance(t, int) else None for t in tokens)
        return Usage(p, c, finish_reason(self.stop))

    def feed(self, provider: OpenAICompatProvider, chunk: dict[str, Any]) -> Iterator[str]:
        if isinstance(chunk.get("usage"), dict):
            self.counts = chunk["usage"]
        choices = chunk.get("choices") or []  # a usage-only chunk has none
        if not isinstance(choices, list):
            provider.fail("sent a chunk whose 'choices' is not a list")
        for choice in choices[:1]:
            if isinstance(choice, dict) and choice.get("finish_reason"):
                self.stop = choice["finish_reason"]
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            content = delta.get("content")
            if isinstance(content, str) and content:
                yield content
            for frag in delta.get("tool_calls") or []:
                self._add(frag)

    def _add(self, frag: Any) -> None:
        if not isinstance(frag, dict):
            return
        index = frag.get("index")
        if not isinstance(index, int):  # servers that send each call whole, without an index
            known = [i for i, c in self.calls.items() if c.id and c.id == frag.get("id")]
            index = known[0] if known else len(self.calls)
        call = self.calls.setdefault(index, _PendingCall())
        if frag.get("id"):
            call.id = str(frag["id"])
        fn = frag.get("function") or {}
        if isinstance(fn, dict):
            name = fn.get("name")
            if name and name != call.name:  # sent once, or repeated whole by some servers
                call.name += str(name)
            args = fn.get("arguments")
            if isinstance(args, str):
                call.arguments.append(args)
            elif isinstance(args, dict):  # some servers send the arguments already parsed
                call.arguments.append(json.dumps(args))

    def finish(self, provider: OpenAICompatProvider) -> Iterator[ToolCall]:
        for index in sorted(self.calls):
            call = self.calls[index]
            yield tool_call_or_fail(provider, call.id, call.name, "".join(call.arguments), f"call_{index}")


def to_openai_messages(messages: list[Message], system: str | None) -> list[dict[str, Any]]:
    """Messages in the chat-completions format: system first, assistant ``tool_calls`` with JSON
    argument strings, and ``role: "tool"`` results carrying ``tool_call_id``."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            out.append({"role": "assistant", "content": m.content or None, "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))}}
                for c in m.tool_calls]})
        else:
            out.append({"role": m.role, "content": m.content})
    return out
