"""Ranking metrics for one probe, as pure functions of a ranked id list and the answer set.

Conventions of bench/README.md: Recall@k is 1 when any answer is in the top k; MRR@10 is 1/rank of
the first answer within the top 10, else 0. nDCG@10 uses binary gains (Jarvelin & Kekalainen 2002,
with the log2(rank + 1) discount), the ideal ranking placing min(|answers|, 10) answers first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Set

KS = (1, 5, 10)


def first_rank(ranked: Sequence[str], answers: Set[str], depth: int = 10) -> int | None:
    """1-based rank of the first answer within ``depth``, or None."""
    for i, node_id in enumerate(ranked[:depth], 1):
        if node_id in answers:
            return i
    return None


def recall_at(ranked: Sequence[str], answers: Set[str], k: int) -> float:
    return 1.0 if first_rank(ranked, answers, k) is not None else 0.0


def mrr_at(ranked: Sequence[str], answers: Set[str], k: int = 10) -> float:
    rank = first_rank(ranked, answers, k)
    return 1.0 / rank if rank else 0.0


def ndcg_at(ranked: Sequence[str], answers: Set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(i + 1) for i, node_id in enumerate(ranked[:k], 1) if node_id in answers)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(answers), k) + 1))
    return dcg / ideal if ideal else 0.0


def probe_metrics(ranked: Sequence[str], answers: Set[str]) -> dict[str, float]:
    """recall@1/5/10, mrr@10, ndcg@10 of one ranking."""
    out = {f"recall@{k}": recall_at(ranked, answers, k) for k in KS}
    out["mrr@10"] = mrr_at(ranked, answers, 10)
    out["ndcg@10"] = ndcg_at(ranked, answers, 10)
    return out


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}
