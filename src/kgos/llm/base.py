"""The chat-provider interface every LLM backend implements.

A provider turns a list of messages into an answer streamed in pieces (``stream``) or whole
(``complete``). The stream yields ``str`` text pieces and, when ``tools`` were offered and the model
chose to call some, ``ToolCall`` items (after the text of that turn), and last, optionally, one
``Usage`` (token counts and ``finish_reason``, llm/usage.py); the caller runs the tools,
appends an assistant ``Message`` carrying ``tool_calls`` and one ``Message(role="tool")`` per result,
and streams again.

Failures raise ``ProviderError`` (a ``KGOSError``) — a timeout, a refused connection, an answer that
is not what was asked for — so callers can report them instead of crashing. A provider checks
``cancel`` (a ``threading.Event``) between pieces and stops, closing its connection, once it is set.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProviderError, ProviderNotConfigured, ProviderTimeout
from .usage import Usage

__all__ = ["ChatProvider", "Message", "ProviderError", "ProviderNotConfigured", "ProviderTimeout", "StreamItem",
           "ToolCall", "ToolSpec", "Usage"]


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call: ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """The model's request to run ``name`` with ``arguments`` (already parsed from JSON)."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}


@dataclass(frozen=True)
class Message:
    """One turn. ``role``: user | assistant | system | tool. An assistant turn that called tools
    carries them in ``tool_calls``; a tool turn answers the call ``tool_call_id`` (tool ``name``)."""

    role: str
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id:
            d["tool_call_id"] = self.tool_call_id
        if self.name:
            d["name"] = self.name
        return d


StreamItem = str | ToolCall | Usage  # a provider may end its stream with one Usage (llm/usage.py)


class ChatProvider(ABC):
    """One chat model. ``name`` identifies it in message metadata (e.g. "offline", "openai:gpt-4o-mini")."""

    name: str = "provider"
    supports_tools: bool = False

    @abstractmethod
    def stream(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
               timeout: float = 60.0, tools: Sequence[ToolSpec] | None = None,
               cancel: threading.Event | None = None, grounding: Any = None) -> Iterator[StreamItem]:
        """Yield the answer's text pieces (then any ToolCall); raise ProviderError on failure.

        ``grounding`` is the structured context behind the system prompt (an expert turn's
        ``kgos.experts.TurnContext``); model providers ignore it and read ``system``, the offline
        provider writes its answer from it."""

    def complete(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
                 timeout: float = 60.0) -> str:
        """The whole answer as one string (tool calls are not offered)."""
        pieces = self.stream(messages, system=system, max_tokens=max_tokens, timeout=timeout)
        return "".join(p for p in pieces if isinstance(p, str))
