"""Memory settings: the constants of spec/002, each overridable by a parameter or an environment variable.

spec/002 names them ``MILTON_KG_*``; KG-OS reads ``KGOS_MEMORY_*``:

| variable                              | default  | spec/002                                   |
|---------------------------------------|----------|--------------------------------------------|
| ``KGOS_MEMORY_DB``                    | memory   | (the memory KG's db_id)                    |
| ``KGOS_MEMORY_MAX_CHARS``             | 100000   | (size cap of one memory)                   |
| ``KGOS_MEMORY_LLM_ENRICH``            | false    | ``MILTON_KG_LLM_ENRICH_ENABLED``           |
| ``KGOS_MEMORY_LLM_ENRICH_MAX_EDGES``  | 10       | ``MILTON_KG_LLM_ENRICH_MAX_EDGES``         |
| ``KGOS_MEMORY_LLM_TIMEOUT``           | 20       | (seconds per enrichment call)              |
| ``KGOS_MEMORY_LLM_PROVIDER``          | (chat's) | (provider spec for enrichment, e.g. ``openai:gpt-4o-mini``; default: the chat default, ``KGOS_LLM_PROVIDER``) |
| ``KGOS_MEMORY_CONTEXT_ENABLED``       | true     | ``MILTON_KG_CONTEXT_ENABLED``              |
| ``KGOS_MEMORY_CONTEXT_MAX_EDGES``     | 20       | ``MILTON_KG_CONTEXT_MAX_EDGES``            |
| ``KGOS_MEMORY_CONTEXT_MAX_CHARS``     | 1500     | ``MILTON_KG_CONTEXT_MAX_CHARS``            |
| ``KGOS_MEMORY_DECAY_HALF_LIFE_DAYS``  | (off)    | "confidence decay" (future extensions)     |
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..errors import InvalidArgument
from ..settings import Settings, current, variables

_ENV = {
    "db_id": "KGOS_MEMORY_DB",
    "max_chars": "KGOS_MEMORY_MAX_CHARS",
    "llm_enrich": "KGOS_MEMORY_LLM_ENRICH",
    "llm_max_edges": "KGOS_MEMORY_LLM_ENRICH_MAX_EDGES",
    "llm_timeout": "KGOS_MEMORY_LLM_TIMEOUT",
    "llm_provider": "KGOS_MEMORY_LLM_PROVIDER",
    "context_enabled": "KGOS_MEMORY_CONTEXT_ENABLED",
    "context_max_edges": "KGOS_MEMORY_CONTEXT_MAX_EDGES",
    "context_max_chars": "KGOS_MEMORY_CONTEXT_MAX_CHARS",
    "decay_half_life_days": "KGOS_MEMORY_DECAY_HALF_LIFE_DAYS",
}


@dataclass(frozen=True)
class MemoryConfig:
    db_id: str = "memory"
    max_chars: int = 100_000             # a longer memory is refused with a clear error
    max_entities: int = 64               # per memory: bounds the KG writes of one pathological text
    max_relations: int = 64
    evidence_cap: int = 20               # evidence entries kept per edge: the first + the newest
    llm_enrich: bool = False             # spec/002 phase 2 is off by default
    llm_max_edges: int = 10
    llm_min_weight: float = 0.5
    llm_timeout: float = 20.0
    llm_provider: str | None = None      # a provider spec; None: the chat default (never the offline composer)
    context_enabled: bool = True
    context_max_edges: int = 20
    context_max_chars: int = 1500
    context_max_entities: int = 10
    decay_half_life_days: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_chars", "max_entities", "max_relations", "evidence_cap", "llm_max_edges",
                     "context_max_edges", "context_max_chars", "context_max_entities"):
            if getattr(self, name) < 1:
                raise InvalidArgument(f"memory setting {name} must be >= 1, not {getattr(self, name)}")
        if self.decay_half_life_days is not None and self.decay_half_life_days <= 0:
            raise InvalidArgument("the decay half-life must be a positive number of days")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> MemoryConfig:
        """Defaults, then ``KGOS_MEMORY_*`` variables, then explicit ``overrides`` (None = not given)."""
        s = current() if env is None else Settings.from_env(env)
        by_env = {f.metadata["env"]: f.name for f in variables()}
        values: dict[str, Any] = {name: getattr(s, by_env[var]) for name, var in _ENV.items()
                                  if s.sources.get(by_env[var]) == "environment"}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def with_(self, **changes: Any) -> MemoryConfig:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
