"""Weight tuning: grid, ranking arithmetic, held-out reporting, and saving only measured gains."""

from __future__ import annotations

import numpy as np
import pytest

from kgos.errors import InvalidArgument, KGOSError
from kgos.eval.probes import Probe
from kgos.eval.tuning import ProbeSignals, mrr, simplex, tune


def test_simplex_grid_sums_to_one():
    grid = simplex(0.25)
    assert len(grid) == 35 and np.allclose(grid.sum(axis=1), 1.0) and (grid >= 0).all()
    assert (simplex(0.5, delta=False)[:, 3] == 0).all()
    with pytest.raises(InvalidArgument):
        simplex(0.0)


def test_mrr_ranks_ties_and_zero_scores():
    # candidate 0 is the answer; text puts it first, embedding puts it third
    p = ProbeSignals("goal_based", np.array([[0.2, 1.0, 0, 0], [1.0, 0.1, 0, 0], [0.5, 0.0, 0, 0]]),
                     np.array([True, False, False]), np.array([0.5, 0.5, 0, 0]))
    w = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0]], dtype=float)
    assert mrr([p], w)[:, 0].tolist() == [1.0, pytest.approx(1 / 3), 0.0]  # all-zero scores: not retrieved
    tie = ProbeSignals("x", np.array([[1.0, 0, 0, 0], [1.0, 0, 0, 0]]), np.array([True, False]), np.zeros(4))
    assert mrr([tie], np.array([[1.0, 0, 0, 0]]))[0, 0] == pytest.approx(1 / 1.5)


@pytest.fixture
def kg(ws):
    g = ws.create("t")
    for i in range(12):
        g.add_node(f"Widget {i} alpha", "thing", f"Description number {i} of something blue.", id=f"w{i}")
    for i in range(11):
        g.add_edge(f"w{i}", f"w{i + 1}", "relates_to")
    return g


def probes() -> list[Probe]:
    return [Probe(id=str(i), query=f"widget {i}", relevant=frozenset({f"w{i}"}), lenient=frozenset())
            for i in range(12)]


def test_tune_reports_held_out_figures_and_fitted_weights(kg):
    report = tune(kg, probes(), folds=3, step=0.25)
    assert report.n == 12 and report.folds == 3 and len(report.fold_gains) == 3
    assert 0.0 <= report.heldout_default_mrr <= 1.0 and 0.0 <= report.heldout_tuned_mrr <= 1.0
    assert report.weights["_default"][0] == 0.0  # no vectors: alpha is not searched
    assert sum(report.weights["_default"]) == pytest.approx(1.0)
    with pytest.raises(InvalidArgument, match="folds"):
        tune(kg, probes(), folds=1)


def test_save_needs_a_measured_gain_or_force(kg):
    report = tune(kg, probes(), folds=3, step=0.25)
    if not report.worth_saving:
        with pytest.raises(KGOSError, match="not saved"):
            tune(kg, probes(), folds=3, step=0.25, save=True)
    tune(kg, probes(), folds=3, step=0.25, save=True, force=True)
    res = kg.search("widget 3")
    assert res.weights.source.startswith("tuned:")
    kg.save_weight_profiles(None)
    assert not kg.search("widget 3").weights.source.startswith("tuned")
