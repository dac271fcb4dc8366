"""Structural predictors: neighbourhood overlap and typed path rules, as sparse-matrix products.

* ``common_neighbors``, ``adamic_adar``, ``resource_allocation``: the overlap of two nodes' undirected
  neighbourhoods, each shared neighbour z weighted 1, 1/log(deg z) (Adamic & Adar 2003, "Friends and
  neighbors on the Web") or 1/deg z (Zhou, Lu & Zhang 2009, "Predicting missing links via local
  information"). One sparse product ``A[h] @ diag(w) @ A`` scores every candidate; relation-blind.
* ``metapath``: typed path counts as rules. For a target relation r, every relation path p of length 1-3
  (relations or their inverses) is a rule ``p(h, t) => r(h, t)`` whose confidence is its support over
  its body, measured on the training edges (the "PCA confidence" of Galarraga et al. 2013, AMIE,
  with the smoothing of AnyBURL, Meilicke et al. 2019). A candidate's score is the noisy-or of the
  confidences of the rules whose path reaches it: ``1 - prod(1 - conf_p)``, ranked in log space.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .base import Predictor, per_entity, register, without_self
from .triples import LinkGraph, Triples

MAX_EVIDENCE = 5


def _undirected(t: Triples) -> sp.csr_array:
    n = t.n_entities
    a = sp.csr_array((np.ones(len(t), np.float32), (t.head, t.tail)), shape=(n, n))
    a = (a + a.T).tocsr()
    a.setdiag(0)
    a.eliminate_zeros()
    a.data[:] = 1.0
    return a


class _Neighbourhood(Predictor):
    light = True
    relation_blind = True  # the same score under every relation: typed by the relation model

    def _weights(self, degree: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _fit(self, graph: LinkGraph, valid: Triples | None) -> None:
        self.A = _undirected(graph.triples)
        deg = np.asarray(self.A.sum(axis=1)).ravel()
        self.AW = (sp.diags_array(self._weights(deg).astype(np.float32)) @ self.A).tocsr()
        self._last: dict[bytes, np.ndarray] = {}

    def score_tails(self, head: np.ndarray, relation: np.ndarray) -> np.ndarray:
        self.fitted()
        return per_entity(head, lambda rows: without_self((self.A[rows] @ self.AW).toarray(), rows), self._last)

    def score_heads(self, tail: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self.score_tails(tail, relation)  # symmetric in h and t

    def evidence(self, head: int, relation: int, tail: int) -> dict[str, Any]:
        shared = np.intersect1d(self.A[[head]].indices, self.A[[tail]].indices)
        ents = self.fitted().triples.entities
        return {"shared_neighbors": [ents[i] for i in shared[:MAX_EVIDENCE].tolist()],
                "shared_count": int(shared.size)}


@register("common_neighbors")
class CommonNeighbors(_Neighbourhood):
    name = "common_neighbors"

    def _weights(self, degree: np.ndarray) -> np.ndarray:
        return np.ones_like(degree)


@register("adamic_adar")
class AdamicAdar(_Neighbourhood):
    name = "adamic_adar"

    def _weights(self, degree: np.ndarray) -> np.ndarray:
        return np.where(degree > 1, 1.0 / np.log(np.maximum(degree, 2)), 0.0)


@register("resource_allocation")
class ResourceAllocation(_Neighbourhood):
    name = "resource_allocation"

    def _weights(self, degree: np.ndarray) -> np.ndarray:
        return np.where(degree > 0, 1.0 / np.maximum(degree, 1), 0.0)


Path = tuple[int, ...]  # hops: j < R is relation j forward, j >= R is relation j - R backward


@register("metapath")
class MetapathRules(Predictor):
    """Rules ``path => relation`` over relation paths of length 1..``max_length``."""

    name = "metapath"
    light = True

    def __init__(self, max_length: int | None = None, rules_per_relation: int = 40, beam: int = 8, sample: int = 1000,
                 min_support: int = 2, smoothing: float = 5.0, seed: int = 0) -> None:
        super().__init__()
        self.max_length, self.top, self.beam, self.sample = max_length, rules_per_relation, beam, sample
        self.min_support, self.smoothing, self.seed = min_support, smoothing, seed

    def _fit(self, graph: LinkGraph, valid: Triples | None) -> None:
        t = graph.triples
        self.R = t.n_relations
        if self.max_length is None:  # length 3 costs (2R)^2 x beam products: for KGs with few relations
            self.max_length = 3 if 2 * self.R <= 24 else 2
        self.hops = [t.relation_matrix(r) for r in range(self.R)]
        self.hops += [m.T.tocsr() for m in self.hops]
        rng = np.random.default_rng(self.seed)
        self.rules: list[list[tuple[Path, float]]] = [self._learn(t, r, rng) for r in range(self.R)]

    def _learn(self, t: Triples, r: int, rng: np.random.Generator) -> list[tuple[Path, float]]:
        heads = np.unique(t.head[t.relation == r])
        if heads.size > self.sample:
            heads = np.sort(rng.choice(heads, self.sample, replace=False))
        target = self.hops[r][heads]
        found: dict[Path, float] = {}
        frontier: list[tuple[Path, sp.csr_array]] = [((), sp.csr_array(
            (np.ones(heads.size, np.float32), (np.arange(heads.size), heads)), shape=(heads.size, t.n_entities)))]
        for _ in range(int(self.max_length or 2)):
            scored = []
            for path, rows in frontier:
                for j in range(2 * self.R):
                    p = path + (j,)
                    if p == (r,) or (path and j == (path[-1] + self.R) % (2 * self.R)):
                        continue  # the rule r => r, and a hop straight back
                    reach = (rows @ self.hops[j]).tocsr()
                    if reach.nnz == 0:
                        continue
                    conf = self._confidence(reach, target, heads)
                    if conf is not None:
                        found[p] = conf
                    # a prefix is worth extending when it is a good rule, else when it leaves from many heads
                    coverage = np.count_nonzero(np.diff(reach.indptr)) / heads.size
                    scored.append((conf or 0.0, coverage, p, reach))
            scored.sort(key=lambda x: (-x[0], -x[1]))
            frontier = [(p, reach) for _, _, p, reach in scored[:self.beam]]
        best = sorted(found.items(), key=lambda x: -x[1])[:self.top]
        return best

    def _confidence(self, reach: sp.csr_array, target: sp.csr_array, heads: np.ndarray) -> float | None:
        reach = reach.copy()
        reach.data[:] = 1.0
        body = reach.nnz - int(reach[np.arange(heads.size), heads].sum())  # h -> h is no prediction
        if body <= 0:
            return None
        support = int(reach.multiply(target).sum())
        if support < self.min_support:
            return None
        return support / (body + self.smoothing)

    def _walk(self, start: np.ndarray, path: Path,
              memo: dict[tuple[bytes, Path], sp.csr_array] | None = None) -> sp.csr_array:
        """Path counts from each start node along ``path`` (rows: starts, columns: where they end)."""
        memo = {} if memo is None else memo
        key = (start.tobytes(), path)
        if key not in memo:
            if not path:
                n = self.hops[0].shape[0]
                memo[key] = sp.csr_array((np.ones(start.size, np.float32), (np.arange(start.size), start)),
                                         shape=(start.size, n))
            else:
                memo[key] = (self._walk(start, path[:-1], memo) @ self.hops[path[-1]]).tocsr()
        return memo[key]

    def _score(self, start: np.ndarray, relation: np.ndarray, backward: bool) -> np.ndarray:
        self.fitted()
        start, relation = np.asarray(start), np.asarray(relation)
        n = self.hops[0].shape[0]
        memo: dict[tuple[bytes, Path], sp.csr_array] = {}  # rules share prefixes: each walk is made once
        cells, weights = [], []
        for r in np.unique(relation):
            sel = np.flatnonzero(relation == r)
            for path, conf in self.rules[int(r)]:
                hit = self._walk(start[sel], self._reverse(path) if backward else path, memo)
                rows = sel[np.repeat(np.arange(sel.size), np.diff(hit.indptr))]
                cells.append(rows * n + hit.indices)
                weights.append(np.full(hit.nnz, -np.log1p(-min(conf, 0.999))))
        if not cells:
            return np.zeros((start.size, n))
        flat = np.bincount(np.concatenate(cells), np.concatenate(weights), minlength=start.size * n)
        return flat.reshape(start.size, n)

    def _reverse(self, path: Path) -> Path:
        return tuple((j + self.R) % (2 * self.R) for j in reversed(path))

    def score_tails(self, head: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self._score(head, relation, backward=False)

    def score_heads(self, tail: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self._score(tail, relation, backward=True)

    def evidence(self, head: int, relation: int, tail: int) -> dict[str, Any]:
        t = self.fitted().triples
        rules, memo = [], {}  # type: ignore[var-annotated]
        for path, conf in self.rules[relation]:
            if self._reaches(head, tail, path, memo):
                rules.append({"path": [self._hop_name(j) for j in path], "confidence": round(conf, 4),
                              "example": self._instance(head, tail, path, memo)})
                if len(rules) == MAX_EVIDENCE:
                    break
        return {"rules": rules, "relation": t.relations[relation]}

    def _reaches(self, start: int, end: int, path: Path, memo: dict[tuple[bytes, Path], sp.csr_array]) -> bool:
        return bool(np.any(self._walk(np.array([start]), path, memo).indices == end))

    def _hop_name(self, j: int) -> str:
        rels = self.fitted().triples.relations
        return rels[j] if j < self.R else f"^{rels[j - self.R]}"

    def _instance(self, head: int, tail: int, path: Path, memo: dict[tuple[bytes, Path], sp.csr_array]) -> list[str]:
        """One chain of nodes head -> ... -> tail that follows ``path`` (the first found)."""
        ents = self.fitted().triples.entities
        chain, node = [head], head
        back = self._reverse(path)
        for i, j in enumerate(path[:-1]):
            nxt = self.hops[j][[node]].indices
            # the next node must still reach the tail: it is among the tail's backward walk of the rest
            ok = np.intersect1d(nxt, self._walk(np.array([tail]), back[:len(path) - i - 1], memo).indices)
            node = int(ok[0])
            chain.append(node)
        chain.append(tail)
        return [ents[i] for i in chain]
