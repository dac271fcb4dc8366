"""One factory for every chat provider, keyed by a config string.

``get_provider("openai:gpt-4o-mini")`` — the part before the first ``:`` names the provider, the rest
(which may contain more colons, e.g. ``ollama:llama3.2:1b``) the model:

- ``offline``: the grounded offline provider (no model, no network);
- ``local``: a GGUF model run in-process by llama.cpp (``kgos[local]``): ``local`` is the bundled
  SmolLM2-135M, ``local:gemma3-270m`` the other bundled model, ``local:/path/model.gguf`` any file;
- ``openai`` (alias ``openai-compatible``): any OpenAI-compatible server — base URL from
  ``base_url=``, ``$KGOS_OPENAI_BASE_URL``, ``$OPENAI_BASE_URL``, else api.openai.com (which needs
  ``$OPENAI_API_KEY``);
- ``ollama``, ``vllm``, ``llamacpp``, ``lmstudio``: the same, defaulting the base URL to the server's
  usual localhost port when no base URL is set in the environment;
- ``anthropic`` (``$ANTHROPIC_API_KEY``) and ``gemini`` (``$GEMINI_API_KEY`` or ``$GOOGLE_API_KEY``).

No spec: ``$KGOS_LLM_PROVIDER``, else ``openai`` when an OpenAI base URL is set, else ``offline``.
No model: the spec's, else ``$KGOS_LLM_MODEL`` when the provider is that default one (so a model named
for the configured server is not sent to another provider), else the provider's own default.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any

from ..errors import InvalidArgument
from ..plugins import add_builtin, entries, hookimpl
from ..settings import current
from ._http import display_url
from .anthropic import ANTHROPIC_DEFAULT_MODEL, ANTHROPIC_DEFAULT_URL, AnthropicProvider
from .base import ChatProvider, ProviderNotConfigured
from .gemini import GEMINI_DEFAULT_MODEL, GEMINI_DEFAULT_URL, GeminiProvider, gemini_api_key
from .openai_compat import OPENAI_DEFAULT_MODEL, OpenAICompatProvider, is_openai_cloud, openai_base_url

__all__ = ["PROVIDERS", "available_providers", "default_spec", "get_provider", "parse_spec"]

#: local OpenAI-compatible servers: (base URL when none is set in the environment, default model)
LOCAL_SERVERS: dict[str, tuple[str, str | None]] = {
    "ollama": ("http://127.0.0.1:11434/v1", "llama3.2"),
    "vllm": ("http://127.0.0.1:8000/v1", None),  # the served model's name is needed
    "llamacpp": ("http://127.0.0.1:8080/v1", "default"),  # llama.cpp serves one model, any name works
    "lmstudio": ("http://127.0.0.1:1234/v1", None),
}
ALIASES = {"openai-compatible": "openai"}
PROVIDERS = ("offline", "local", "openai", "anthropic", "gemini", *LOCAL_SERVERS)
_OPENAI_ENV = ["OPENAI_API_KEY", "KGOS_OPENAI_BASE_URL", "OPENAI_BASE_URL"]
#: provider -> (the kgos extra its transport needs, the module that extra installs)
_EXTRAS = {"openai": ("openai", "openai"), "anthropic": ("anthropic", "anthropic"),
           "gemini": ("gemini", "httpx_sse"), "local": ("local", "llama_cpp")}
_OPTIONS = {"openai": {"base_url", "api_key", "extra_headers"}, "anthropic": {"api_key", "base_url"},
            "gemini": {"api_key", "base_url"}, "offline": set(), "local": {"n_ctx", "n_threads", "tools"}}


def default_spec() -> str:
    """``$KGOS_LLM_PROVIDER``, else ``"openai"`` if an OpenAI base URL is set, else ``"offline"``."""
    if spec := current().llm_provider:
        return spec
    if current().openai_base_url or os.environ.get("OPENAI_BASE_URL", "").strip():
        return "openai"
    return "offline"


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``"provider:model"`` -> (canonical provider name, model or None); InvalidArgument if unknown."""
    if not isinstance(spec, str):
        raise InvalidArgument(f"an LLM provider spec must be a string, got {type(spec).__name__}")
    name, _, model = spec.strip().partition(":")
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    if key not in PROVIDERS and key not in _plugin_factories():
        choices = ", ".join([*PROVIDERS, *_plugin_factories(), *ALIASES])
        raise InvalidArgument(f"unknown LLM provider {name.strip()!r}: choose one of {choices} "
                              "(optionally followed by :model, e.g. openai:gpt-4o-mini)")
    return key, model.strip() or None


def get_provider(spec: str | None = None, *, model: str | None = None, timeout: float = 60.0,
                 **options: Any) -> ChatProvider:
    """The chat provider ``spec`` names (see the module docstring); ``options`` go to its constructor
    (``base_url``, ``api_key``; ``extra_headers`` for OpenAI-compatible servers).

    Raises InvalidArgument for an unknown provider or option, ProviderNotConfigured when a key or
    model is missing (the message names the variable to set)."""
    key, spec_model = parse_spec(spec if spec and spec.strip() else default_spec())
    if key not in PROVIDERS:  # a plugin's provider: its factory checks its own options
        chosen = model or spec_model or _env_model(key)
        return _plugin_factories()[key](key, chosen, timeout, dict(options))
    family = "openai" if key in LOCAL_SERVERS else key
    unknown = set(options) - _OPTIONS[family]
    if unknown:
        raise InvalidArgument(f"{key} takes no option {', '.join(sorted(unknown))} "
                              f"(accepted: {', '.join(sorted(_OPTIONS[family])) or 'none'})")
    if key == "offline":
        return _offline(key, None, timeout, options)
    chosen = model or spec_model or _env_model(key) or _builtin_model(key)
    if not chosen:
        raise ProviderNotConfigured(f"{key} needs a model name: use {key}:<model> or set KGOS_LLM_MODEL "
                                    f"(with KGOS_LLM_PROVIDER={key})")
    return _FACTORIES[family](key, chosen, timeout, options)


