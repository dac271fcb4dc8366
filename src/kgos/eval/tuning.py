"""Weight tuning with k-fold cross-validation (``kgos tune``).

Each probe's four signals are computed once, over the union of every signal's top candidates; any
weight vector is then scored on all probes with one small matrix product per probe. Weights are
chosen on the training folds only and the gain is reported on the held-out folds only: a gain
that was not measured on held-out probes is never claimed. (The tuner ranks by the weighted sum;
the +5% community-diversity rerank is not simulated.)
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgument, KGOSError
from ..retrieval import hybrid
from ..retrieval import intents as I
from .probes import Probe, load_probes

if TYPE_CHECKING:
    from ..kg import KG

MIN_INTENT_PROBES = 30  # an intent gets its own weights only with this many training probes


@dataclass(frozen=True)
class ProbeSignals:
    intent: str
    signals: np.ndarray  # (candidates, 4): embedding, text, graph, intent
    relevant: np.ndarray  # (candidates,) bool
    default: np.ndarray  # (4,) the weights search uses today for this probe


@dataclass(frozen=True)
class TuneReport:
    n: int
    folds: int
    heldout_default_mrr: float
    heldout_tuned_mrr: float
    fold_gains: tuple[float, ...]
    weights: dict[str, tuple[float, float, float, float]]  # fitted on all probes: "_default" and per intent
    has_vectors: bool
    fitted_on: str | None = None  # the vector model of the snapshot (None: no vectors); saved with the weights

    @property
    def scope(self) -> str:
        """When search will use these weights once saved: only while the KG's vectors are the same."""
        return (f"used while this KG's vectors are {self.fitted_on}'s" if self.fitted_on else
                "fitted without vectors: used only while this KG has none (ignored after `kgos embed`)")

    @property
    def gain(self) -> float:
        return self.heldout_tuned_mrr - self.heldout_default_mrr

    @property
    def worth_saving(self) -> bool:
        """Only a positive held-out gain in most folds justifies replacing the profiles."""
        return self.gain > 0 and sum(g > 0 for g in self.fold_gains) > len(self.fold_gains) / 2

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(gain=self.gain, worth_saving=self.worth_saving, scope=self.scope)
        return d


def simplex(step: float = 0.1, delta: bool = True) -> np.ndarray:
    """Every (alpha, beta, gamma, delta) on a grid of ``step`` that sums to 1."""
    if not 0.01 <= step <= 0.5:
        raise InvalidArgument("step must be between 0.01 and 0.5")
    n = int(round(1 / step))
    dims = 4 if delta else 3
    rows = [c for c in itertools.product(range(n + 1), repeat=dims - 1) if sum(c) <= n]
    grid = np.array([(*c, n - sum(c)) for c in rows], dtype=np.float64) / n
    return grid if delta else np.hstack([grid, np.zeros((len(grid), 1))])


def collect(kg: Any, probes: Sequence[Probe], depth: int = 100) -> list[ProbeSignals]:
    """The signals of every probe over its candidate set, from the KG's own engine."""
    engine = kg.engine
    snap = engine.snapshot()
    options = engine.options
    out = []
    for p in probes:
        intent = I.classify(p.query)
        qv = engine.embed_query(p.query) if snap.vectors is not None else None
        sig = hybrid.compute_signals(snap, kg.store, p.query, intent.name, qv, options)
        emb = sig.embedding if sig.embedding is not None else np.zeros(snap.n, np.float32)
        columns = (emb, sig.text, sig.graph, sig.intent)
        cand = np.unique(np.concatenate([hybrid.top_indices(x, depth) for x in columns]))
        rel = np.isin(cand, [snap.index[r] for r in p.relevant if r in snap.index])
        w = hybrid.effective_weights(hybrid.choose_weights(None, intent, "hybrid", options), sig)
        out.append(ProbeSignals(intent.name, np.stack([c[cand] for c in columns], 1).astype(np.float64), rel,
                                np.array(w.as_tuple())))
    return out


