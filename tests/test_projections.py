"""The six projections of spec/003 3.5 and the metrics of its 3.6 benchmark, on arrays with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from kgos.embed.bench import edge_mrr, split_edges, type_similarity
from kgos.embed.projections import (
    PCA,
    ConcatPCA,
    LearnedLinear,
    WeightedBlend,
    _margin_step,
    split_space,
    truncate,
    unit_rows,
)
from kgos.errors import InvalidArgument


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def unit(shape: tuple[int, int], seed: int = 0) -> np.ndarray:
    return unit_rows(rng(seed).normal(size=shape))


def test_truncate_keeps_the_first_coordinates_normalised_and_pads_short_vectors():
    x = np.array([[3.0, 4.0, 100.0], [0.0, 0.0, 5.0]])
    y = truncate(x, 2)
    assert np.allclose(y, [[0.6, 0.8], [0.0, 0.0]])  # the zero row stays zero
    assert truncate(x, 5).shape == (2, 5) and np.allclose(truncate(x, 5)[:, 3:], 0)


def test_pca_matches_the_covariance_eigenvectors_and_reports_the_explained_variance():
    x = rng().normal(size=(500, 6)) * np.array([10.0, 5.0, 1.0, 0.5, 0.1, 0.1])
    pca = PCA.fit(x, 2)
    centred = x - x.mean(0)
    values, vectors = np.linalg.eigh(np.cov(centred.T))
    top = vectors[:, ::-1][:, :2]
    assert np.allclose(np.abs(pca.components @ top), np.eye(2), atol=1e-4)  # same axes up to sign
    assert pca.explained == pytest.approx(values[::-1][:2].sum() / values.sum(), rel=1e-4)
    y = pca.transform(x)
    assert y.shape == (500, 2) and np.allclose(np.linalg.norm(y, axis=1), 1, atol=1e-5)


def test_pca_with_fewer_samples_than_dims_pads_with_zero_columns():
    x = unit((5, 40))
    pca = PCA.fit(x, 54)  # spec/003 3.5's edge case: n < 54
    y = pca.transform(x)
    assert y.shape == (5, 54) and pca.components.shape[0] <= 4  # 5 centred samples span 4 dims
    assert np.allclose(y[:, 4:], 0) and pca.explained == pytest.approx(1.0)


def test_pca_refuses_vectors_of_another_width():
    with pytest.raises(InvalidArgument, match="fitted on 8-d"):
        PCA.fit(unit((20, 8)), 4).transform(unit((3, 9)))


def test_the_margin_loss_gradient_matches_finite_differences():
    a = rng(1).normal(size=(30, 6))
    w, b = rng(2).normal(size=(6, 3)), rng(3).normal(size=3)
    pairs, neg = rng(4).integers(0, 30, (5, 2)), rng(5).integers(0, 30, (5, 4))
    _, gw, gb = _margin_step(a, w, b, pairs, neg, 0.5)
    eps = 1e-6

    def numeric(param: np.ndarray, setter) -> np.ndarray:
        out = np.zeros_like(param)
        for idx in np.ndindex(param.shape):
            up, down = param.copy(), param.copy()
            up[idx] += eps
            down[idx] -= eps
            out[idx] = (setter(up) - setter(down)) / (2 * eps)
        return out

    assert np.allclose(gw, numeric(w, lambda p: _margin_step(a, p, b, pairs, neg, 0.5)[0]), atol=1e-6)
    assert np.allclose(gb, numeric(b, lambda p: _margin_step(a, w, p, pairs, neg, 0.5)[0]), atol=1e-6)


def clustered(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes in 10 clusters whose signal lives in 4 of 64 coordinates, drowned by noise in the rest;
    edges join nodes of one cluster."""
    r = rng(seed)
    label = r.integers(0, 10, n)
    centers = r.normal(size=(10, 4)) * 3
    x = np.hstack([centers[label] + r.normal(size=(n, 4)), r.normal(size=(n, 60)) * 2])
    heads = r.integers(0, n, 4 * n)
    tails = np.array([r.choice(np.flatnonzero((label == label[h]) & (np.arange(n) != h))) for h in heads])
    return x.astype(np.float32), np.stack([heads, tails], 1), label


def test_learned_linear_training_lowers_the_loss_and_ranks_held_out_edges_better():
    x, edges, _ = clustered()
    train, test = split_edges(edges, 0.25, seed=0)
    before = edge_mrr(unit_rows(x), test, negatives=20)
    learned = LearnedLinear.fit(x, train, 8, epochs=15, lr=0.01, init="xavier", validation=0, seed=0)
    assert learned.losses[-1] < 0.5 * learned.losses[0]
    assert edge_mrr(learned.transform(x), test, negatives=20) > before + 0.2  # it found the 4 signal coordinates
    assert learned.transform(x).shape == (300, 8)