def available_providers() -> list[dict[str, Any]]:
    """One entry per provider for a listing: ``name``, ``configured`` (its key or server URL is set;
    local servers need none), ``default`` (what ``get_provider()`` picks), ``default_model``,
    ``env`` (the variables it reads) and, for HTTP providers, ``base_url``. No secrets."""
    default = parse_spec(default_spec())[0] if _valid(default_spec()) else None
    openai_url = openai_base_url()
    rows: list[dict[str, Any]] = [
        _row("offline", True, []),
        _row("openai", bool(os.environ.get("OPENAI_API_KEY", "").strip()) or not is_openai_cloud(openai_url),
             _OPENAI_ENV, openai_url),
        _row("anthropic", bool(os.environ.get("ANTHROPIC_API_KEY", "").strip())
             or bool(os.environ.get("ANTHROPIC_BASE_URL", "").strip()),
             ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"],
             os.environ.get("ANTHROPIC_BASE_URL", "").strip() or ANTHROPIC_DEFAULT_URL),
        _row("gemini", bool(gemini_api_key()) or bool(current().gemini_base_url),
             ["GEMINI_API_KEY", "GOOGLE_API_KEY", "KGOS_GEMINI_BASE_URL"],
             current().gemini_base_url or GEMINI_DEFAULT_URL),
    ]
    for name, (url, _) in LOCAL_SERVERS.items():  # no key needed; usable once a model is known
        rows.append(_row(name, True, _OPENAI_ENV[1:], openai_base_url(url)))
        rows[-1]["configured"] = rows[-1]["default_model"] is not None
    rows.append(_row("local", _local_installed(), ["KGOS_LLM_MODEL"]))
    rows += [_row(name, True, []) for name in _plugin_factories()]
    for row in rows:
        row["default"] = row["name"] == default
        family = "openai" if row["name"] in LOCAL_SERVERS else row["name"]
        if family in _EXTRAS:  # the package its transport needs, and whether it is there
            extra, module = _EXTRAS[family]
            row["extra"], row["installed"] = extra, find_spec(module) is not None
    rows[1]["aliases"] = list(ALIASES)
    return rows


def _row(name: str, configured: bool, env: list[str], base_url: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"name": name, "configured": configured,
                           "default_model": None if name == "offline" else
                           (_env_model(name) or _builtin_model(name)),
                           "env": env}
    if base_url:
        row["base_url"] = display_url(base_url)
    return row


def _valid(spec: str) -> bool:
    try:
        parse_spec(spec)
    except InvalidArgument:
        return False
    return True


def _env_model(key: str) -> str | None:
    """The default spec's model or ``$KGOS_LLM_MODEL``, if ``key`` is the default provider."""
    spec = default_spec()
    if not _valid(spec):
        return None
    default_key, default_model = parse_spec(spec)
    if default_key != key:
        return None
    return default_model or current().llm_model


def _builtin_model(key: str) -> str | None:
    if key in LOCAL_SERVERS:
        return LOCAL_SERVERS[key][1]
    return {"openai": OPENAI_DEFAULT_MODEL, "anthropic": ANTHROPIC_DEFAULT_MODEL,
            "gemini": GEMINI_DEFAULT_MODEL, "local": "smollm2"}.get(key)


def _local_installed() -> bool:
    """llama-cpp-python is importable (found, not imported: a listing stays cheap)."""
    return find_spec("llama_cpp") is not None


def _offline(key: str, model: str | None, timeout: float, options: dict[str, Any]) -> ChatProvider:
    from .offline import OfflineProvider
    return OfflineProvider()


def _local(key: str, model: str, timeout: float, options: dict[str, Any]) -> ChatProvider:
    from .local import LocalProvider
    return LocalProvider(model, timeout=timeout, **options)


def _openai(key: str, model: str, timeout: float, options: dict[str, Any]) -> ChatProvider:
    base_url = options.pop("base_url", None)
    if not base_url and key in LOCAL_SERVERS:
        base_url = openai_base_url(LOCAL_SERVERS[key][0])
    return OpenAICompatProvider(model, base_url=base_url, timeout=timeout, **options)


def _anthropic(key: str, model: str, timeout: float, options: dict[str, Any]) -> ChatProvider:
    return AnthropicProvider(model, timeout=timeout, **options)


def _gemini(key: str, model: str, timeout: float, options: dict[str, Any]) -> ChatProvider:
    return GeminiProvider(model, timeout=timeout, **options)


_FACTORIES: dict[str, Callable[[str, str, float, dict[str, Any]], ChatProvider]] = {
    "openai": _openai, "anthropic": _anthropic, "gemini": _gemini, "local": _local,
}


@hookimpl
def register_llm_providers() -> dict[str, Callable[[str, str | None, float, dict[str, Any]], ChatProvider]]:
    """The built-in providers, through the hook third-party packages answer too (kgos.plugins);
    :func:`get_provider` checks their options and models before calling them."""
    return {"offline": _offline, **_FACTORIES, **{name: _openai for name in LOCAL_SERVERS}}


def _plugin_factories() -> dict[str, Callable[[str, str | None, float, dict[str, Any]], ChatProvider]]:
    """Providers added by plugins: ``{name: factory(name, model or None, timeout, options)}``."""
    return {e.name: e.value for e in entries("llm_providers") if e.name not in PROVIDERS and callable(e.value)}


add_builtin(sys.modules[__name__], "kgos.llm")
