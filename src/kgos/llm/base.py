"""The chat-provider interface every LLM backend implements.

A provider turns a list of messages into text, whole (``complete``) or as a stream of text pieces
(``stream``). Failures raise ``ProviderError`` (a ``KGOSError``) — a timeout, a refused connection,
an answer that is not what was asked for — so callers can fall back instead of crashing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import KGOSError


class ProviderError(KGOSError):
    """The model could not answer (timeout, HTTP error, malformed output)."""

    status = 502


@dataclass(frozen=True)
class Message:
    role: str  # "user" | "assistant" | "system"
    content: str

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content}


class ChatProvider(ABC):
    """One chat model. ``name`` identifies it in message metadata (e.g. "offline", "openai:gpt-4o-mini")."""

    name: str = "provider"

    @abstractmethod
    def stream(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
               timeout: float = 60.0) -> Iterator[str]:
        """Yield the answer in pieces; raise ProviderError on failure."""

    def complete(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
                 timeout: float = 60.0) -> str:
        """The whole answer as one string."""
        return "".join(self.stream(messages, system=system, max_tokens=max_tokens, timeout=timeout))
