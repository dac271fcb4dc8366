"""One expert turn run to its end, as a result the MCP ``ask_expert`` tool and the OpenAI-compatible
``/v1/chat/completions`` route both answer from (the SSE route streams the same events instead).

>>> import tempfile, kgos
>>> from kgos.data import load_demo
>>> from kgos.llm import get_provider
>>> ws = kgos.Workspace(tempfile.mkdtemp()); _ = load_demo(ws, embedder=None)
>>> a = ask(ws, get_provider("offline"), "demo", "How do I reduce my API costs?")
>>> a.citations["ok"], "[Source: demo:" in a.answer
(True, True)
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..experts.chat import ExpertChat, Turn

if TYPE_CHECKING:
    from ..kg import Workspace
    from ..llm.base import ChatProvider

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class TurnAnswer:
    """A finished turn: the answer text (with ``[Source: kg:node]`` citations), the nodes it was
    grounded on, the citation check, and the provider's error if it failed (``error_status``: HTTP)."""

    conversation_id: str
    answer: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    citations: dict[str, Any] = field(default_factory=dict)
    intent: str | None = None
    message_id: str | None = None
    error: str | None = None
    error_status: int = 502
    turn_id: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)  # prompt/completion/total tokens, counted_by
    finish_reason: str = "stop"  # "length" when cut at max_tokens

    def to_dict(self) -> dict[str, Any]:
        d = {"conversation_id": self.conversation_id, "answer": self.answer, "sources": self.sources,
             "citations": self.citations, "intent": self.intent, "message_id": self.message_id,
             "turn_id": self.turn_id, "usage": self.usage, "finish_reason": self.finish_reason}
        return {**d, "error": self.error} if self.error else d


def collect(events: Iterable[dict[str, Any]], turn: Turn) -> TurnAnswer:
    """The events of ``ExpertChat.events`` folded into one ``TurnAnswer``."""
    text: list[str] = []
    sources: list[dict[str, Any]] = []
    done: dict[str, Any] = {}
    error: dict[str, Any] = {}
    for e in events:
        kind = e["type"]
        if kind == "token":
            text.append(e["content"])
        elif kind == "sources":
            sources = e["nodes"]
        elif kind == "error":
            error = e
        elif kind == "done":
            done = e
    return TurnAnswer(turn.conversation_id, "".join(text), sources, done.get("citations") or {},
                      turn.context.intent, done.get("message_id"), error.get("content"),
                      error.get("status", 502), turn.turn_id, done.get("usage") or {},
                      done.get("finish_reason", "stop"))


def ask(ws: Workspace, provider: ChatProvider, expert: str, question: str, *, conversation_id: str | None = None,
        history: Sequence[Any] | None = None, max_tokens: int = 1024, timeout: float = 60.0,
        delegate: bool = True) -> TurnAnswer:
    """Ask ``expert`` one question through the 8-stage loop (retrieval, prompt, model, citation
    check, persistence); raises a KGOSError for bad input (unknown expert, empty question)."""
    engine = ExpertChat(ws, provider, lock=ws.lock, max_tokens=max_tokens, timeout=timeout, delegate=delegate)
    turn = engine.start(expert, question, conversation_id=conversation_id, history=history)
    return collect(engine.events(turn), turn)


async def stream_events(engine: ExpertChat, turn: Turn) -> AsyncIterator[dict[str, Any]]:
    """``engine.events(turn)`` produced in a worker thread and handed over through an asyncio queue:
    when the consumer goes away (the client disconnected, the response was cancelled) the worker sees
    ``cancel`` set, the provider stops and the partial answer is still saved."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
    cancel = threading.Event()

    def put(item: dict[str, Any] | None) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop is gone: nobody is listening any more
            cancel.set()

    def produce() -> None:
        try:
            for event in engine.events(turn, cancel):
                put(event)
        except Exception:
            log.exception("chat turn %s failed", turn.conversation_id)
            put({"type": "error", "content": "the chat turn failed; see the server log"})
            put({"type": "done", "conversation_id": turn.conversation_id})
        finally:
            put(None)

    threading.Thread(target=produce, name=f"chat-{turn.conversation_id}", daemon=True).start()
    try:
        while (event := await queue.get()) is not None:
            yield event
    finally:
        cancel.set()  # the client left (or we are done): stop generating; the worker still saves


def sse_frame(doc: Any) -> str:
    """One Server-Sent Events ``data:`` frame (the format both chat streams use; non-ASCII kept)."""
    return f"data: {json.dumps(doc, ensure_ascii=False)}\n\n"
