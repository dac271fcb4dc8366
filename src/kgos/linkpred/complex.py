"""ComplEx, trained in numpy: the relation-aware embedding model of the ensemble.

Score (Trouillon et al. 2016, "Complex Embeddings for Simple Link Prediction", eq. 11):
``phi(h, r, t) = Re(<e_h, w_r, conj(e_t)>)``. Training follows Lacroix et al. 2018 ("Canonical Tensor
Decomposition for Knowledge Base Completion"): reciprocal relations (a head query (?, r, t) is the tail
query (t, r^-1, ?)), 1-N scoring (each (h, r) against every entity) with softmax cross-entropy, the
weighted N3 regulariser ``lambda * sum |x|^3`` over the factors of the batch, here with label smoothing
and Adam (Kingma & Ba 2015). Gradients are written out by hand, so numpy alone trains it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..index.nearest import single_thread_blas
from .base import Predictor, register
from .triples import LinkGraph, Triples


@dataclass
class _Adam:
    """Adam with bias correction on one parameter array (Kingma & Ba 2015, algorithm 1)."""

    lr: float
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    m: Any = None
    v: Any = None
    t: int = 0

    def step(self, param: np.ndarray, grad: np.ndarray) -> None:
        if self.m is None:
            self.m, self.v = np.zeros_like(param), np.zeros_like(param)
        self.t += 1
        self.m *= self.b1
        self.m += (1 - self.b1) * grad
        self.v *= self.b2
        self.v += (1 - self.b2) * grad * grad
        lr = self.lr * np.sqrt(1 - self.b2 ** self.t) / (1 - self.b1 ** self.t)
        param -= lr * self.m / (np.sqrt(self.v) + self.eps)


def _softmax(s: np.ndarray) -> np.ndarray:
    s = s - s.max(axis=1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=1, keepdims=True)
    return s


def _scatter(rows: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Sum ``values`` into an (n, d) array by ``rows`` (a sparse product: np.add.at is ~10x slower)."""
    onehot = sp.csr_array((np.ones(rows.shape[0], values.dtype), (rows, np.arange(rows.shape[0]))),
                          shape=(n, rows.shape[0]))
    return np.asarray(onehot @ values)


@register("complex")
class ComplEx(Predictor):
    name = "complex"

    def __init__(self, dim: int = 200, epochs: int = 30, batch: int = 256, lr: float = 0.01, reg: float = 0.01,
                 smoothing: float = 0.1, init: float = 0.1, seed: int = 0) -> None:
        super().__init__()
        self.dim, self.epochs, self.batch, self.lr = dim, epochs, batch, lr
        self.reg, self.smoothing, self.init, self.seed = reg, smoothing, init, seed
        self.losses: list[float] = []

    def _fit(self, graph: LinkGraph, valid: Triples | None) -> None:
        t = graph.triples
        n, nr, k = t.n_entities, t.n_relations, self.dim
        rng = np.random.default_rng(self.seed)
        self.E = (rng.standard_normal((n, 2 * k)) * self.init).astype(np.float32)
        self.W = (rng.standard_normal((2 * nr, 2 * k)) * self.init).astype(np.float32)
        self.nr = nr
        h = np.concatenate([t.head, t.tail])
        r = np.concatenate([t.relation, t.relation + nr])
        tl = np.concatenate([t.tail, t.head])
        opt_e, opt_w = _Adam(self.lr), _Adam(self.lr)
        with single_thread_blas():  # small products: BLAS threads on shared cores only wait for each other
            self._epochs(rng, h, r, tl, opt_e, opt_w)

    def _epochs(self, rng: np.random.Generator, h: np.ndarray, r: np.ndarray, tl: np.ndarray, opt_e: _Adam,
                opt_w: _Adam) -> None:
        for _ in range(self.epochs):
            order = rng.permutation(h.shape[0])
            total = 0.0
            for i in range(0, order.shape[0], self.batch):
                b = order[i:i + self.batch]
                loss, ge, gw = self._grads(h[b], r[b], tl[b])
                opt_e.step(self.E, ge)
                opt_w.step(self.W, gw)
                total += loss * b.shape[0]
            self.losses.append(total / order.shape[0])

    def _query(self, h: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, ...]:
        k = self.dim
        eh, w = self.E[h], self.W[r]
        hr, hi, rr, ri = eh[:, :k], eh[:, k:], w[:, :k], w[:, k:]
        return hr, hi, rr, ri, hr * rr - hi * ri, hr * ri + hi * rr

    def _grads(self, h: np.ndarray, r: np.ndarray, t: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        k, bsz, n = self.dim, h.shape[0], self.E.shape[0]
        hr, hi, rr, ri, qr, qi = self._query(h, r)
        er, ei = self.E[:, :k], self.E[:, k:]
        p = _softmax(qr @ er.T + qi @ ei.T)
        rows = np.arange(bsz)
        loss = float(-np.log(p[rows, t] + 1e-12).mean())
        g = p - self.smoothing / n  # d(cross-entropy with smoothed targets)/d(scores)
        g[rows, t] -= 1.0 - self.smoothing
        g /= bsz
        gq_r, gq_i = g @ er, g @ ei
        ge = np.empty_like(self.E)
        ge[:, :k], ge[:, k:] = g.T @ qr, g.T @ qi
        gh = np.concatenate([gq_r * rr + gq_i * ri, -gq_r * ri + gq_i * rr], axis=1)
        gr = np.concatenate([gq_r * hr + gq_i * hi, -gq_r * hi + gq_i * hr], axis=1)
        c = 3.0 * self.reg / bsz  # N3: d|z|^3 / d(re, im) = 3 |z| (re, im)
        gh += c * self._n3(self.E[h])
        gr += c * self._n3(self.W[r])
        ge += _scatter(np.concatenate([h, t]), np.concatenate([gh, c * self._n3(self.E[t])]), n)
        return loss, ge, _scatter(r, gr, self.W.shape[0])

    def _n3(self, x: np.ndarray) -> np.ndarray:
        k = self.dim
        mod = np.sqrt(x[:, :k] ** 2 + x[:, k:] ** 2)
        return x * np.concatenate([mod, mod], axis=1)

    def _scores(self, e: np.ndarray, r: np.ndarray) -> np.ndarray:
        self.fitted()
        k = self.dim
        *_, qr, qi = self._query(np.asarray(e), np.asarray(r))
        return qr @ self.E[:, :k].T + qi @ self.E[:, k:].T

    def score_tails(self, head: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self._scores(head, relation)

    def score_heads(self, tail: np.ndarray, relation: np.ndarray) -> np.ndarray:
        return self._scores(tail, np.asarray(relation) + self.nr)
