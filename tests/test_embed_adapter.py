"""The KG-adapted query adapter (issue 13, lever 1): InfoNCE on the KG's own pairs, stored in the KG,
applied to query vectors by search, removable; a KG that cannot teach one is left unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import sparse

import kgos
from kgos.cli import cli
from kgos.embed import adapter as A
from kgos.embed import get_embedder
from kgos.errors import AdapterNeedsData, InvalidArgument
from kgos.index.nearest import single_thread_blas

WORDS = ["apple", "river", "stone", "cloud", "maple", "tiger", "piano", "lemon", "ocean", "candle", "forest",
         "mirror", "rocket", "violet", "garden", "silver", "thunder", "window", "pepper", "harbor", "castle",
         "meadow", "falcon", "copper"]


def _kg(ws: kgos.Workspace, n: int = len(WORDS), edges: bool = True, descriptions: bool = True) -> kgos.KG:
    g = ws.create("a")
    for i, w in enumerate(WORDS[:n]):
        g.add_node(f"{w} unit", "thing", f"A {w} unit: {WORDS[(i + 3) % len(WORDS)]} and more." if descriptions else "",
                   id=f"n{i}")
    for i in range(n - 1 if edges else 0):
        g.add_edge(f"n{i}", f"n{i + 1}", "relates_to")
    g.embed("hash")
    return g


def _loss(w, q, c, rows, columns, tau, weights=None):
    u = q @ w.T
    qn = u / np.linalg.norm(u, axis=1, keepdims=True)
    masked = (columns[None, :] == rows[:, None]) | (columns[None, :] < 0)
    masked[np.arange(len(rows)), np.arange(len(rows))] = False
    logits = np.where(masked, -np.inf, qn @ c.T / tau)
    logits -= logits.max(axis=1, keepdims=True)
    weights = np.ones(len(rows)) if weights is None else weights
    return -np.mean(weights * (np.diag(logits) - np.log(np.exp(logits).sum(axis=1))))


def test_infonce_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(1)
    q = rng.normal(size=(5, 6))
    rows = np.array([0, 1, 2, 2, 3])
    columns = np.array([0, 1, 2, 2, 3, 4, -1, 0])  # batch targets, then neighbours (one missing, one own)
    c = rng.normal(size=(len(columns), 6))
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    w = np.eye(6) + 0.1 * rng.normal(size=(6, 6))
    grad = A.infonce_grad(w, q, c, rows, columns, 0.1)
    numeric = np.zeros_like(w)
    for i in range(6):
        for j in range(6):
            d = np.zeros_like(w)
            d[i, j] = 1e-6
            numeric[i, j] = (_loss(w + d, q, c, rows, columns, 0.1) - _loss(w - d, q, c, rows, columns, 0.1)) / 2e-6
    assert np.allclose(grad, numeric, atol=1e-5)


def test_fit_learns_a_distortion_between_queries_and_nodes() -> None:
    """Pseudo-queries that are a fixed linear distortion of their node's vector: the identity ranks
    them poorly, the fitted adapter undoes it on held-out nodes."""
    rng = np.random.default_rng(0)
    n, dims = 400, 16
    targets = rng.normal(size=(n, dims)).astype(np.float32)
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    distort = (np.eye(dims) + 1.5 * rng.normal(size=(dims, dims)) / np.sqrt(dims)).astype(np.float32)
    owner = np.arange(n)
    queries = targets @ distort.T + 0.05 * rng.normal(size=(n, dims)).astype(np.float32)
    ring = sparse.csr_matrix((np.ones(n), (owner, (owner + 1) % n)), shape=(n, n))
    train, val = A._split(owner, 0)
    config = A.AdapterConfig(lr=3e-3, reg=0.0, epochs=25, patience=5, batch=64)
    with single_thread_blas():
        _, _, before, after = A.fit(queries, targets, owner, ring + ring.T, train, val, config)
    assert before < 0.4 and after > before + 0.3


def test_weighted_infonce_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(2)
    q, rows, columns = rng.normal(size=(4, 5)), np.array([0, 1, 2, 3]), np.array([0, 1, 2, 3, 1, -1])
    c = rng.normal(size=(len(columns), 5))
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    w, weights = np.eye(5) + 0.1 * rng.normal(size=(5, 5)), np.array([1.0, 3.0, 0.5, 1.0])
    grad = A.infonce_grad(w, q, c, rows, columns, 0.2, weights)
    numeric = np.zeros_like(w)
    for i in range(5):
        for j in range(5):
            d = np.zeros_like(w)
            d[i, j] = 1e-6
            numeric[i, j] = (_loss(w + d, q, c, rows, columns, 0.2, weights)
                             - _loss(w - d, q, c, rows, columns, 0.2, weights)) / 2e-6
    assert np.allclose(grad, numeric, atol=1e-5)
    assert not np.allclose(grad, A.infonce_grad(w, q, c, rows, columns, 0.2))


def test_description_sentences_are_the_usable_query_sized_ones() -> None:
    text = "list directory contents. List information about the FILEs.\nOk. " + "word " * 50
    assert A.description_sentences(text) == ["list directory contents", "List information about the FILEs"]
    rng = np.random.default_rng(0)
    assert A.pick_sentence(text, "first", rng) == "list directory contents"
    assert {A.pick_sentence(text, "random", rng) for _ in range(20)} == set(A.description_sentences(text))
    assert A.pick_sentence("Too short.", "first", rng) == ""


@pytest.mark.parametrize("curriculum, per_node", [("names", 1), ("names+sentences", 2)])
def test_adapt_kg_trains_and_saves_only_a_winner(ws: kgos.Workspace, curriculum, per_node) -> None:
    kg = _kg(ws)
    r = A.adapt_kg(kg.store, ws.cache_dir, A.AdapterConfig(curriculum=curriculum))
    assert r.model == "hash-512" and r.pairs + r.held_out == per_node * len(WORDS) and r.held_out >= 2
    stored = A.load_adapter(kg.store.meta(), "hash-512")
    assert (stored is not None) == r.saved == (r.val_mrr_after > r.val_mrr_before)


def test_search_applies_the_stored_adapter_of_its_model_and_drop_removes_it(ws: kgos.Workspace) -> None:
    kg = _kg(ws)
    raw = get_embedder("hash").embed_query("apple unit")
    w = np.roll(np.eye(512, dtype=np.float32), 1, axis=0)  # a permutation: easy to recognise
    kg.store.set_meta(**{A.meta_key("hash-512"): A._encode(w, "hash-512", 1, 0.5)})
    assert np.allclose(kg.engine.embed_query("apple unit"), np.roll(raw, 1))
    kg.store.set_meta(**{A.meta_key("hash-64"): A._encode(np.zeros((64, 64), np.float32), "hash-64", 1, 0.5)})
    assert np.allclose(kg.engine.embed_query("apple unit"), np.roll(raw, 1))  # other models' adapters: unused
    assert A.drop_kg_adapter(kg.store) is True
    assert np.allclose(kg.engine.embed_query("apple unit"), raw)
    assert A.drop_kg_adapter(kg.store) is False


@pytest.mark.parametrize("shape, match", [({"n": 3}, "at least 20"), ({"edges": False}, "no edges"),
                                          ({"descriptions": False}, "at least 20")])
def test_a_kg_that_cannot_teach_an_adapter_is_left_unchanged(ws: kgos.Workspace, shape, match) -> None:
    kg = _kg(ws, **shape)
    before = (kg.store.version(), kg.store.meta())
    with pytest.raises(AdapterNeedsData, match=match):
        A.adapt_kg(kg.store, ws.cache_dir)
    assert (kg.store.version(), kg.store.meta()) == before


def test_an_unknown_curriculum_is_refused(ws: kgos.Workspace) -> None:
    kg = _kg(ws)
    with pytest.raises(InvalidArgument, match="names\\+sentences"):
        A.adapt_kg(kg.store, ws.cache_dir, A.AdapterConfig(curriculum="labels"))


def test_a_kg_without_vectors_says_to_embed_first(ws: kgos.Workspace) -> None:
    g = ws.create("plain")
    g.add_node("x", "t", "d")
    with pytest.raises(AdapterNeedsData, match="kgos embed plain"):
        A.adapt_kg(g.store, ws.cache_dir)


def test_cli_adapt_flag_and_drop(tmp_path) -> None:
    home = tmp_path / "home"
    w = kgos.Workspace(home)
    _kg(w)
    small = w.create("small")
    small.add_node("x", "t", "d")
    small.embed("hash")
    w.close()
    runner = CliRunner()
    done = runner.invoke(cli, ["--home", str(home), "embed", "a", "--adapt", "--json"])
    assert done.exit_code == 0, done.output
    assert '"val_mrr_before"' in done.output
    bad = runner.invoke(cli, ["--home", str(home), "embed", "small", "--adapt"])
    assert bad.exit_code != 0 and "at least 20" in bad.output and "Traceback" not in bad.output
    dropped = runner.invoke(cli, ["--home", str(home), "embed", "a", "--drop-adapter"])
    assert dropped.exit_code == 0 and "query adapter" in dropped.output
