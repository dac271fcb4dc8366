"""Calibrated confidence: the probability that a proposed edge is true, fitted on the KG's own edges.

A predictor's score only ranks. To turn it into a probability, a share of the KG's edges is withheld
(``fraction``, at most ``max_edges``), the predictor is trained on the rest, and the nodes of the
withheld edges are asked for their best candidates exactly as a run asks (same filters, same relation
typing, ``per_node`` each). A candidate is a hit when it is a withheld edge. Platt scaling (Platt
1999, "Probabilistic outputs for support vector machines", with its smoothed targets) fits a
logistic regression on ``[score, log rank, log relation_p]`` to the hits.

The reported reliability table and expected calibration error (ECE, Naeini et al. 2015: the
count-weighted mean |observed - predicted| over 10 equal-width bins) are cross-fitted: the withheld
nodes are split in two halves, each half is scored by the calibrator fitted on the other, so no
candidate is scored by a calibrator that saw it. The calibrator applied to proposals is then fitted on
every candidate.

A hit means "this edge was in the KG": a true edge the KG simply lacks counts as a miss, so the
probabilities are a lower bound on precision, never an overstatement of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import InvalidArgument
from .base import Predictor
from .ranking import Candidate, Ranker
from .triples import LinkGraph, Triples

FRACTION = 0.1
MAX_EDGES = 2_000
MAX_NODES = 300
PER_NODE = 10
BINS = 10
RIDGE = 1.0  # on standardised features: negligible for 1,000 candidates, decisive for 50


@dataclass(frozen=True)
class ReliabilityBin:
    low: float
    high: float
    count: int
    predicted: float  # mean predicted probability in the bin
    observed: float  # share of hits in the bin


@dataclass(frozen=True)
class Calibration:
    """A fitted Platt calibrator and how well it was calibrated on withheld edges (cross-fitted)."""

    predictor: str
    coef: tuple[float, ...]  # intercept, score, log rank, log relation_p
    candidates: int
    hits: int
    withheld: int
    nodes: int
    ece: float
    brier: float
    bins: tuple[ReliabilityBin, ...]
    seconds: float
    ece_rank: float  # ECE of the same candidates' old confidence, 1/rank (the "before")
    bounds: tuple[float, float] = (0.0, 1.0)  # Platt's smoothed targets: no probability beyond them

    def probability(self, score: Sequence[float], rank: Sequence[int], relation_p: Sequence[float | None]) -> np.ndarray:
        """Calibrated probabilities, clipped to ``bounds``: a score past any seen in fitting (a
        run on the whole KG scores higher than one on 90% of it) is no surer than the surest hit."""
        return np.clip(_sigmoid(_design(score, rank, relation_p) @ np.asarray(self.coef)), *self.bounds)

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "bins": [asdict(b) for b in self.bins]}

    def table(self) -> str:
        """The reliability table as markdown (bins with candidates only)."""
        rows = ["| confidence | candidates | mean predicted | observed |", "|---|---|---|---|"]
        rows += [f"| {b.low:.1f}-{b.high:.1f} | {b.count} | {b.predicted:.3f} | {b.observed:.3f} |"
                 for b in self.bins if b.count]
        return "\n".join(rows)


def _design(score: Sequence[float], rank: Sequence[int], relation_p: Sequence[float | None]) -> np.ndarray:
    s = np.asarray(score, np.float64)
    r = np.log(np.asarray(rank, np.float64))
    p = np.array([1.0 if x is None else max(float(x), 1e-6) for x in relation_p])
    return np.column_stack([np.ones_like(s), s, r, np.log(p)])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


def targets(y: np.ndarray) -> tuple[float, float]:
    """Platt's smoothed targets (miss, hit): 1/(N- + 2) and (N+ + 1)/(N+ + 2)."""
    pos, neg = float(y.sum()), float(y.size - y.sum())
    return 1 / (neg + 2), (pos + 1) / (pos + 2)


def platt(x: np.ndarray, y: np.ndarray, iterations: int = 50) -> np.ndarray:
    """Logistic regression by damped Newton steps on Platt's smoothed targets ((N+ + 1)/(N+ + 2) for
    hits, 1/(N- + 2) for misses: a handful of candidates cannot drive a probability to 0 or 1), with an
    L2 penalty ``RIDGE`` on the standardised slopes (separable small samples stay finite); coefficients
    returned for the raw design."""
    miss, hit = targets(y)
    target = np.where(y > 0, hit, miss)
    mean, std = x[:, 1:].mean(axis=0), x[:, 1:].std(axis=0)
    std = np.where(std > 0, std, 1.0)
    z = np.column_stack([x[:, 0], (x[:, 1:] - mean) / std])
    penalty = np.full(z.shape[1], RIDGE)
    penalty[0] = 0.0  # the intercept is free: it carries the base rate
    w = np.zeros(z.shape[1])
    w[0] = np.log(target.mean() / (1 - target.mean()))
    for _ in range(iterations):
        p = _sigmoid(z @ w)
        grad = z.T @ (p - target) + penalty * w
        hess = (z.T * (p * (1 - p))) @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-4 and _loss(z, target, w - t * step, penalty) > _loss(z, target, w, penalty):
            t /= 2  # backtracking: a full Newton step can overshoot on nearly separable data
        w -= t * step
        if np.abs(t * step).max() < 1e-8:
            break
    coef = w.copy()  # undo the standardisation: w0 + sum w_i (x_i - m_i) / s_i
    coef[1:] = w[1:] / std
    coef[0] = w[0] - float((w[1:] * mean / std).sum())
    return coef


