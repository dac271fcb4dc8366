"""LLM layer: chat providers behind one interface (offline grounded default, Anthropic, Gemini,
OpenAI-compatible).

``get_provider("anthropic:claude-sonnet-4-5")`` builds one from a config string (see
:mod:`kgos.llm.registry`); every provider streams text pieces and tool calls through
:meth:`ChatProvider.stream`. The HTTP providers are imported on first use.
"""

from __future__ import annotations

from typing import Any

from .base import (
    ChatProvider,
    Message,
    ProviderError,
    ProviderNotConfigured,
    ProviderTimeout,
    StreamItem,
    ToolCall,
    ToolSpec,
)

__all__ = [
    "AnthropicProvider",
    "ChatProvider",
    "GeminiProvider",
    "Message",
    "OpenAICompatProvider",
    "ProviderError",
    "ProviderNotConfigured",
    "ProviderTimeout",
    "StreamItem",
    "ToolCall",
    "ToolSpec",
    "available_providers",
    "get_provider",
]

_LAZY = {
    "get_provider": "registry",
    "available_providers": "registry",
    "OpenAICompatProvider": "openai_compat",
    "AnthropicProvider": "anthropic",
    "GeminiProvider": "gemini",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
