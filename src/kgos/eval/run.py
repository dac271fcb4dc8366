"""Running a probe set against a KG: metrics overall, by level and by intent, and latency."""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .metrics import mean_metrics, probe_metrics
from .probes import Probe

Ranker = Callable[[str], tuple[list[str], str]]  # query -> (ranked node ids, intent name)


@dataclass(frozen=True)
class EvalReport:
    n: int
    strict: dict[str, float]
    lenient: dict[str, float]
    by_level: dict[str, dict[str, Any]]
    by_intent: dict[str, dict[str, Any]]
    latency_ms: dict[str, float]
    label: str = ""
    per_probe: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    warnings: tuple[str, ...] = ()  # what the searches warned about (e.g. a KG without vectors), once each

    def to_dict(self, per_probe: bool = False) -> dict[str, Any]:
        d = {"label": self.label, "n": self.n, "strict": self.strict, "lenient": self.lenient,
             "by_level": self.by_level, "by_intent": self.by_intent, "latency_ms": self.latency_ms,
             "warnings": list(self.warnings)}
        if per_probe:
            d["per_probe"] = list(self.per_probe)
        return d


def evaluate(probes: Sequence[Probe], ranker: Ranker, label: str = "") -> EvalReport:
    """Rank every probe's query and score the top 10 against its strict and lenient answers."""
    rows: list[dict[str, Any]] = []
    for p in probes:
        t0 = time.perf_counter()
        ranked, intent = ranker(p.query)
        ms = (time.perf_counter() - t0) * 1000
        rows.append({"id": p.id, "level": p.level, "intent": intent, "ms": ms, "top": ranked[:10],
                     "strict": probe_metrics(ranked, p.relevant),
                     "lenient": probe_metrics(ranked, p.relevant | p.lenient)})
    return EvalReport(n=len(rows), strict=mean_metrics([r["strict"] for r in rows]),
                      lenient=mean_metrics([r["lenient"] for r in rows]),
                      by_level=_groups(rows, "level"), by_intent=_groups(rows, "intent"),
                      latency_ms=_latency([r["ms"] for r in rows]), label=label, per_probe=tuple(rows))


def _groups(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r[key] or "-"].append(r)
    return {g: {"n": len(rs), "strict": mean_metrics([r["strict"] for r in rs]),
                "lenient": mean_metrics([r["lenient"] for r in rs])} for g, rs in sorted(groups.items())}


def _latency(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))] if ordered else 0.0
    return {"p50": statistics.median(ordered) if ordered else 0.0, "p99": p99, "mean": statistics.fmean(ordered) if ordered else 0.0}


def kg_ranker(kg: Any, k: int = 10, warnings: list[str] | None = None, **search_options: Any) -> Ranker:
    """A ranker that calls ``kg.search`` with fixed options; the searches' warnings go to ``warnings``."""
    return search_ranker(kg.search, k, warnings, **search_options)


def search_ranker(search: Callable[..., Any], k: int = 10, warnings: list[str] | None = None,
                  **search_options: Any) -> Ranker:
    """A ranker over any ``search(query, k=..., **options)`` returning a SearchResult."""
    def rank(query: str) -> tuple[list[str], str]:
        res = search(query, k=k, **search_options)
        if warnings is not None:
            warnings.extend(w for w in res.warnings if w not in warnings)
        return [h.node.id for h in res.results], res.intent.name
    return rank