def mrr(data: Sequence[ProbeSignals], weights: np.ndarray) -> np.ndarray:
    """MRR@10 of each weight row (W, 4) on each probe: a (W, P) matrix."""
    out = np.zeros((len(weights), len(data)))
    for j, p in enumerate(data):
        if not p.relevant.any():
            continue
        totals = p.signals @ weights.T  # (C, W)
        best = totals[p.relevant].max(axis=0)
        # ties with the best answer count half (the expected rank); a zero score is not retrieved
        ties = ((totals == best) & ~p.relevant[:, None]).sum(axis=0)
        rank = 1 + (totals > best).sum(axis=0) + ties / 2
        out[:, j] = np.where((rank <= 10) & (best > 0), 1.0 / rank, 0.0)
    return out


def _default_mrr(data: Sequence[ProbeSignals]) -> np.ndarray:
    return np.array([mrr([p], p.default[None, :])[0, 0] for p in data])


def fit(data: Sequence[ProbeSignals], grid: np.ndarray) -> dict[str, np.ndarray]:
    """Best grid weights overall (``_default``) and per intent with enough probes."""
    scores = mrr(data, grid)
    fitted = {"_default": grid[int(np.argmax(scores.mean(axis=1)))]}
    intents = np.array([p.intent for p in data])
    for name in sorted(set(intents)):
        cols = intents == name
        if cols.sum() >= MIN_INTENT_PROBES:
            fitted[name] = grid[int(np.argmax(scores[:, cols].mean(axis=1)))]
    return fitted


def _apply(data: Sequence[ProbeSignals], fitted: dict[str, np.ndarray]) -> np.ndarray:
    return np.array([mrr([p], fitted.get(p.intent, fitted["_default"])[None, :])[0, 0] for p in data])


def tune(kg: KG, probes: Sequence[Probe] | str | Path, folds: int = 5, step: float = 0.1, seed: int = 13,
         depth: int = 100, *, save: bool = False, force: bool = False) -> TuneReport:
    """k-fold cross-validated weight search (see the module docstring) on ``probes`` (a list of
    Probe, or a probe file); ``save`` stores the fitted profiles for this KG only when their
    held-out gain is real (or ``force``)."""
    if not isinstance(probes, Sequence) or isinstance(probes, str):
        probes = load_probes(probes)
    report = _cross_validate(kg, probes, folds, step, seed, depth)
    if save:
        if not (report.worth_saving or force):
            raise KGOSError(f"not saved: held-out MRR@10 gain is {report.gain:+.4f} "
                            "(no gain measured on held-out folds); use --force to save anyway")
        kg.save_weight_profiles(report.weights)
    return report


def _cross_validate(kg: KG, probes: Sequence[Probe], folds: int, step: float, seed: int,
                    depth: int) -> TuneReport:
    if folds < 2 or folds > len(probes):
        raise InvalidArgument(f"folds must be between 2 and the number of probes ({len(probes)})")
    data = collect(kg, probes, depth)
    snap = kg.engine.snapshot()
    has_vectors = snap.vectors is not None
    grid = simplex(step)
    if not has_vectors:
        grid = grid[grid[:, 0] == 0]  # no embedding signal to weigh
    order = list(range(len(data)))
    random.Random(seed).shuffle(order)
    base, tuned, gains = [], [], []
    for f in range(folds):
        held = set(order[f::folds])
        train = [d for i, d in enumerate(data) if i not in held]
        test = [d for i, d in enumerate(data) if i in held]
        b, t = _default_mrr(test), _apply(test, fit(train, grid))
        base.append(b)
        tuned.append(t)
        gains.append(float(t.mean() - b.mean()))
    fitted = {k: tuple(round(float(x), 4) for x in v) for k, v in fit(data, grid).items()}
    return TuneReport(n=len(data), folds=folds, heldout_default_mrr=float(np.concatenate(base).mean()),
                      heldout_tuned_mrr=float(np.concatenate(tuned).mean()), fold_gains=tuple(gains),
                      weights=fitted, has_vectors=has_vectors, fitted_on=snap.embedder)  # type: ignore[arg-type]
