"""What makes a proposal worth a reviewer's time, beyond its confidence: novelty, centrality, and
not seeing the same thing twice.

* ``priority`` in [0.25, 1]: ``(0.5 + 0.5 novelty) (0.5 + 0.5 centrality)``. Novelty is 1 minus the
  closest existing edge of the relation (mean cosine of the two ends, the ``similar_edges`` evidence):
  an edge much like one the KG has teaches it little. Centrality is ``log(1 + deg h + deg t)`` over
  its largest value in the KG: an edge between well-connected nodes changes more answers. Each factor
  can at most halve the priority, so the calibrated confidence dominates. The queue's default order
  is ``confidence x priority``: the expected value of reviewing it.
* ``merge_near_duplicates``: of two proposals of one relation that share one end and whose other
  ends are near-identical nodes (cosine >= ``NEAR``), or that are one edge of a symmetric relation in
  both directions, only the better is staged, the other kept in its evidence under ``merged``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from .results import Prediction
from .triples import Triples

NEAR = 0.95  # cosine of two nodes' vectors above which they are the same thing for a reviewer
SYMMETRIC = 0.5  # a relation is symmetric when at least this share of its edges has the reverse edge


def symmetric_relations(t: Triples) -> set[str]:
    """Relations most of whose edges (of at least 3) also exist reversed."""
    n = t.n_entities
    fwd = t.relation * n * n + t.head * n + t.tail
    rev = t.relation * n * n + t.tail * n + t.head
    back = np.isin(rev, fwd)
    out = set()
    for r in range(t.n_relations):
        sel = t.relation == r
        if sel.sum() >= 3 and back[sel].mean() >= SYMMETRIC:
            out.add(t.relations[r])
    return out


def priority(p: Prediction, degree: dict[str, int], max_degree: int) -> tuple[float, float, float]:
    """(priority, novelty, centrality) of one prediction."""
    similar = p.evidence.get("similar_edges") or []
    closest = max((float(e.get("similarity", 0.0)) for e in similar), default=0.0)
    novelty = min(max(1.0 - closest, 0.0), 1.0)
    ends = degree.get(p.source, 0) + degree.get(p.target, 0)
    centrality = float(np.log1p(ends) / np.log1p(2 * max_degree)) if max_degree > 0 else 0.0
    return round((0.5 + 0.5 * novelty) * (0.5 + 0.5 * centrality), 6), round(novelty, 6), round(centrality, 6)


def merge_near_duplicates(ranked: Sequence[Prediction], vectors: np.ndarray | None, index: Mapping[str, int],
                          symmetric: set[str]) -> list[Prediction]:
    """``ranked`` (best first) with each near-duplicate folded into the better proposal's evidence."""
    kept: list[Prediction] = []
    folded: dict[int, list[dict[str, object]]] = {}
    for p in ranked:
        twin = next((i for i, q in enumerate(kept) if _same(p, q, vectors, index, symmetric)), None)
        if twin is None:
            kept.append(p)
        else:
            folded.setdefault(twin, []).append({"source": p.source, "target": p.target, "type": p.type,
                                                "score": p.score, "confidence": p.confidence})
    return [replace(q, evidence={**q.evidence, "merged": folded[i]}) if i in folded else q for i, q in enumerate(kept)]


def _same(p: Prediction, q: Prediction, vectors: np.ndarray | None, index: Mapping[str, int],
          symmetric: set[str]) -> bool:
    if p.type != q.type:
        return False
    if p.type in symmetric and (p.source, p.target) == (q.target, q.source):
        return True
    if vectors is None:
        return False
    for mine, theirs, other_mine, other_theirs in ((p.source, q.source, p.target, q.target),
                                                   (p.target, q.target, p.source, q.source)):
        if mine == theirs and other_mine != other_theirs:
            a, b = vectors[index[other_mine]], vectors[index[other_theirs]]
            na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
            if na > 0 and nb > 0 and float(a @ b) / (na * nb) >= NEAR:
                return True
    return False
