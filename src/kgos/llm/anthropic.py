"""Anthropic's Messages API, streamed, through the official ``anthropic`` SDK (extra
``kgos[anthropic]``; kgos.llm._sdk).

Protocol (https://docs.anthropic.com/en/api/messages and
https://docs.anthropic.com/en/docs/build-with-claude/streaming): ``POST {base}/v1/messages`` with
headers ``x-api-key`` and ``anthropic-version: 2023-06-01`` and ``"stream": true`` answers named
server-sent events (the SDK skips unnamed ones and ``ping``, and raises on ``error``): ``message_start``; per content block ``content_block_start`` (a ``text`` or
``tool_use`` block), ``content_block_delta`` (``text_delta`` text, or ``input_json_delta`` pieces of
a tool's JSON input) and ``content_block_stop``; ``message_delta`` (stop reason); ``message_stop``;
``ping`` at any time; ``error`` on failure mid-stream.

The system prompt goes in the top-level ``system`` field; an assistant turn that called tools carries
``tool_use`` blocks, and tool results go back as ``tool_result`` blocks in the next user message
(consecutive messages of the same role are merged into one). Tools are offered as
``{name, description, input_schema}``.

Key: the argument, else ``$ANTHROPIC_API_KEY``; base URL: the argument, else ``$ANTHROPIC_BASE_URL``,
else ``https://api.anthropic.com``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ._http import StreamState, check_roles, system_text, tool_call_or_fail
from ._sdk import SDKChatProvider
from .base import Message, ProviderNotConfigured, StreamItem, ToolCall, ToolSpec
from .usage import Usage, finish_reason

__all__ = ["ANTHROPIC_DEFAULT_MODEL", "ANTHROPIC_DEFAULT_URL", "AnthropicProvider"]

ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
ANTHROPIC_DEFAULT_MODEL = "claude-sonnet-4-5"
ANTHROPIC_VERSION = "2023-06-01"
KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"


class AnthropicProvider(SDKChatProvider):
    """A Claude model behind ``POST {base}/v1/messages`` (streamed; tools as ``tool_use`` blocks)."""

    service = "Anthropic"
    package = pip_name = extra = "anthropic"

    def __init__(self, model: str = ANTHROPIC_DEFAULT_MODEL, api_key: str | None = None,
                 base_url: str | None = None, timeout: float = 60.0) -> None:
        url = base_url or os.environ.get(BASE_URL_ENV, "").strip() or ANTHROPIC_DEFAULT_URL
        key = api_key if api_key is not None else os.environ.get(KEY_ENV, "").strip()
        if not key and urlsplit(url).hostname == urlsplit(ANTHROPIC_DEFAULT_URL).hostname:
            raise ProviderNotConfigured(f"{KEY_ENV} is not set: export it to use anthropic:<model>")
        super().__init__(model=model, base_url=url, timeout=timeout, secret=key,
                         unreachable_hint=f"check the network connection, or {BASE_URL_ENV} if you set it")
        self.name = f"anthropic:{self.model}"
        self._headers = {"anthropic-version": ANTHROPIC_VERSION}  # the version this code speaks, pinned
        if key:
            self._headers["x-api-key"] = key

    def _make_client(self, sdk: Any) -> Any:
        # The key goes as x-api-key, as the API documents (anthropic 2.x sends it as a Bearer token),
        # in the client's headers: the SDK logs each request's own headers at DEBUG, never these.
        # Without a key (a proxy or test server) the SDK's Authorization header is left out.
        headers = {**self._headers, "Authorization": sdk.Omit()}
        return sdk.Anthropic(api_key=self._secret or "no-key", base_url=self.base_url, max_retries=0,
                             timeout=self.timeout, default_headers=headers)

    def _open(self, sdk: Any, client: Any, payload: dict[str, Any], headers: dict[str, str],
              timeout: float) -> Any:
        return client.messages.with_streaming_response.create(**payload, timeout=timeout)

    def _request(self, messages: list[Message], system: str | None, max_tokens: int,
                 tools: list[ToolSpec]) -> tuple[str, dict[str, str], dict[str, Any]]:
        check_roles(messages, self.service)
        payload: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens,
                                   "messages": to_anthropic_messages(messages), "stream": True}
        sys_prompt = system_text(system, messages)
        if sys_prompt:
            payload["system"] = sys_prompt
        if tools:
            payload["tools"] = [{"name": t.name, "description": t.description,
                                 "input_schema": dict(t.parameters)} for t in tools]
        return f"{self.base_url}/v1/messages", dict(self._headers), payload

    def _decode(self, events: Iterator[dict[str, Any]], state: StreamState) -> Iterator[StreamItem]:
        pending: dict[int, dict[str, Any]] = {}  # index -> tool_use block being streamed
        calls: list[ToolCall] = []
        counts: dict[str, Any] = {}  # input_tokens from message_start, output_tokens and stop_reason after
        for data in events:
            kind = str(data.get("type", ""))
            if kind in ("message_start", "message_delta"):
                _count(data, counts)
            if kind == "content_block_start":
                yield from self._start_block(data, pending)
            elif kind == "content_block_delta":
                yield from self._delta(data, pending)
            elif kind == "content_block_stop" and data.get("index") in pending:
                block = pending.pop(data["index"])
                raw = "".join(block["json"]) or block.get("input")
                calls.append(tool_call_or_fail(self, block.get("id"), block.get("name"), raw,
                                               f"toolu_{len(calls)}"))
            elif kind == "message_stop":
                state.done = True
                yield from calls
                yield Usage(counts.get("input_tokens"), counts.get("output_tokens"),
                            finish_reason(counts.get("stop_reason")))
                return

    def _start_block(self, data: dict[str, Any], pending: dict[int, dict[str, Any]]) -> Iterator[str]:
        block = data.get("content_block")
        if not isinstance(block, dict):
            self.fail("sent content_block_start without a content_block")
        if block.get("type") == "tool_use":
            pending[data.get("index", len(pending))] = {**block, "json": []}
        elif block.get("type") == "text" and block.get("text"):
            yield str(block["text"])

    def _delta(self, data: dict[str, Any], pending: dict[int, dict[str, Any]]) -> Iterator[str]:
        delta = data.get("delta")
        if not isinstance(delta, dict):
            self.fail("sent content_block_delta without a delta")
        if delta.get("type") == "text_delta" and delta.get("text"):
            yield str(delta["text"])
        elif delta.get("type") == "input_json_delta" and data.get("index") in pending:
            pending[data["index"]]["json"].append(str(delta.get("partial_json", "")))

    def _terminator(self) -> str:
        return "event: message_stop"


def to_anthropic_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as content-block lists: ``tool_use`` blocks on assistant turns, ``tool_result``
    blocks in user turns, same-role neighbours merged (system messages go to ``system``)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        blocks = _blocks(m)
        if not blocks:
            continue
        role = "assistant" if m.role == "assistant" else "user"
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(m: Message) -> list[dict[str, Any]]:
    if m.role == "tool":
        return [{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
               for c in m.tool_calls]
    return blocks


def _count(data: dict[str, Any], counts: dict[str, Any]) -> None:
    """Token counts and the stop reason from message_start / message_delta (integers only)."""
    message = data.get("message") if isinstance(data.get("message"), dict) else {}
    for source in (message.get("usage"), data.get("usage")):
        if isinstance(source, dict):
            counts.update({k: v for k, v in source.items() if k in ("input_tokens", "output_tokens")
                           and isinstance(v, int) and not isinstance(v, bool)})
    delta = data.get("delta")
    if isinstance(delta, dict) and delta.get("stop_reason"):
        counts["stop_reason"] = delta["stop_reason"]
