"""Evaluating search settings: one configuration, or the ablation table of spec/000 appendix C."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument
from ..index.text import TextConfig
from ..retrieval.engine import SearchEngine
from ..retrieval.hybrid import SearchOptions
from .probes import Probe
from .run import EvalReport, evaluate, search_ranker


def spec_options() -> dict[str, Any]:
    """The settings in which ``SearchOptions.spec()`` (the spec's formula) differs from the defaults."""
    spec, default = SearchOptions.spec(), SearchOptions()
    return {f.name: getattr(spec, f.name) for f in fields(SearchOptions)
            if getattr(spec, f.name) != getattr(default, f.name)}


# spec/000 appendix C, in its order, then the default without each graph-derived signal (issue 13:
# what the graph earns), then the adaptive default.
ABLATION: list[tuple[str, dict[str, Any]]] = [
    ("embedding only", {"mode": "embedding"}),
    ("BM25 only", {"mode": "bm25"}),
    ("FTS5 only", {"mode": "fts"}),
    ("graph only", {"mode": "graph"}),
    ("names only", {"mode": "names"}),
    ("3-weight 0.40/0.45/0.15", {"mode": "fixed3"}),
    ("RRF, 7 mechanisms", {"mode": "rrf"}),
    ("4-weight 0.35/0.40/0.15/0.10", {"mode": "fixed4"}),
    ("spec formula (spec/001 1.2-1.8)", {"mode": "hybrid", "options": spec_options()}),
    ("default without the graph signal", {"mode": "hybrid", "options": {"use_graph": False}}),
    ("default without the intent signal", {"mode": "hybrid", "options": {"use_intent": False}}),
    ("adaptive (default)", {"mode": "hybrid"}),
]
SEARCH_KEYS = ("mode", "weights", "intent")


def load_config(path: str | Path | None) -> dict[str, Any]:
    """A JSON config: ``{"mode", "weights", "intent", "text": {TextConfig}, "options": {SearchOptions}}``."""
    if path is None:
        return {}
    try:
        config = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise InvalidArgument(f"cannot read config {path}: {exc}") from None
    if not isinstance(config, dict):
        raise InvalidArgument(f"config {path} must be a JSON object")
    return config


def _dataclass(cls: type, values: dict[str, Any], what: str) -> Any:
    known = {f.name for f in fields(cls)}
    unknown = set(values) - known
    if unknown:
        raise InvalidArgument(f"unknown {what} setting(s) {sorted(unknown)}; known: {sorted(known)}")
    return cls(**values)


def engine_for(kg: Any, config: dict[str, Any]) -> SearchEngine:
    """The KG's own engine, or a separate one when the config changes text analysis or options."""
    if not config.get("text") and not config.get("options"):
        return kg.engine
    return SearchEngine(kg.store, kg.workspace.cache_dir, text=_dataclass(TextConfig, config.get("text", {}), "text"),
                        options=_dataclass(SearchOptions, config.get("options", {}), "options"),
                        embedder=kg.engine._spec())


def evaluate_config(kg: Any, probes: Sequence[Probe], config: dict[str, Any], k: int = 10,
                    label: str = "") -> EvalReport:
    engine = engine_for(kg, config)
    search = {key: config[key] for key in SEARCH_KEYS if config.get(key) is not None}
    warnings: list[str] = []
    rank = search_ranker(engine.search, k, warnings, **search)
    engine.snapshot()  # build outside the timed queries
    return replace(evaluate(probes, rank, label or search.get("mode", "hybrid")), warnings=tuple(warnings))


def merged(base: dict[str, Any] | None, config: dict[str, Any]) -> dict[str, Any]:
    """``config`` over ``base``, their ``options`` merged key by key (the row's win)."""
    out = {**(base or {}), **config}
    options = {**(base or {}).get("options", {}), **config.get("options", {})}
    if options:
        out["options"] = options
    return out


def ablation(kg: Any, probes: Sequence[Probe], k: int = 10, base: dict[str, Any] | None = None) -> list[EvalReport]:
    """Every configuration of ``ABLATION`` on the same probes, in one run."""
    return [evaluate_config(kg, probes, merged(base, config), k, label) for label, config in ABLATION]
