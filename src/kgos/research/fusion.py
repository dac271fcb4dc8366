"""Multi-backend result merging of spec/004 ("Multi-Backend Search Merging"): algorithmic, no LLM.

A backend's results are a ranked list of hits (JSON-shaped dicts with at least ``id``, ``score`` and
``text``). Every strategy takes one list per backend (in backend order) and returns one fused list,
each hit a copy carrying ``fused_score`` and ``backends`` (the backends that returned it):

| strategy | what it does |
|---|---|
| ``reciprocal_rank_fusion`` | spec/004's RRF: sum of 1 / (k + rank + 1) over backends, k = 60 |
| ``interleave_by_score`` | each backend's scores min-max normalised to 0..1, combined list sorted by it |
| ``round_robin`` | rank 1 of every backend, then rank 2, ...: equal representation |
| ``union_dedupe`` | every hit once, duplicates by content hash (same text from two places), best rank first |
| ``weighted`` | sum over backends of weight x normalised score (weights per backend name) |

Ties keep first-seen order (backend order, then rank), as Python's stable sort does in the spec's code.
Source-type routing (spec/004 "Source-Type Routing") maps file globs to the backends that index them.
"""

from __future__ import annotations

import fnmatch
import hashlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import InvalidArgument
from ..index.text import fold
from ..plugins import add_builtin, entries, hookimpl

__all__ = ["STRATEGIES", "content_key", "fuse", "interleave_by_score", "reciprocal_rank_fusion",
           "round_robin", "routed_backends", "strategies", "union_dedupe", "weighted"]

Hit = Mapping[str, Any]
Fused = list[dict[str, Any]]
RRF_K = 60


def reciprocal_rank_fusion(backend_results: Sequence[Sequence[Hit]], k: int = RRF_K) -> Fused:
    """RRF (Cormack, Clarke & Buettcher, SIGIR 2009) exactly as spec/004's ``rrf``:
    score(d) = sum over backends of 1 / (k + rank + 1), rank 0-based."""
    scores: dict[str, float] = {}
    for results in backend_results:
        for rank, item in enumerate(results):
            scores[item["id"]] = scores.get(item["id"], 0) + 1 / (k + rank + 1)
    return _emit(sorted(scores.items(), key=lambda x: -x[1]), backend_results)


def interleave_by_score(backend_results: Sequence[Sequence[Hit]]) -> Fused:
    """Normalise each backend's scores to 0..1 (min-max), sort the combined list; an item returned by
    several backends keeps its best normalised score."""
    scores: dict[str, float] = {}
    for results in backend_results:
        for item, s in zip(results, _normalised(results)):
            scores[item["id"]] = max(scores.get(item["id"], 0.0), s)
    return _emit(sorted(scores.items(), key=lambda x: -x[1]), backend_results)


def round_robin(backend_results: Sequence[Sequence[Hit]]) -> Fused:
    """Rank 0 of each backend in backend order, then rank 1, ...; an id already taken is skipped.
    The fused score is 1 / (position + 1)."""
    order: list[str] = []
    seen: set[str] = set()
    for rank in range(max((len(r) for r in backend_results), default=0)):
        for results in backend_results:
            if rank < len(results) and results[rank]["id"] not in seen:
                seen.add(results[rank]["id"])
                order.append(results[rank]["id"])
    return _emit([(i, 1.0 / (p + 1)) for p, i in enumerate(order)], backend_results)


def union_dedupe(backend_results: Sequence[Sequence[Hit]]) -> Fused:
    """Every hit once: duplicates are the same id or the same content hash (folded, whitespace-squashed
    text); ordered by best rank, then backend order. The fused score is 1 / (best rank + 1)."""
    best: dict[str, tuple[int, int, str]] = {}  # content key -> (rank, backend index, first id)
    alias: dict[str, str] = {}
    for b, results in enumerate(backend_results):
        for rank, item in enumerate(results):
            key = alias.get(item["id"]) or content_key(item)
            alias[item["id"]] = key
            if key not in best or (rank, b) < best[key][:2]:
                best[key] = (rank, b, best[key][2] if key in best else item["id"])
    ranked = sorted(best.values(), key=lambda v: (v[0], v[1]))
    fused = _emit([(first, 1.0 / (rank + 1)) for rank, _, first in ranked], backend_results)
    _merge_backends(fused, backend_results, alias)
    return fused