def _loss(z: np.ndarray, target: np.ndarray, w: np.ndarray, penalty: np.ndarray) -> float:
    p = np.clip(_sigmoid(z @ w), 1e-12, 1 - 1e-12)
    return float(-(target * np.log(p) + (1 - target) * np.log(1 - p)).sum() + 0.5 * (penalty * w * w).sum())


def reliability(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> tuple[float, float, tuple[ReliabilityBin, ...]]:
    """(ECE, Brier score, the table) of probabilities ``p`` against 0/1 outcomes ``y``."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    out, ece = [], 0.0
    for b in range(bins):
        sel = which == b
        count = int(sel.sum())
        pred = float(p[sel].mean()) if count else 0.0
        obs = float(y[sel].mean()) if count else 0.0
        ece += count * abs(pred - obs)
        out.append(ReliabilityBin(round(edges[b], 2), round(edges[b + 1], 2), count, round(pred, 4), round(obs, 4)))
    n = max(p.size, 1)
    return round(ece / n, 4), round(float(np.mean((p - y) ** 2)) if p.size else 0.0, 4), tuple(out)


def withhold(t: Triples, fraction: float, max_edges: int, seed: int) -> tuple[Triples, Triples]:
    """(kept, withheld): a seeded random ``fraction`` of the edges (at most ``max_edges``) withheld."""
    m = min(max_edges, round(len(t) * fraction))
    if m < 1 or len(t) - m < 1:
        raise InvalidArgument(f"the KG has {len(t)} edges: too few to withhold any for calibration")
    rows = np.random.default_rng(seed).permutation(len(t))
    return t.subset(np.sort(rows[m:])), t.subset(np.sort(rows[:m]))


def calibrate(graph: LinkGraph, fit: Callable[[LinkGraph], Predictor], fraction: float = FRACTION,
              max_edges: int = MAX_EDGES, max_nodes: int = MAX_NODES, per_node: int = PER_NODE,
              seed: int = 0) -> Calibration:
    """Withhold edges of ``graph``, train ``fit`` on the rest, rank the withheld nodes' candidates and
    fit Platt scaling to which of them were withheld edges."""
    t0 = time.perf_counter()
    kept, held = withhold(graph.triples, fraction, max_edges, seed)
    train = LinkGraph(kept, graph.node_types, graph.type_names, graph.vectors)
    model = fit(train)
    nodes = np.unique(np.concatenate([held.head, held.tail]))
    rng = np.random.default_rng(seed)
    if nodes.size > max_nodes:
        nodes = np.sort(rng.choice(nodes, max_nodes, replace=False))
    x, y, group = _candidates(Ranker(train), model, nodes, held, per_node)
    if y.size == 0:
        raise InvalidArgument("no candidate edges to calibrate on: the withheld nodes have no scored candidates")
    half = rng.permutation(nodes.size)[: nodes.size // 2]
    first = np.isin(group, nodes[half])
    p = np.empty(y.size)
    for test in (first, ~first):  # cross-fitting: each half scored by the other half's calibrator
        fitted_on = ~test if (~test).any() else test
        p[test] = np.clip(_sigmoid(x[test] @ platt(x[fitted_on], y[fitted_on])), *targets(y[fitted_on]))
    ece, brier, bins = reliability(p, y)
    before, _, _ = reliability(np.exp(-x[:, 2]), y)  # x[:, 2] is log rank
    return Calibration(model.name, tuple(round(float(c), 6) for c in platt(x, y)), int(y.size), int(y.sum()),
                       len(held), int(nodes.size), ece, brier, bins, round(time.perf_counter() - t0, 2), before,
                       (round(targets(y)[0], 6), round(targets(y)[1], 6)))


def _candidates(ranker: Ranker, model: Predictor, nodes: np.ndarray, held: Triples,
                per_node: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Design rows, hit labels and the asking node of every candidate of ``nodes``."""
    truth = set(zip(held.head.tolist(), held.relation.tolist(), held.tail.tolist()))
    rels = np.arange(held.n_relations, dtype=np.int64)
    found: list[Candidate] = []
    group: list[int] = []
    for node in nodes.tolist():
        cands, _ = ranker.rank(model, node, rels, ("tail", "head"), per_node)
        found += cands
        group += [node] * len(cands)
    x = _design([c.score for c in found], [c.rank for c in found], [c.scores.get("relation_p") for c in found])
    y = np.array([(c.head, c.relation, c.tail) in truth for c in found], np.float64)
    return x, y, np.array(group, np.int64)
