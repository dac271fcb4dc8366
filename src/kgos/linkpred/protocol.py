"""The filtered ranking protocol of link prediction (Bordes et al. 2013, "Translating Embeddings for
Modeling Multi-relational Data", section 4.2; both directions as in every benchmark since).

For a test triple (h, r, t) the model scores every entity as the tail of (h, r, ?); every other tail
known to be true (in train, valid or test) is removed from the ranking ("filtered"), and the rank of t
is 1 + the number of remaining entities scoring higher, plus half the ties (the "realistic" rank of
Berrendorf et al. 2020, PyKEEN's default: neither the optimistic nor the pessimistic end of a tie).
The same for the head of (?, r, t). MRR is the mean of 1/rank, Hits@k the fraction with rank <= k.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from .triples import Triples

ScoreFn = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (entities, relations) -> (batch, n) scores
HITS = (1, 3, 10)


@dataclass(frozen=True)
class RankMetrics:
    """Filtered MRR and Hits@1/3/10 over ``n`` rankings (2 per test triple: head and tail)."""

    mrr: float
    hits_at_1: float
    hits_at_3: float
    hits_at_10: float
    n: int
    predictor: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict[str, float | int | str]:
        return {"mrr": self.mrr, "hits@1": self.hits_at_1, "hits@3": self.hits_at_3, "hits@10": self.hits_at_10,
                "n": self.n, "predictor": self.predictor, "seconds": self.seconds}

    def fields(self) -> dict[str, float | int | str]:
        return asdict(self)


class KnownEdges:
    """Every true triple, as two sparse (entity * relations + relation) x entity matrices: the known
    tails of each (h, r) and the known heads of each (r, t). Row gathers give a batch's filter."""

    def __init__(self, *parts: Triples) -> None:
        t = parts[0]
        h = np.concatenate([p.head for p in parts])
        r = np.concatenate([p.relation for p in parts])
        tl = np.concatenate([p.tail for p in parts])
        n, nr = t.n_entities, t.n_relations
        ones = np.ones(h.shape[0], np.int8)
        self.n_relations = nr
        self.tails = sp.csr_array((ones, (h * nr + r, tl)), shape=(n * nr, n))
        self.heads = sp.csr_array((ones, (tl * nr + r, h)), shape=(n * nr, n))

    def mask(self, entity: np.ndarray, relation: np.ndarray, side: str) -> np.ndarray:
        """(batch, n) bool: the known tails of (entity, relation) for side "tail", heads for "head"."""
        m = self.tails if side == "tail" else self.heads
        return m[entity * self.n_relations + relation].toarray() > 0


def ranks_from_scores(scores: np.ndarray, target: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Realistic filtered rank of ``target[i]`` in row ``i`` of ``scores`` (other known trues removed)."""
    rows = np.arange(scores.shape[0])
    true = scores[rows, target][:, None]
    others = ~known
    others[rows, target] = False
    higher = ((scores > true) & others).sum(axis=1)
    ties = ((scores == true) & others).sum(axis=1)
    return 1.0 + higher + 0.5 * ties


def filtered_ranks(tail_scores: ScoreFn, head_scores: ScoreFn, test: Triples, known: KnownEdges,
                   batch: int = 256) -> np.ndarray:
    """Ranks of the tails then the heads of every test triple (2 x len(test) values)."""
    out = []
    for side, fn in (("tail", tail_scores), ("head", head_scores)):
        for i in range(0, len(test), batch):
            h, r, t = (a[i:i + batch] for a in (test.head, test.relation, test.tail))
            query, target = (h, t) if side == "tail" else (t, h)
            scores = np.asarray(fn(query, r), dtype=np.float64)
            out.append(ranks_from_scores(scores, target, known.mask(query, r, side)))
    return np.concatenate(out) if out else np.zeros(0)


def metrics(ranks: np.ndarray, predictor: str = "", seconds: float = 0.0) -> RankMetrics:
    if ranks.size == 0:
        return RankMetrics(0.0, 0.0, 0.0, 0.0, 0, predictor, seconds)
    h1, h3, h10 = (float(np.mean(ranks <= k)) for k in HITS)
    return RankMetrics(float(np.mean(1.0 / ranks)), h1, h3, h10, int(ranks.size), predictor, round(seconds, 3))
