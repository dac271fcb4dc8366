"""The offline default provider: a grounded, extractive answer composed from one turn's retrieved
nodes, edges, capability check and composition plan, with ``[Source: kg:node]`` citations. No model,
no network, deterministic: the same context always gives the same answer.

It answers only from the ``grounding`` an expert turn passes (``kgos.experts.context.TurnContext``);
without one it says what it needs instead of inventing anything.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from .base import ChatProvider, Message, StreamItem, ToolSpec
from .usage import TOKENIZER, Usage, count_tokens


class OfflineProvider(ChatProvider):
    name = "offline"
    supports_tools = False

    def stream(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
               timeout: float = 60.0, tools: Sequence[ToolSpec] | None = None,
               cancel: threading.Event | None = None, grounding: Any = None) -> Iterator[StreamItem]:
        text = compose(grounding) if grounding is not None else NO_GROUNDING
        said = _limit_words(text, max_tokens)
        for piece in _pieces(said):
            if cancel is not None and cancel.is_set():
                return
            yield piece
        # no service counts for us: the prompt it was given and the answer, by the stated tokenizer
        prompt = sum(count_tokens(m.content) for m in messages) + count_tokens(system or "")
        yield Usage(prompt, count_tokens(said), "length" if said != text else "stop", TOKENIZER)


NO_GROUNDING = ("The offline provider answers only from a knowledge-graph context, and none was given. "
                "Ask through an expert (kgos expert chat, POST /api/experts/{id}/chat), or configure a model "
                "provider (KGOS_LLM_PROVIDER).")


def compose(grounding: Any) -> str:
    """The answer for a grounding that writes its own (``TurnContext.extractive_answer``: the experts
    layer knows the graph's shape); anything else is not grounding."""
    write = getattr(grounding, "extractive_answer", None)
    return write() if callable(write) else NO_GROUNDING


def _limit_words(text: str, max_tokens: int) -> str:
    """At most ``max_tokens`` tokens of the stated tokenizer (llm/usage.py), whole words; cut at a
    line end where possible. (WordPiece splits at spaces first, so words' counts add up.)"""
    words = text.split(" ")
    used = 0
    for i, word in enumerate(words):
        used += count_tokens(word)
        if used > max_tokens:
            cut = " ".join(words[:i])
            return cut[: cut.rfind("\n")] if "\n" in cut else cut
    return text


def _pieces(text: str, words: int = 3) -> Iterator[str]:
    """Stream a few words at a time, keeping the whitespace (the pieces join to ``text``)."""
    tokens = re.findall(r"\S+\s*|\s+", text)
    for i in range(0, len(tokens), words):
        yield "".join(tokens[i:i + words])
