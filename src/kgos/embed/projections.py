"""Projections of node embeddings to a small number of dimensions (spec/003 section 3.5).

Six strategies, each a pure function or a small frozen class that is fitted on arrays and transforms
arrays (rows are nodes; every output row is L2-normalised, zero rows stay zero):

- :func:`truncate` (strategy 1): the first ``dims`` coordinates.
- :class:`PCA` (strategy 2): centre, SVD, the top ``dims`` principal components (numpy only).
- :class:`LearnedLinear` (strategy 3): ``x W + b`` trained with a margin ranking loss on a KG's edges.
- :func:`split_space` (strategy 4): the first ``dims/2`` coordinates of each of two models.
- :class:`WeightedBlend` (strategy 5): ``alpha * PCA_A(a) + beta * PCA_B(b)``.
- :class:`ConcatPCA` (strategy 6): PCA over the concatenation of two models' vectors.

>>> import numpy as np
>>> x = np.random.default_rng(0).normal(size=(100, 32)).astype(np.float32)
>>> PCA.fit(x, 8).transform(x).shape
(100, 8)

They are used by the benchmark of spec/003 section 3.6 (:mod:`kgos.embed.bench`) and may feed link
predictors (node features = type one-hot + projected text embedding, spec/003 appendix C).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..index.nearest import single_thread_blas

__all__ = ["PCA", "PROJECTIONS", "ConcatPCA", "LearnedLinear", "WeightedBlend", "reciprocal_rank", "split_space",
           "truncate", "unit_rows"]

#: the strategies by name: (needs two models, needs fitting)
PROJECTIONS: dict[str, tuple[bool, bool]] = {
    "truncate": (False, False), "pca": (False, True), "learned": (False, True),
    "split": (True, False), "blend": (True, True), "concat-pca": (True, True)}


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm, as float32 (zero rows stay zero)."""
    x = np.asarray(x, np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _matrix(x: np.ndarray, what: str = "vectors") -> np.ndarray:
    a = np.asarray(x, np.float32)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise InvalidArgument(f"{what}: need a non-empty 2-D array (rows = nodes), got shape {a.shape}")
    return a


def _dims(dims: int) -> int:
    if not isinstance(dims, (int, np.integer)) or dims < 1:
        raise InvalidArgument(f"dims must be a positive integer, got {dims!r}")
    return int(dims)


def _padded(y: np.ndarray, dims: int) -> np.ndarray:
    """``y`` with zero columns appended up to ``dims`` (spec/003 3.5: fewer samples than dimensions)."""
    if y.shape[1] >= dims:
        return y[:, :dims]
    return np.hstack([y, np.zeros((y.shape[0], dims - y.shape[1]), np.float32)])


def truncate(x: np.ndarray, dims: int) -> np.ndarray:
    """Strategy 1 of spec/003 3.5 (the baseline): the first ``dims`` coordinates, L2-normalised
    (zero-padded when the vectors have fewer)."""
    return unit_rows(_padded(_matrix(x), _dims(dims)))


@dataclass(frozen=True)
class PCA:
    """Strategy 2 of spec/003 3.5: principal component analysis by SVD of the centred data (Pearson
    1901; computed as in Halko et al.'s textbook form ``X - mean = U S Vt``, components = rows of ``Vt``).

    ``explained`` is the fraction of the total variance the kept components carry. When there are
    fewer samples than ``dims`` the missing components are zero columns (spec/003 3.5's edge case).
    """

    mean: np.ndarray
    components: np.ndarray  # (k, D), k <= dims
    dims: int
    explained: float

    @classmethod
    def fit(cls, x: np.ndarray, dims: int) -> PCA:
        a = _matrix(x).astype(np.float64)
        dims = _dims(dims)
        mean = a.mean(axis=0)
        with single_thread_blas():  # on 2 shared cores BLAS threads made a 350 x 384 SVD 20-50x slower
            _, s, vt = np.linalg.svd(a - mean, full_matrices=False)
        var = s ** 2
        k = min(dims, int(np.count_nonzero(var > var.max() * 1e-12)) if var.size and var.max() > 0 else 0)
        total = float(var.sum())
        explained = float(var[:k].sum() / total) if total > 0 else 0.0
        return cls(mean.astype(np.float32), vt[:k].astype(np.float32), dims, explained)

    def transform(self, x: np.ndarray) -> np.ndarray:
        a = _matrix(x)
        if a.shape[1] != self.mean.shape[0]:
            raise InvalidArgument(f"PCA was fitted on {self.mean.shape[0]}-d vectors, got {a.shape[1]}-d")
        return unit_rows(_padded((a - self.mean) @ self.components.T, self.dims))


@dataclass(frozen=True)
class LearnedLinear:
    """Strategy 3 of spec/003 3.5: ``normalize(x W + b)`` trained so that a KG's true edges (h, t)
    score a higher cosine than corrupted ones (h, t') by a margin: the margin ranking loss
    ``mean(max(0, margin - cos(h, t) + cos(h, t')))`` of Bordes et al. 2013 (TransE), minimised by
    mini-batch Adam (Kingma & Ba 2015) with analytic gradients (the spec's numeric gradient, exact).

    ``init="pca"`` (default) starts from the PCA projection, so training refines it; ``"xavier"``
    (Glorot & Bengio 2010) is the spec's initialisation. Early stopping: ``validation`` of the edges
    (when there are at least 20) are held out, and the weights of the epoch (0 = the initialisation)
    that ranks them best are kept, so a small KG that training would overfit keeps its starting point.
    ``losses`` holds the mean training loss per epoch, ``best_epoch`` the epoch kept.
    """

    weight: np.ndarray  # (D, dims)
    bias: np.ndarray  # (dims,)
    losses: tuple[float, ...] = field(default=())
    best_epoch: int = 0

    @classmethod
    def fit(cls, x: np.ndarray, edges: np.ndarray, dims: int, *, epochs: int = 20, lr: float = 0.005,
            margin: float = 0.2, negatives: int = 10, batch: int = 256, init: str = "pca",
            validation: float = 0.1, seed: int = 0) -> LearnedLinear:
        with single_thread_blas():  # small products: threads cost more than they give on shared cores
            return cls._fit(x, edges, dims, epochs, lr, margin, negatives, batch, init, validation, seed)

    @classmethod
    def _fit(cls, x: np.ndarray, edges: np.ndarray, dims: int, epochs: int, lr: float, margin: float,
             negatives: int, batch: int, init: str, validation: float, seed: int) -> LearnedLinear:
        a, pairs = _matrix(x), _edges(edges, len(x))
        dims = _dims(dims)
        rng = np.random.default_rng(seed)
        pairs, check = _held_out(pairs, validation, len(a), rng)
        w, b = _initial(a, dims, init, rng)
        best = (_ranking(a, w, b, check), 0, w, b)
        opt = _Adam(lr, (w, b))
        losses = []
        for epoch in range(1, epochs + 1):
            order = rng.permutation(len(pairs))
            total = 0.0
            for start in range(0, len(order), batch):
                chosen = pairs[order[start:start + batch]]
                neg = rng.integers(0, len(a), (len(chosen), negatives))
                loss, gw, gb = _margin_step(a, w, b, chosen, neg, margin)
                w, b = opt.step((w, b), (gw, gb))
                total += loss * len(chosen)
            losses.append(total / len(pairs))
            score = _ranking(a, w, b, check)
            if check is None or score > best[0]:
                best = (score, epoch, w, b)
        _, epoch, w, b = best
        return cls(w.astype(np.float32), b.astype(np.float32), tuple(losses), epoch)

    def transform(self, x: np.ndarray) -> np.ndarray:
        a = _matrix(x)
        if a.shape[1] != self.weight.shape[0]:
            raise InvalidArgument(f"the projection was fitted on {self.weight.shape[0]}-d vectors, got {a.shape[1]}-d")
        return unit_rows(a @ self.weight + self.bias)


def _edges(edges: np.ndarray, n: int) -> np.ndarray:
    pairs = np.asarray(edges, np.int64)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or len(pairs) == 0:
        raise InvalidArgument("edges: need a non-empty (m, 2) array of (head row, tail row)")
    if pairs.min() < 0 or pairs.max() >= n:
        raise InvalidArgument(f"edges: row numbers must lie in 0..{n - 1}")
    return pairs


VALIDATION_NEGATIVES = 50


def _held_out(pairs: np.ndarray, fraction: float, n: int, rng: np.random.Generator) -> tuple[np.ndarray, Any]:
    """(training edges, (validation edges, their fixed corrupted tails) or None when too few)."""
    n_check = round(len(pairs) * fraction)
    if not 0 <= fraction < 1:
        raise InvalidArgument(f"validation must lie in [0, 1), got {fraction}")
    if len(pairs) < 20 or n_check < 1:
        return pairs, None
    order = rng.permutation(len(pairs))
    check = pairs[order[:n_check]]
    return pairs[order[n_check:]], (check, rng.integers(0, n, (n_check, VALIDATION_NEGATIVES)))


def _ranking(a: np.ndarray, w: np.ndarray, b: np.ndarray, check: Any) -> float:
    if check is None:
        return 0.0
    edges, neg = check
    rows = np.concatenate([edges[:, 0], edges[:, 1], neg.ravel()])
    u = unit_rows(a[rows] @ w + b)
    k = len(edges)
    return reciprocal_rank(u[:k], u[k:2 * k], u[2 * k:].reshape(k, neg.shape[1], -1))


def reciprocal_rank(heads: np.ndarray, tails: np.ndarray, corrupted: np.ndarray) -> float:
    """Mean reciprocal rank of each true (h, t) among its corrupted (h, t'), scored by the dot product
    of unit rows (cosine): heads and tails (m, d), corrupted tails (m, k, d). Ties count half: the
    "realistic" rank of Berrendorf et al. 2020."""
    true = np.einsum("ij,ij->i", heads, tails)[:, None]
    scores = np.einsum("ij,ikj->ik", heads, corrupted)
    rank = 1 + (scores > true).sum(1) + 0.5 * (scores == true).sum(1)
    return float(np.mean(1.0 / rank))


def _initial(a: np.ndarray, dims: int, init: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if init == "pca":
        pca = PCA.fit(a, dims)
        w = np.zeros((a.shape[1], dims), np.float64)
        w[:, :pca.components.shape[0]] = pca.components.T
        return w, -(pca.mean.astype(np.float64) @ w)
    if init == "xavier":
        limit = np.sqrt(6.0 / (a.shape[1] + dims))
        return rng.uniform(-limit, limit, (a.shape[1], dims)), np.zeros(dims)
    raise InvalidArgument(f"init must be 'pca' or 'xavier', got {init!r}")


def _margin_step(a: np.ndarray, w: np.ndarray, b: np.ndarray, pairs: np.ndarray, neg: np.ndarray,
                 margin: float) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss and gradients of one batch. Every occurrence of a node (as head, tail or negative) is a
    separate term, so the gradient is a sum over occurrences and no de-duplication is needed."""
    bsz, k = neg.shape
    rows = np.concatenate([pairs[:, 0], pairs[:, 1], neg.ravel()])
    x = a[rows].astype(np.float64)
    z = x @ w + b
    norm = np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
    u = z / norm
    uh, ut, un = u[:bsz], u[bsz:2 * bsz], u[2 * bsz:].reshape(bsz, k, -1)
    s_pos = np.einsum("ij,ij->i", uh, ut)
    s_neg = np.einsum("ij,ikj->ik", uh, un)
    hinge = margin - s_pos[:, None] + s_neg
    active = (hinge > 0).astype(np.float64) / (bsz * k)
    d_pos = -active.sum(axis=1)
    du = np.empty_like(u)
    du[:bsz] = d_pos[:, None] * ut + np.einsum("ik,ikj->ij", active, un)
    du[bsz:2 * bsz] = d_pos[:, None] * uh
    du[2 * bsz:] = (active[:, :, None] * uh[:, None, :]).reshape(bsz * k, -1)
    dz = (du - np.einsum("ij,ij->i", du, u)[:, None] * u) / norm  # through the L2 normalisation
    return float(np.maximum(hinge, 0).mean()), x.T @ dz, dz.sum(axis=0)


class _Adam:
    """Adam (Kingma & Ba 2015) over a tuple of arrays."""

    def __init__(self, lr: float, params: tuple[np.ndarray, ...], b1: float = 0.9, b2: float = 0.999) -> None:
        self.lr, self.b1, self.b2, self.t = lr, b1, b2, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, params: tuple[np.ndarray, ...], grads: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        self.t += 1
        out = []
        for i, (p, g) in enumerate(zip(params, grads)):
            self.m[i] = self.b1 * self.m[i] + (1 - self.b1) * g
            self.v[i] = self.b2 * self.v[i] + (1 - self.b2) * g * g
            m_hat = self.m[i] / (1 - self.b1 ** self.t)
            v_hat = self.v[i] / (1 - self.b2 ** self.t)
            out.append(p - self.lr * m_hat / (np.sqrt(v_hat) + 1e-8))
        return tuple(out)


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = _matrix(a, "first model's vectors"), _matrix(b, "second model's vectors")
    if len(x) != len(y):
        raise InvalidArgument(f"the two models' vectors need the same rows (nodes): {len(x)} vs {len(y)}")
    return x, y


def split_space(a: np.ndarray, b: np.ndarray, dims: int) -> np.ndarray:
    """Strategy 4 of spec/003 3.5: the first ``dims // 2`` coordinates of model A's vectors beside
    the first ``dims - dims // 2`` of model B's, each half unit-normalised so both weigh the same."""
    x, y = _pair(a, b)
    half = _dims(dims) // 2
    if half == 0:
        raise InvalidArgument("split needs dims >= 2")
    return unit_rows(np.hstack([truncate(x, half), truncate(y, dims - half)]))


@dataclass(frozen=True)
class WeightedBlend:
    """Strategy 5 of spec/003 3.5: ``normalize(alpha * PCA_A(a) + beta * PCA_B(b))`` with one PCA per
    model (the spec's best blend: alpha 0.7, beta 0.3). ``explained`` is the mean of the two PCAs'."""

    first: PCA
    second: PCA
    alpha: float = 0.7
    beta: float = 0.3

    @classmethod
    def fit(cls, a: np.ndarray, b: np.ndarray, dims: int, alpha: float = 0.7, beta: float = 0.3) -> WeightedBlend:
        x, y = _pair(a, b)
        return cls(PCA.fit(x, dims), PCA.fit(y, dims), float(alpha), float(beta))

    @property
    def explained(self) -> float:
        return (self.first.explained + self.second.explained) / 2

    def transform(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        x, y = _pair(a, b)
        return unit_rows(self.alpha * self.first.transform(x) + self.beta * self.second.transform(y))


@dataclass(frozen=True)
class ConcatPCA:
    """Strategy 6 of spec/003 3.5: PCA over ``[a; b]`` (each model's rows unit-normalised first, so
    neither dominates by scale): PCA chooses how much of each model to keep."""

    pca: PCA

    @classmethod
    def fit(cls, a: np.ndarray, b: np.ndarray, dims: int) -> ConcatPCA:
        return cls(PCA.fit(_joined(a, b), dims))

    @property
    def explained(self) -> float:
        return self.pca.explained

    def transform(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.pca.transform(_joined(a, b))


def _joined(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x, y = _pair(a, b)
    return np.hstack([unit_rows(x), unit_rows(y)])
