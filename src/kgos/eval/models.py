"""Embedding models compared on one probe set: each model's vectors side by side in the KG, the same
probes searched with each (``kg.search(..., model=spec)``), by embeddings alone and by the hybrid."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InvalidArgument
from .probes import Probe
from .run import EvalReport, evaluate, kg_ranker

MODES = ("embedding", "hybrid")  # the model alone, and the model inside the default hybrid


@dataclass(frozen=True)
class ModelRow:
    """One (model, mode) of a comparison."""

    model: str  # the spec searched with
    mode: str
    embedded: int  # nodes this comparison embedded for the model (0: its vectors were current)
    report: EvalReport

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "mode": self.mode, "embedded": self.embedded, "n": self.report.n,
                "strict": self.report.strict, "lenient": self.report.lenient,
                "latency_ms": self.report.latency_ms, "warnings": list(self.report.warnings)}


@dataclass(frozen=True)
class ModelComparison:
    db_id: str
    k: int
    rows: tuple[ModelRow, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"db_id": self.db_id, "k": self.k, "rows": [r.to_dict() for r in self.rows]}


def compare_models(kg: Any, probes: Sequence[Probe], models: Sequence[str], k: int = 10,
                   modes: Sequence[str] = MODES, embed: bool = True,
                   progress: Callable[[str], None] | None = None) -> ModelComparison:
    """Evaluate ``probes`` on ``kg`` once per model and mode. With ``embed`` each model's vectors are
    brought up to date first (``kg.embed_side``: only nodes whose text changed; the KG's search model
    stays); without it a model with no vectors is an error."""
    specs = list(dict.fromkeys(m.strip() for m in models if m and m.strip()))
    if not specs:
        raise InvalidArgument("name at least one embedding model to compare, e.g. --models minilm,fast")
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise InvalidArgument(f"modes must be among {', '.join(MODES)}; got {', '.join(bad) or 'none'}")
    rows = []
    for spec in specs:
        embedded = 0
        if embed:
            if progress is not None:
                progress(f"embedding {kg.db_id} with {spec} (only nodes whose text changed)")
            embedded = kg.embed_side(spec).embedded
        for mode in modes:
            warnings: list[str] = []
            report = evaluate(probes, kg_ranker(kg, k, warnings, mode=mode, model=spec), label=f"{spec} {mode}")
            rows.append(ModelRow(spec, mode, embedded, replace(report, warnings=tuple(warnings))))
    return ModelComparison(kg.db_id, k, tuple(rows))

