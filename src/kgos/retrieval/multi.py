"""Merging the results of one query over several KGs (spec/000 section 8, multi-KG experts)."""

from __future__ import annotations

from dataclasses import replace

from ..model import normalize_name
from .results import SearchHit, SearchResult


def merge_results(results: list[SearchResult], k: int) -> SearchResult:
    """Tag hits with their KG, keep the best-scoring hit per normalised name, re-rank, cut to k."""
    best: dict[str, SearchHit] = {}
    for result in results:
        for hit in result.results:
            tagged = replace(hit, source_kg=result.kg)
            key = normalize_name(hit.node.name)
            if key not in best or tagged.score > best[key].score:
                best[key] = tagged
    ranked = sorted(best.values(), key=lambda h: -h.score)[:k]
    first = results[0]
    return replace(first, kg=",".join(r.kg or "" for r in results),
                   results=tuple(replace(h, rank=i) for i, h in enumerate(ranked, 1)),
                   took_ms=sum(r.took_ms for r in results),
                   notes=tuple(dict.fromkeys(n for r in results for n in r.notes)),
                   warnings=tuple(dict.fromkeys(w for r in results for w in r.warnings)))
