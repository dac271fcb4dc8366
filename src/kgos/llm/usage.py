"""Token usage and why an answer ended, in OpenAI's vocabulary (issue 29, goal 5).

A provider may yield one ``Usage`` as the last item of its stream: the service's own token counts
(``counted_by="provider"``) and its stop reason mapped to ``finish_reason`` (``stop`` or ``length``).
What a provider does not report (the offline composer reports nothing a service counted) is counted
with ``TOKENIZER``: the MiniLM WordPiece tokenizer bundled for the default embedder (BERT uncased,
30,522 tokens), so the figure is reproducible offline and says what it is.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

TOKENIZER = "wordpiece:minilm"  # bert-base-uncased WordPiece, the vocabulary in kgos/embed/assets
FINISH_REASONS = ("stop", "length")


@dataclass(frozen=True)
class Usage:
    """Tokens in and out of one answer; None where the provider did not say (filled by ``complete``)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"  # "length": the answer was cut at max_tokens
    counted_by: str = "provider"  # "provider" (the service's count) or TOKENIZER

    @property
    def total_tokens(self) -> int:
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    def plus(self, other: Usage) -> Usage:
        """Two rounds of one turn (a tool round, then the answer): tokens add up, the last one ends it."""
        known = self.counted_by if self.counted_by == other.counted_by else TOKENIZER + "+provider"
        return Usage(_add(self.prompt_tokens, other.prompt_tokens), _add(self.completion_tokens, other.completion_tokens),
                     other.finish_reason, known)

    def to_dict(self) -> dict[str, Any]:
        """OpenAI's ``usage`` object, plus ``counted_by``."""
        return {"prompt_tokens": self.prompt_tokens or 0, "completion_tokens": self.completion_tokens or 0,
                "total_tokens": self.total_tokens, "counted_by": self.counted_by}


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


@functools.cache
def _tokenizer() -> Any:
    from ..embed.wordpiece import load_vocab, make_tokenizer
    return make_tokenizer(vocab=load_vocab(), backend="python")


def count_tokens(text: str) -> int:
    """Tokens of ``text`` by ``TOKENIZER`` (no special tokens)."""
    return len(_tokenizer().encode(text)) if text else 0


def complete(usage: Usage | None, prompt: Iterable[str], answer: str) -> Usage:
    """``usage`` with every count it lacks counted by ``TOKENIZER`` over the prompt texts (system
    prompt and messages) and the answer; ``counted_by`` says which counts are whose."""
    usage = usage or Usage(counted_by=TOKENIZER)
    if usage.prompt_tokens is not None and usage.completion_tokens is not None:
        return usage
    counted_by = TOKENIZER if usage.prompt_tokens is None and usage.completion_tokens is None else TOKENIZER + "+provider"
    return Usage(usage.prompt_tokens if usage.prompt_tokens is not None else sum(count_tokens(t) for t in prompt),
                 usage.completion_tokens if usage.completion_tokens is not None else count_tokens(answer),
                 usage.finish_reason, counted_by)


def finish_reason(raw: Any) -> str:
    """A service's stop reason in OpenAI's words: cut by the token limit -> "length", else "stop"."""
    return "length" if str(raw).lower() in ("length", "max_tokens", "max_output_tokens") else "stop"
