"""The relation model: which relation (and direction) an edge between two nodes would carry.

Relation-blind predictors (common neighbours, Adamic-Adar, text cosine, the seed scorer) say *that*
two nodes are likely linked, never *how*: their score is the same under every relation. The relation
model turns such a pair into typed proposals. It is a softmax regression trained on the KG's own
edges over 2R classes ("a -r-> b" for r < R, "b -r-> a" for r >= R), so one call types a pair in
both directions. Its inputs:

* a fixed offset per class, ``log P(class | type(a), type(b))`` from the KG's edge counts per node
  type pair, smoothed towards the relation's overall share (Laplace with a prior, weight ``alpha``);
* learned weights over ``[x_a, x_b, x_a * x_b]`` with x the predictors' node features (type one-hot +
  a 54-d projection of the text vectors, or of the relation profile when the KG has none).

``exclusive[r1, r2]`` is True when no node pair of the KG carries both relations (in either
direction): such relations are never proposed together for one pair (``enables`` and
``conflicts_with``), and a pair that already has an edge of r1 is not proposed under r2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..index.nearest import single_thread_blas
from .base import Predictor, register
from .complex import _Adam, _softmax
from .features import node_features
from .triples import LinkGraph, Triples

MAX_EDGES = 50_000  # edges sampled to train on: the model has few weights, more edges change little
ALPHA = 1.0
MAX_CACHED_TYPES = 32  # per-type offset arrays are (n, 2R) each: kept only when the KG has few types


def exclusive_relations(t: Triples) -> np.ndarray:
    """(R, R) True where the two relations never share a node pair (either direction) in ``t``."""
    nr, n = t.n_relations, t.n_entities
    lo, hi = np.minimum(t.head, t.tail), np.maximum(t.head, t.tail)
    pair = lo.astype(np.int64) * n + hi
    order = np.lexsort((t.relation, pair))
    pair, rel = pair[order], t.relation[order]
    together = np.zeros((nr, nr), bool)
    starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
    sizes = np.diff(np.r_[starts, pair.size])
    for s, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist()):  # pairs of 2+ edges: few
        rs = np.unique(rel[s:s + size])
        together[np.ix_(rs, rs)] = True
    np.fill_diagonal(together, True)
    return ~together


@dataclass
class RelationModel:
    """``proba(a, b)``: (m, 2R) probabilities of "a -r-> b" (column r) and "b -r-> a" (column R + r)."""

    n_relations: int
    epochs: int = 10
    lr: float = 0.05
    reg: float = 1e-4
    seed: int = 0

    @classmethod
    def fit(cls, graph: LinkGraph, epochs: int = 10, seed: int = 0) -> RelationModel:
        model = cls(graph.triples.n_relations, epochs=epochs, seed=seed)
        model._train(graph)
        return model

    def _train(self, graph: LinkGraph) -> None:
        t, nr = graph.triples, self.n_relations
        rng = np.random.default_rng(self.seed)
        rows = rng.permutation(len(t))[:MAX_EDGES]
        a = np.concatenate([t.head[rows], t.tail[rows]])
        b = np.concatenate([t.tail[rows], t.head[rows]])
        y = np.concatenate([t.relation[rows], t.relation[rows] + nr])
        self.X = node_features(graph)
        self.types = graph.node_types if graph.node_types is not None else np.zeros(graph.n_entities, np.int64)
        self._type_table(a, b, y)
        d = 3 * self.X.shape[1]
        self.W = np.zeros((d, 2 * nr), np.float32)
        self._xwb: np.ndarray | None = None
        self._last: tuple[int, np.ndarray] | None = None
        self._per_node: dict[int, np.ndarray] = {}
        self.b = np.zeros(2 * nr, np.float32)
        with single_thread_blas():
            self._descend(a, b, y, rng)

    def _type_table(self, a: np.ndarray, b: np.ndarray, y: np.ndarray) -> None:
        """Smoothed log P(class | type pair), kept per head type (a dense (T, T, 2R) table would not fit
        a KG with thousands of types)."""
        classes = 2 * self.n_relations
        prior = np.bincount(y, minlength=classes).astype(np.float64)
        self.prior = prior / prior.sum()
        ta, tb = self.types[a], self.types[b]
        n_types = int(self.types.max()) + 1 if self.types.size else 1
        key = (ta * n_types + tb) * classes + y
        uniq, counts = np.unique(key, return_counts=True)
        self.n_types = n_types
        self._counts: dict[int, np.ndarray] = {}
        for k, c in zip(uniq.tolist(), counts.tolist()):
            pair, cls_ = divmod(k, classes)
            th, tt = divmod(pair, n_types)
            self._counts.setdefault(th, np.zeros((n_types, classes)))[tt, cls_] += c
        self._logs: dict[int, np.ndarray] = {}

    def _offset(self, type_a: int, types_b: np.ndarray) -> np.ndarray:
        if type_a not in self._logs:
            counts = self._counts.get(type_a, np.zeros((self.n_types, 2 * self.n_relations)))
            smoothed = (counts + ALPHA * self.prior) / (counts.sum(axis=1, keepdims=True) + ALPHA)
            self._logs[type_a] = np.log(smoothed).astype(np.float32)
        return self._logs[type_a][types_b]

    def _offsets(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = np.empty((a.size, 2 * self.n_relations), np.float32)
        ta, tb = self.types[a], self.types[b]
        for th in np.unique(ta).tolist():
            sel = ta == th
            out[sel] = self._offset(th, tb[sel])
        return out

    def _features(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        xa, xb = self.X[a], self.X[b]
        return np.concatenate([xa, xb, xa * xb], axis=1)

    def _descend(self, a: np.ndarray, b: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> None:
        opt_w, opt_b = _Adam(self.lr), _Adam(self.lr)
        for _ in range(self.epochs):
            order = rng.permutation(a.size)
            for i in range(0, order.size, 1024):
                s = order[i:i + 1024]
                f = self._features(a[s], b[s])
                p = _softmax(f @ self.W + self.b + self._offsets(a[s], b[s]))
                p[np.arange(s.size), y[s]] -= 1.0  # d(cross-entropy)/d(logits)
                p /= s.size
                opt_w.step(self.W, (f.T @ p + self.reg * self.W).astype(np.float32))
                opt_b.step(self.b, p.sum(axis=0).astype(np.float32))

    def log_proba_from(self, a: int) -> np.ndarray:
        """(n, 2R) float32 log probabilities of node ``a`` paired with every node, without building the
        (n, 3d) pair features: [x_a, X, x_a * X] @ W = x_a W_a + X W_b + X (x_a * W_c). The last node's
        answer is kept: a discovery asks the same node for its tails, then its heads."""
        last = self._last  # one read: another thread may replace it meanwhile
        if last is not None and last[0] == a:
            return last[1]
        d = self.X.shape[1]
        with single_thread_blas():
            if self._xwb is None:
                self._xwb = self.X @ self.W[d:2 * d] + self.b
            xa = self.X[a]
            logits = self.X @ (xa[:, None] * self.W[2 * d:])
        logits += self._xwb
        logits += xa @ self.W[:d]
        logits += self._type_offsets(int(self.types[a]))
        logits -= logits.max(axis=1, keepdims=True)
        out = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        self._last = (a, out)
        return out

    def _type_offsets(self, type_a: int) -> np.ndarray:
        """(n, 2R) offsets of node type ``type_a`` against every node (kept per type for KGs of few types)."""
        if type_a in self._per_node:
            return self._per_node[type_a]
        out = self._offset(type_a, self.types)
        if self.n_types <= MAX_CACHED_TYPES:
            self._per_node[type_a] = out
        return out

    def proba(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        with single_thread_blas():
            logits = self._features(a, b) @ self.W + self.b + self._offsets(a, b)
        return _softmax(logits.astype(np.float64))



@register("relation_prior")
class RelationPrior(Predictor):
    """``log P(r, direction | h, t)`` of the relation model as a score: which relation a pair would
    carry, blind to whether it is linked at all. Alone it ranks poorly; in the ensemble it types the
    relation-blind members' votes (their z-scores plus its own)."""

    name = "relation_prior"
    light = True

    def _fit(self, graph: LinkGraph, valid: Triples | None) -> None:
        self.model = RelationModel.fit(graph)
        self.nr = graph.triples.n_relations

    def _rows(self, e: np.ndarray, cols: np.ndarray) -> np.ndarray:
        out = np.empty((e.size, self.fitted().n_entities), np.float32)
        cache: dict[int, np.ndarray] = {}
        for i, (x, c) in enumerate(zip(e.tolist(), cols.tolist())):
            if x not in cache:
                cache[x] = self.model.log_proba_from(x)
            out[i] = cache[x][:, c]
        return out

    def score_tails(self, head: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self._rows(np.asarray(head, np.int64), np.asarray(relation, np.int64))  # head -r-> candidate

    def score_heads(self, tail: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self._rows(np.asarray(tail, np.int64), np.asarray(relation, np.int64) + self.nr)  # candidate -r-> tail
