"""Shared fixtures for the expert tests: a scripted chat provider and SSE parsing."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from kgos.llm.base import ChatProvider, Message, StreamItem, ToolSpec


class ScriptedProvider(ChatProvider):
    """Streams scripted rounds (text pieces and ToolCalls); records every request; can fail after
    ``error_after`` pieces, or sleep ``delay`` seconds before each piece (for cancellation tests)."""

    name = "scripted"

    def __init__(self, *rounds: Sequence[StreamItem], error: Exception | None = None, error_after: int = 0,
                 tools: bool = False, delay: float = 0.0) -> None:
        self.rounds = [list(r) for r in rounds] or [["Nothing to say."]]
        self.error, self.error_after, self.delay = error, error_after, delay
        self.supports_tools = tools
        self.calls: list[dict[str, Any]] = []
        self.stopped = threading.Event()

    def stream(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
               timeout: float = 60.0, tools: Sequence[ToolSpec] | None = None,
               cancel: threading.Event | None = None, grounding: Any = None) -> Iterator[StreamItem]:
        self.calls.append({"messages": list(messages), "system": system, "tools": tools, "grounding": grounding})
        items = self.rounds[min(len(self.calls), len(self.rounds)) - 1]
        for i, item in enumerate(items):
            if self.error is not None and i == self.error_after:
                raise self.error
            if self.delay:
                time.sleep(self.delay)
            if cancel is not None and cancel.is_set():
                self.stopped.set()
                return
            yield item
        if self.error is not None and self.error_after >= len(items):
            raise self.error


def parse_sse(text: str) -> list[dict[str, Any]]:
    """The ``data:`` payloads of an SSE body, one dict per event (WHATWG framing: blank line ends it)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events