def weighted(backend_results: Sequence[Sequence[Hit]], weights: Sequence[float]) -> Fused:
    """score(d) = sum over backends of w_b x min-max normalised score_b(d)."""
    if len(weights) != len(backend_results):
        raise InvalidArgument(f"weighted merge needs one weight per backend ({len(backend_results)}), "
                              f"got {len(weights)}")
    scores: dict[str, float] = {}
    for results, w in zip(backend_results, weights):
        for item, s in zip(results, _normalised(results)):
            scores[item["id"]] = scores.get(item["id"], 0.0) + w * s
    return _emit(sorted(scores.items(), key=lambda x: -x[1]), backend_results)


STRATEGIES: dict[str, Callable[..., Fused]] = {
    "reciprocal_rank_fusion": reciprocal_rank_fusion, "interleave_by_score": interleave_by_score,
    "round_robin": round_robin, "union_dedupe": union_dedupe, "weighted": weighted}


@hookimpl
def register_fusions() -> dict[str, Callable[..., Fused]]:
    """The built-in strategies, through the hook third-party packages answer too (kgos.plugins)."""
    return STRATEGIES


def strategies() -> dict[str, Callable[..., Fused]]:
    """Every merge strategy by name: the built-ins, then those of plugins (``f(ranked lists) -> Fused``)."""
    return {e.name: e.value for e in entries("fusions") if callable(e.value)}


def fuse(strategy: str, named_results: Mapping[str, Sequence[Hit]], *, k: int = RRF_K,
         weights: Mapping[str, float] | None = None) -> Fused:
    """Merge ``{backend name: ranked hits}`` (in the mapping's order) with ``strategy``."""
    lists = list(named_results.values())
    if strategy == "reciprocal_rank_fusion":
        return reciprocal_rank_fusion(lists, k)
    if strategy == "weighted":
        return weighted(lists, [float((weights or {}).get(name, 1.0)) for name in named_results])
    known = strategies()
    if strategy not in known:
        raise InvalidArgument(f"unknown merge strategy {strategy!r}: one of {', '.join(known)}")
    return known[strategy](lists)


add_builtin(sys.modules[__name__], "kgos.research.fusion")


def routed_backends(path: str, routing: Mapping[str, Sequence[str]]) -> set[str]:
    """The backends a file is routed to: the union over every pattern it matches (``"*.py|*.ts"``:
    alternatives; matched against the file name and the relative path). spec/004's ``"*"`` row
    ("everything gets vectors") applies to every file together with the more specific rows."""
    name = path.rsplit("/", 1)[-1]
    out: set[str] = set()
    for pattern, backends in routing.items():
        if any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(path, p) for p in pattern.split("|")):
            out.update([backends] if isinstance(backends, str) else backends)
    return out


def content_key(item: Hit) -> str:
    """sha256 of the hit's folded, whitespace-squashed text (its id when it has no text)."""
    text = " ".join(fold(str(item.get("text") or "")).split())
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest() if text else f"id:{item['id']}"


def _normalised(results: Sequence[Hit]) -> list[float]:
    scores = [float(r.get("score") or 0.0) for r in results]
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    return [1.0 if hi == lo else (s - lo) / (hi - lo) for s in scores]


def _emit(ranked: Sequence[tuple[str, float]], backend_results: Sequence[Sequence[Hit]]) -> Fused:
    first: dict[str, dict[str, Any]] = {}
    backends: dict[str, list[str]] = {}
    for results in backend_results:
        for item in results:
            first.setdefault(item["id"], dict(item))
            name = str(item.get("backend", ""))
            if name and name not in backends.setdefault(item["id"], []):
                backends[item["id"]].append(name)
    return [{**first[i], "fused_score": round(s, 12), "backends": backends.get(i, [])} for i, s in ranked]


def _merge_backends(fused: Fused, backend_results: Sequence[Sequence[Hit]], alias: Mapping[str, str]) -> None:
    by_key = {alias[f["id"]]: f for f in fused}
    for results in backend_results:
        for item in results:
            f = by_key[alias[item["id"]]]
            name = str(item.get("backend", ""))
            if name and name not in f["backends"]:
                f["backends"].append(name)