def test_learned_linear_starting_from_pca_starts_exactly_at_the_pca_projection():
    x, edges, _ = clustered()
    at_start = LearnedLinear.fit(x, edges, 8, epochs=0)
    assert np.allclose(at_start.transform(x), PCA.fit(x, 8).transform(x), atol=1e-5)


def test_learned_linear_keeps_the_starting_point_when_training_only_hurts_held_out_edges():
    x, edges, _ = clustered()
    wrecked = LearnedLinear.fit(x, edges, 8, epochs=3, lr=5.0, seed=0)  # a step size that destroys the fit
    assert wrecked.best_epoch == 0 and len(wrecked.losses) == 3
    assert np.allclose(wrecked.transform(x), PCA.fit(x, 8).transform(x), atol=1e-5)
    tuned = LearnedLinear.fit(x, edges, 8, epochs=5, lr=0.01, seed=0)
    assert tuned.best_epoch > 0  # a sane step size improves on PCA


def test_learned_linear_rejects_edges_outside_the_rows():
    with pytest.raises(InvalidArgument, match="row numbers"):
        LearnedLinear.fit(unit((10, 4)), np.array([[0, 10]]), 2)


def test_split_space_gives_each_model_half_the_dimensions_at_equal_weight():
    a, b = unit((50, 384), 1), unit((50, 768), 2)
    y = split_space(a, b, 54)
    assert y.shape == (50, 54)
    assert np.allclose(np.linalg.norm(y[:, :27], axis=1), np.sqrt(0.5), atol=1e-5)
    assert np.allclose(y[:, :27] * np.sqrt(2), truncate(a, 27), atol=1e-5)


def test_weighted_blend_is_the_weighted_sum_of_the_two_pcas():
    a, b = unit((80, 30), 1), unit((80, 20), 2)
    blend = WeightedBlend.fit(a, b, 6, alpha=0.7, beta=0.3)
    expect = unit_rows(0.7 * PCA.fit(a, 6).transform(a) + 0.3 * PCA.fit(b, 6).transform(b))
    assert np.allclose(blend.transform(a, b), expect, atol=1e-5)
    assert blend.explained == pytest.approx((PCA.fit(a, 6).explained + PCA.fit(b, 6).explained) / 2)
    only_a = WeightedBlend.fit(a, b, 6, alpha=1.0, beta=0.0).transform(a, b)
    assert np.allclose(only_a, PCA.fit(a, 6).transform(a), atol=1e-5)


def test_concat_pca_chooses_the_model_that_carries_the_variance():
    a = rng(1).normal(size=(200, 10)) * np.array([5.0] + [0.01] * 9)  # one strong axis
    b = rng(2).normal(size=(200, 10)) * 0.01  # noise only
    concat = ConcatPCA.fit(a, b, 1)
    assert np.abs(concat.pca.components[0, :10]).sum() > 0.9  # the component lies in a's half
    assert concat.transform(a, b).shape == (200, 1)


def test_hybrids_need_the_same_rows():
    with pytest.raises(InvalidArgument, match="same rows"):
        split_space(unit((5, 8)), unit((6, 8)), 4)


def test_type_similarity_is_the_mean_cosine_over_same_and_different_type_pairs():
    y = unit((40, 5), 3)
    types = rng(4).integers(0, 3, 40)
    sims = y @ y.T
    same = types[:, None] == types[None, :]
    off = ~np.eye(40, dtype=bool)
    intra, inter = type_similarity(y, types)
    assert intra == pytest.approx(sims[same & off].mean(), abs=1e-6)
    assert inter == pytest.approx(sims[~same].mean(), abs=1e-6)


def test_edge_mrr_is_one_when_true_tails_win_and_counts_ties_half():
    y = np.eye(4, dtype=np.float32)
    y[1] = y[0]  # 0 -> 1 identical: cosine 1, every corrupted tail scores 0
    assert edge_mrr(y, np.array([[0, 1]]), negatives=5) == 1.0
    flat = np.ones((4, 2), np.float32)  # all tie: rank 1 + negatives / 2
    assert edge_mrr(flat, np.array([[0, 1]]), negatives=4) == pytest.approx(1 / 3)
    y[3] = y[0]  # node 3 beats nothing but ties the true tail: half a rank down
    assert edge_mrr(y[[0, 1, 3]], np.array([[0, 1]]), negatives=1) == pytest.approx(1 / 1.5)


def test_edge_mrr_never_draws_the_head_or_the_true_tail_as_a_negative():
    y = np.eye(5, dtype=np.float32)
    y[2] = y[0]  # the head and the true tail are the only rows that score against the head
    assert edge_mrr(y, np.array([[0, 2]]), negatives=200) == 1.0
    assert edge_mrr(y, np.array([[2, 0]]), negatives=200) == 1.0
