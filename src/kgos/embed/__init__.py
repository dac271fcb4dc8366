"""Embedder plugins: text -> unit-norm float32 vectors.

>>> from kgos.embed import get_embedder
>>> emb = get_embedder("hash")            # or "minilm", "static", "openai:<model>", "default", ...
>>> vecs = emb.embed(["tar", "archive files"])      # (2, emb.dims) float32, unit rows
>>> q = emb.embed_query("make a tarball")           # (emb.dims,)

Store ``emb.name`` and ``emb.content_hash(text)`` next to each vector: re-embed only what changed, and
never compare vectors of different names. See ``docs/embedders.md`` for the measured comparison.
Heavy modules (onnxruntime, httpx, model2vec) are imported only when their embedder is created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Embedder, EmbeddingServiceError, content_hash, l2_normalize
from .hashing import HashingEmbedder
from .registry import DEFAULT_SPEC, EmbedderInfo, available_embedders, get_embedder, resolve_spec

if TYPE_CHECKING:
    from .api import GeminiEmbedder, OpenAIEmbedder
    from .minilm import OnnxMiniLMEmbedder
    from .static import StaticEmbedder, build_static_model, default_static_path

__all__ = [
    "DEFAULT_SPEC",
    "Embedder",
    "EmbedderInfo",
    "EmbeddingServiceError",
    "GeminiEmbedder",
    "HashingEmbedder",
    "OnnxMiniLMEmbedder",
    "OpenAIEmbedder",
    "StaticEmbedder",
    "available_embedders",
    "build_static_model",
    "content_hash",
    "default_static_path",
    "get_embedder",
    "l2_normalize",
    "resolve_spec",
]

_LAZY = {
    "OnnxMiniLMEmbedder": ".minilm",
    "StaticEmbedder": ".static",
    "build_static_model": ".static",
    "default_static_path": ".static",
    "OpenAIEmbedder": ".api",
    "GeminiEmbedder": ".api",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'kgos.embed' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(mod, __name__), name)
