"""Feature-based predictors: cosine of text vectors, and the seed's scorer (spec/003 part 2.3).

``text``: ``cos(v_h, v_t)`` of the KG's node vectors (whatever embedder the KG uses), relation-blind.

``seed``: spec/003 2.3's ULTRA-style scorer, ``0.7 * cos(x_h, x_t) + 0.3 * tanh(MLP([x_h; x_t]))``, over node
features ``x = [type one-hot | 54-d projection]`` (spec/003 appendix C). The projection is PCA of the
text vectors (spec/003 3.5, strategy 2, the measured winner); a KG without vectors projects each
node's relation profile (its in/out edge counts per relation) instead. The MLP (one hidden ReLU layer)
is trained with the margin ranking loss ``max(0, m - s(h, t) + s(h, t'))`` on the KG's own edges
against random corrupted tails t' (spec/003 3.5, strategy 3), with Adam.
"""

from __future__ import annotations

import numpy as np

from ..embed.projections import PCA, unit_rows
from ..errors import NotTrained
from ..index.nearest import single_thread_blas
from .base import Predictor, per_entity, register, without_self
from .complex import _Adam
from .triples import LinkGraph, Triples

PROJECTED_DIMS = 54
COSINE_WEIGHT, MLP_WEIGHT = 0.7, 0.3


def relation_profile(t: Triples) -> np.ndarray:
    """(n, 2R) log(1 + count) of each node's out- and in-edges per relation."""
    n, nr = t.n_entities, t.n_relations
    prof = np.zeros((n, 2 * nr), np.float64)
    np.add.at(prof, (t.head, t.relation), 1.0)
    np.add.at(prof, (t.tail, t.relation + nr), 1.0)
    return np.log1p(prof)


def node_features(graph: LinkGraph, dims: int = PROJECTED_DIMS) -> np.ndarray:
    """``[type one-hot | PCA-projected text (or relation profile)]`` per node, float32."""
    n = graph.n_entities
    types = graph.node_types if graph.node_types is not None else np.zeros(n, np.int64)
    onehot = np.zeros((n, max(1, len(graph.type_names))), np.float32)
    onehot[np.arange(n), types] = 1.0
    source = graph.vectors if graph.vectors is not None else relation_profile(graph.triples)
    return np.concatenate([onehot, PCA.fit(source, dims).transform(source)], axis=1).astype(np.float32)


@register("text")
class TextCosine(Predictor):
    name = "text"
    light = True
    relation_blind = True  # the same score under every relation: typed by the relation model

    def _fit(self, graph: LinkGraph, valid: Triples | None) -> None:
        if graph.vectors is None:
            raise NotTrained("text: the KG has no node vectors; embed it first (kgos embed KG, or kg.embed())")
        self.V = unit_rows(np.asarray(graph.vectors, np.float32))
        self._last: dict[bytes, np.ndarray] = {}

    def score_tails(self, head: np.ndarray, relation: np.ndarray) -> np.ndarray:
        self.fitted()
        with single_thread_blas():
            return per_entity(head, lambda rows: without_self(self.V[rows] @ self.V.T, rows), self._last)

    def score_heads(self, tail: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self.score_tails(tail, relation)  # symmetric in h and t


@register("seed")
class SeedScorer(Predictor):
    name = "seed"
    light = True
    relation_blind = True  # the same score under every relation: typed by the relation model

    def __init__(self, hidden: int = 64, epochs: int = 5, batch: int = 512, lr: float = 0.01, margin: float = 0.5,
                 max_edges: int = 200_000, seed: int = 0) -> None:
        super().__init__()
        self.hidden, self.epochs, self.batch, self.lr = hidden, epochs, batch, lr
        self.margin, self.max_edges, self.seed = margin, max_edges, seed

    def _fit(self, graph: LinkGraph, valid: Triples | None) -> None:
        x = node_features(graph)
        self.X, self.U = x, unit_rows(x)
        rng = np.random.default_rng(self.seed)
        d = x.shape[1]
        self.W1 = (rng.standard_normal((2 * d, self.hidden)) * np.sqrt(2.0 / (2 * d))).astype(np.float32)
        self.b1 = np.zeros(self.hidden, np.float32)
        self.w2 = (rng.standard_normal(self.hidden) * np.sqrt(1.0 / self.hidden)).astype(np.float32)
        t = graph.triples
        rows = rng.permutation(len(t))[:self.max_edges]
        with single_thread_blas():
            self._train(t.head[rows], t.tail[rows], rng)
            # every candidate's half of the first layer, as a tail and as a head (fixed once trained)
            self._half = {True: x @ self.W1[d:], False: x @ self.W1[:d]}

    def _mlp(self, h: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        inp = np.concatenate([self.X[h], self.X[t]], axis=1)
        hid = np.maximum(inp @ self.W1 + self.b1, 0.0)
        return inp, hid, np.tanh(hid @ self.w2)

    def _train(self, h: np.ndarray, t: np.ndarray, rng: np.random.Generator) -> None:
        opts = [_Adam(self.lr) for _ in range(3)]
        n = self.X.shape[0]
        for _ in range(self.epochs):
            order = rng.permutation(h.shape[0])
            for i in range(0, order.size, self.batch):
                b = order[i:i + self.batch]
                self._step(h[b], t[b], rng.integers(0, n, b.size), opts)

    def _step(self, h: np.ndarray, t: np.ndarray, neg: np.ndarray, opts: list[_Adam]) -> None:
        pos_in, pos_hid, pos_out = self._mlp(h, t)
        neg_in, neg_hid, neg_out = self._mlp(h, neg)
        cos_gap = (self.U[h] * (self.U[t] - self.U[neg])).sum(axis=1)
        active = (self.margin - COSINE_WEIGHT * cos_gap - MLP_WEIGHT * (pos_out - neg_out)) > 0
        # d loss / d out: -0.3 for the positive, +0.3 for the negative, on active pairs only
        grads = [np.zeros_like(self.W1), np.zeros_like(self.b1), np.zeros_like(self.w2)]
        for inp, hid, out, sign in ((pos_in, pos_hid, pos_out, -1.0), (neg_in, neg_hid, neg_out, 1.0)):
            g_out = sign * MLP_WEIGHT * active * (1 - out ** 2) / h.size
            grads[2] += hid.T @ g_out
            g_hid = np.outer(g_out, self.w2) * (hid > 0)
            grads[0] += inp.T @ g_hid
            grads[1] += g_hid.sum(axis=0)
        for opt, param, grad in zip(opts, (self.W1, self.b1, self.w2), grads):
            opt.step(param, grad.astype(np.float32))

    def _scores(self, e: np.ndarray, as_head: bool) -> np.ndarray:
        return per_entity(e, lambda rows: self._unique_scores(rows, as_head))

    def _unique_scores(self, e: np.ndarray, as_head: bool) -> np.ndarray:
        self.fitted()
        d = self.X.shape[1]
        own = self.W1[:d] if as_head else self.W1[d:]
        base = self._half[as_head]
        with single_thread_blas():
            q = self.X[e] @ own + self.b1
            out = np.empty((e.size, self.X.shape[0]), np.float32)
            buf = np.empty_like(base)
            for i in range(e.size):
                np.add(base, q[i], out=buf)
                np.maximum(buf, 0.0, out=buf)
                out[i] = np.tanh(buf @ self.w2)
            cos = self.U[e] @ self.U.T
        return without_self(COSINE_WEIGHT * cos + MLP_WEIGHT * out, e)

    def score_tails(self, head: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self._scores(np.asarray(head), as_head=True)

    def score_heads(self, tail: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self._scores(np.asarray(tail), as_head=False)
